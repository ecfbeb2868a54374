"""The store contract suite as a pytest class: subclass it to check a store.

``InMemoryStore`` is the reference; the project's own stores (memory, SQLite,
PostgreSQL) run through this same class. A store written elsewhere proves it behaves
alike with one subclass that says how to build it::

    from memory_summary.testing.contract import StoreContract

    class TestRedisStore(StoreContract):
        def make_store(self, tmp_path):
            return RedisStore(url="redis://localhost:6379/15")

        def dispose_store(self, store):   # optional; the default calls close()
            store.flush_and_close()

The name of the subclass must start with ``Test`` for pytest to collect it. Each test
gets a fresh store from ``make_store`` and a session id of its own (``sid``); a store
that shares one database between tests must keep sessions of different ids apart,
which every store must do anyway.

What a store must offer is what ``SummaryEngine`` needs of it: the memory-store
methods (``save_message``, ``get_history``, ``get_full_history``, ``trim_history``,
the metadata methods, ``clear_session``, ``clear_all``) and the compression ones
(``count_history``, ``get_oldest_history``, ``get_archived``, ``commit_compaction``,
``forget_session``, ``quarantine_metadata`` and the leases). The optional batch save
(``save_messages``) is tested when the store has it and skipped otherwise. Needs
``pip install 'memory-summary[testing]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

from .extra import pytest  # first: a missing extra is named, before any use

# isort: split

from .archived_contract import ArchivedContract
from .batch_contract import BatchContract
from .content_contract import ContentContract
from .fencing_contract import FencingContract
from .history_contract import HistoryContract
from .hostile_contract import HostileContract
from .instruction_contract import InstructionContract
from .lease_contract import LeaseContract, poll_until_acquired

__all__ = ["StoreContract", "poll_until_acquired"]


class StoreContract(
    HistoryContract,
    ContentContract,
    ArchivedContract,
    FencingContract,
    LeaseContract,
    HostileContract,
    BatchContract,
    InstructionContract,
):
    """Every store test; a subclass provides ``make_store`` (and maybe more).

    Override ``make_store(tmp_path)`` to return a new, empty store; override
    ``dispose_store(store)`` when closing it takes more than its ``close()``; or
    override the ``store`` fixture itself to build it from fixtures of your own.
    """

    def make_store(self, tmp_path: Path) -> Any:
        """Return a new store to test; ``tmp_path`` is a directory of the test's own."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_store(self, tmp_path)"
        )

    def dispose_store(self, store: Any) -> None:
        """Release what ``make_store`` built: by default, call its ``close()``."""
        close = getattr(store, "close", None)
        if callable(close):
            close()

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[Any]:
        """A fresh store from ``make_store``, disposed of after the test."""
        made = self.make_store(tmp_path)
        try:
            yield made
        finally:
            self.dispose_store(made)

    @pytest.fixture
    def sid(self) -> str:
        """A session id of its own: a shared database may outlive a test run."""
        return f"s-{uuid4().hex[:8]}"
