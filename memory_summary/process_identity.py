"""Who this process is, for leases and commits: owner ids and generations.

A lease owner is ``host:pid:pid-namespace:nonce``, so another process on the same
host (and PID namespace) can tell that a lease's holder no longer runs and break it
at once instead of waiting for it to expire. A generation names one committed
summary record: unique per process (a random nonce) and per commit (a counter).
"""

from __future__ import annotations

import itertools
import os
import socket
import uuid


def pid_namespace() -> str:
    """Return this process's PID namespace ("" where it cannot be told: not Linux)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


_PID_NAMESPACE = pid_namespace()


def owner_id() -> str:
    """Return a lease owner: ``host:pid:pid-namespace:nonce``."""
    return (
        f"{socket.gethostname()}:{os.getpid()}:{_PID_NAMESPACE}:{uuid.uuid4().hex[:8]}"
    )


def is_dead_owner(owner: str) -> bool:
    """Tell whether a lease owner is a process of this host that no longer runs.

    Owners are ``host:pid:pid-namespace:nonce``; only an owner of this host and PID
    namespace (containers sharing a host name have their own) is judged, and only
    where the namespace is known (Linux). A pid reused by another process reads as
    alive (the lease then simply expires); breaking a live lease is only wasteful,
    never unsafe: its holder's commits are fenced.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    namespace = rest.partition(":")[0]
    if (
        host != socket.gethostname()
        or not pid_text.isdigit()
        or not _PID_NAMESPACE
        or namespace != _PID_NAMESPACE
    ):
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but not ours to signal
        return False
    return False


_GENERATION_NONCE = uuid.uuid4().hex[:16]
_GENERATIONS = itertools.count(1)


def new_generation() -> str:
    """Return a fresh generation: unique per process (nonce) and commit (counter)."""
    return f"{_GENERATION_NONCE}{next(_GENERATIONS):x}"
