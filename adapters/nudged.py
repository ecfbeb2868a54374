"""A run on a thread of its own, each time someone asks for one (``Nudged``).

The SQLite store keeps two chores off the callers' threads this way: taking new
messages into its search index, and checkpointing its write-ahead log.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from memory_summary.domain import StoreError

__all__ = ["Nudged"]

log = logging.getLogger(__name__)


class Nudged:
    """Runs ``run`` on a thread of its own when nudged.

    At most one run is pending: nudges that arrive during a run make one more. The
    thread (Python's name ``memory-summary-<name>``, the kernel's ``ms-<name>``)
    starts at the first nudge and stops at ``close``. A failed run is logged (``what``
    says what failed, ``where`` of what) and left to the next nudge.
    """

    def __init__(
        self, run: Callable[[], object], where: str, *, name: str, what: str
    ) -> None:
        self._run = run
        self._where = where
        self._name = name
        self._what = what
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._closed = False
        self._thread: threading.Thread | None = None

    def nudge(self) -> None:
        """Ask for a run; never raises.

        Its callers have just written: an error here would report a stored write
        as failed. A thread that cannot start is logged; the next nudge tries again.
        """
        with self._lock:
            if self._closed:
                return
            self._idle.clear()
            self._wake.set()
            if self._thread is not None:
                return
            thread = threading.Thread(
                target=self._loop, name=f"memory-summary-{self._name}", daemon=True
            )
            try:
                thread.start()
            except RuntimeError as exc:  # "can't start new thread": out of threads
                log.warning("%s: %s postponed: %s", self._where, self._what, exc)
                self._wake.clear()
                self._idle.set()
                return
            self._thread = thread

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no run is pending or running; tell whether it got there."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 30.0) -> bool:
        """Stop the thread after its run; tell whether it ended within ``timeout``."""
        with self._lock:
            self._closed = True
            self._wake.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _loop(self) -> None:
        # ps -L's name for this thread, as actors/workers.py names the engine's own
        comm = f"/proc/self/task/{threading.get_native_id()}/comm"
        with contextlib.suppress(OSError), open(comm, "w") as file:
            file.write(f"ms-{self._name}"[:15])
        while True:
            self._wake.wait()
            with self._lock:
                if self._closed:
                    self._idle.set()
                    return
                self._wake.clear()
            try:
                self._run()
            except StoreError as exc:
                log.warning("%s: %s failed: %s", self._where, self._what, exc)
            except Exception:  # a bug: logged, and the next nudge tries again
                log.exception("%s: %s failed", self._where, self._what)
            with self._lock:
                if not self._wake.is_set():
                    self._idle.set()
