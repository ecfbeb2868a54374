"""The engine's threads: daemons named for Python and for the operating system.

Python's name (``memory-summary-compress-2``) is what ``threading``, logs, faulthandler
and py-spy show; ``ps -L``, ``top -H`` and ``/proc`` show the kernel's, at most 15
bytes, which Python before 3.14 leaves as the process's own. Every thread the engine
starts sets both, the kernel's as ``ms-compress-2`` (``os_name``); the architecture
page lists them all, and a test holds it to what the engine starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

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
