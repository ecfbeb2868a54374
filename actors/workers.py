"""Worker threads that never keep the host alive and never let a stuck task hold a slot.

``concurrent.futures.ThreadPoolExecutor`` joins its (non-daemon) threads at interpreter
exit, so one summarizer call that never returns would keep the host process from
exiting after ``stop()``. These workers are daemon threads; a growing pool also starts
a new thread when every thread is busy, so a call stuck past its deadline never delays
the calls of other sessions.

Every thread the engine starts comes from here, named for Python and for the operating
system. Python's name (``memory-summary-compress-2``) is what ``threading``, logs,
faulthandler and py-spy show; ``ps -L``, ``top -H`` and ``/proc`` show the kernel's, at
most 15 bytes, which Python before 3.14 leaves as the process's own. Every thread the
engine starts sets both, the kernel's as ``ms-compress-2`` (``os_name``); the
architecture page lists them all, and a test holds it to what the engine starts.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class ThreadStartError(RuntimeError):
    """A pool could not start the thread a task needed (``can't start new thread``).

    A ``RuntimeError``, as a shut-down pool's refusal is, but not a stop: the
    process ran out of threads (or memory), and the task's owner reports it as such.
    """


_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class WorkerPool:
    """Run tasks on daemon threads; ``size`` stay alive, a growing pool adds more.

    Args:
        name: the threads' name prefix.
        size: threads kept alive; a fixed pool runs at most ``size`` tasks at once.
        grow: start another thread when every thread is busy (extra ones exit after
            ``idle_s`` without work).
        idle_s: how long an extra thread waits for work before it exits.
    """

    def __init__(
        self, name: str, size: int, *, grow: bool = False, idle_s: float = 30.0
    ) -> None:
        self._name = name
        self._size = max(size, 1)
        self._grow = grow
        self._idle_s = idle_s
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._queued = 0
        self._closed = False
        self._running: set[Future[Any]] = set()

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` on a worker; return its future.

        Raises:
            ThreadStartError: a thread it needed did not start (``can't start new
                thread``): nothing was queued, and the pool is as it was.
            RuntimeError: the pool was shut down.
        """
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name}: the pool is shut down")
            if self._queued >= self._idle and (
                self._grow or self._threads < self._size
            ):
                self._threads += 1
                try:
                    daemon(self._work, f"{self._name}-{self._threads}").start()
                except Exception as exc:  # "can't start new thread": the pool as it was
                    self._threads -= 1
                    raise ThreadStartError(f"{self._name}: {exc}") from exc
                except BaseException:
                    self._threads -= 1
                    raise
            # queued after the start: a thread that failed to start leaves no task
            self._queued += 1
            self._tasks.put((future, fn, args))
        return future

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
                extra = self._threads > self._size
            try:
                task = self._tasks.get(timeout=self._idle_s if extra else None)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._threads > self._size and self._queued == 0:
                        self._threads -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
                if task is not None:
                    self._queued -= 1
                    if self._closed:  # taken as shutdown() began: cancelled
                        task[0].cancel()
                    else:  # seen by wait_running() from now on
                        self._running.add(task[0])
            if task is None:
                return
            future, fn, args = task
            if not future.set_running_or_notify_cancel():
                with self._lock:
                    self._running.discard(future)
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - the future carries it
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                with self._lock:
                    self._running.discard(future)

    def shutdown(self) -> None:
        """Refuse new tasks, cancel queued ones and let idle threads exit."""
        with self._lock:
            self._closed = True
            threads = self._threads
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
                with self._lock:
                    self._queued -= 1
        for _ in range(threads):
            self._tasks.put(None)

    def wait_running(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the tasks running now; True if all ended.

        After ``shutdown`` this is how an owner knows no task still uses what it is
        about to close (a store's connection, for one).
        """
        with self._lock:
            running = list(self._running)
        _, late = wait_futures(running, timeout=timeout)
        return not late


PREFIX = "memory-summary-"


def os_name(name: str) -> str:
    """Return the kernel's name for the thread Python calls ``name`` (15 bytes at most).

    >>> os_name("memory-summary-compress-2"), os_name("memory-summary-sqlite-index")
    ('ms-compress-2', 'ms-sqlite-index')
    """
    if name.startswith(PREFIX):
        name = "ms-" + name[len(PREFIX) :]
    return name.encode()[:15].decode(errors="ignore")


def name_this_thread(name: str) -> None:
    """Give the calling thread ``name`` in Python and (on Linux) in the kernel."""
    threading.current_thread().name = name
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
            comm.write(os_name(name))
    except OSError:  # not Linux, or /proc is not mounted: Python's name is enough
        pass


def daemon(target: Callable[[], None], name: str) -> threading.Thread:
    """Return a daemon thread (it never keeps the host alive) that names itself."""

    def run() -> None:
        name_this_thread(name)
        target()

    return threading.Thread(target=run, name=name, daemon=True)
