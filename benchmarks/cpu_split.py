"""Where the engine's CPU goes: exclusive thread CPU per component, host and background.

``ComponentClock`` wraps the functions that make up a turn and a compression
(counting, pins, validation, the summarizer, the store) so each call's thread CPU is
charged to its component, exclusive of the components it calls (counting inside pins
is counting). Whatever CPU no wrapper claimed is the engine's own work and the
hand-offs between threads (queues, futures, actors, events). ``SqlTrace`` counts the
SQL statements and transactions a SQLite store runs, on the host's thread, on its
indexing thread and in the engine's background. Measurement only: nothing here
changes what the engine does.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

COMPONENTS = ("counting", "pins", "validation", "summarizer", "store", "indexing")
"""``indexing``: a store's own search indexing (SQLite takes stored messages into
FTS5 on a thread of its own, by the batch), charged per compression like the rest."""
INDEX_THREAD = "memory-summary-sqlite-index"


class ComponentClock:
    """Charges thread CPU to components, exclusive of nested components."""

    def __init__(self, host: threading.Thread) -> None:
        self.host = host
        self.ns: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def wrap(self, component: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """Return ``function`` charging its exclusive CPU to ``component``."""
        clock, local = time.thread_time_ns, self._local

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = local.__dict__.setdefault("stack", [])
            stack.append(0)  # CPU of nested components, subtracted below
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                spent = clock() - start
                nested = stack.pop()
                if stack:
                    stack[-1] += spent
                where = "host" if threading.current_thread() is self.host else "bg"
                with self._lock:
                    self.ns[f"{where}.{component}"] += spent - nested
                    self.calls[f"{where}.{component}"] += 1

        return timed

    def patch(self, owner: Any, name: str, component: str) -> None:
        """Replace ``owner.name`` with its wrapped self until ``restore``."""
        original = getattr(owner, name)
        setattr(owner, name, self.wrap(component, original))
        self._undo.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


@contextmanager
def engine_components(clock: ComponentClock, store: Any) -> Iterator[None]:
    """Wrap the engine's components (module functions, the store's methods)."""
    from memory_summary.adapters import tokens
    from memory_summary.domain import compression_fold

    # counters are built before the run: wrap what they call, not the factory
    clock.patch(tokens.CountMemo, "__call__", "counting")
    clock.patch(tokens, "estimate_tokens", "counting")
    clock.patch(compression_fold, "with_pins", "pins")
    clock.patch(compression_fold, "check_summary", "validation")
    for name in (
        "get_history",
        "get_oldest_history",
        "count_history",
        "get_metadata",
        "read_window",
        "get_archived",
        "commit",
        "acquire_lease",
        "renew_lease",
        "release_lease",
        "save_metadata",
        "lease_owner",
    ):
        if hasattr(store, name):
            clock.patch(store, name, "store")
    index = getattr(store, "_index", None)
    if index is not None:  # SQLite: the batch on its own thread, or before a search
        clock.patch(index._indexer, "_run", "indexing")
        clock.patch(index, "catch_up", "indexing")
    try:
        yield
    finally:
        clock.restore()


class SqlTrace:
    """Counts the statements a SQLite store's connections run, per thread kind."""

    def __init__(self, host: threading.Thread) -> None:
        self.host = host
        self.statements: Counter[str] = Counter()
        self.transactions: Counter[str] = Counter()
        self._lock = threading.Lock()

    def attach(self, store: Any) -> None:
        """Trace every connection the store's driver opens from now on."""
        driver = store._driver
        connect = driver._connect

        def traced() -> sqlite3.Connection:
            conn: sqlite3.Connection = connect()
            self._trace(conn)
            return conn

        driver._connect = traced
        for conn in list(getattr(driver, "_all", ())):
            self._trace(conn)

    def _trace(self, conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(lambda statement: self._seen(statement, conn))

    def _seen(self, statement: str, conn: sqlite3.Connection) -> None:
        thread = threading.current_thread()
        where = (
            "host"
            if thread is self.host
            else "index"
            if thread.name == INDEX_THREAD
            else "bg"
        )
        head = statement.lstrip()[:6].upper()
        with self._lock:
            if head.startswith("BEGIN"):
                self.transactions[where] += 1
            elif head not in ("COMMIT", "ROLLBA", "PRAGMA"):
                self.statements[where] += 1
                if head in ("INSERT", "UPDATE", "DELETE") and not conn.in_transaction:
                    self.transactions[where] += 1  # a lone write commits by itself
