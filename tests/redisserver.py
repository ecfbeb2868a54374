"""Throw-away Redis servers for the tests: never the one on 6379.

Each server is ``redis-server`` (Debian's package; ``.ci/run`` installs it) on a free
loopback port, with its data directory in a temporary folder. The store suite shares
one per test session (``shared_server``; every test uses a key prefix of its own);
the restart tests start their own with the persistence they test::

    with RedisServer(persistence="aof") as server:
        server.restart("kill")

Without ``redis-server`` (or the ``redis`` package) a test skips, and fails under
``CI=true``.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Literal

from tests.contract.stores import skip_or_fail
from tests.pgcluster import free_port

Persistence = Literal["none", "rdb", "aof"]
StopMode = Literal["save", "nosave", "kill"]
START_TIMEOUT_S = 30.0


def redis_server_binary() -> str:
    """Return the path of redis-server; skip (fail under CI) when it is missing."""
    try:
        import redis  # noqa: F401
    except ImportError:
        skip_or_fail(
            "the redis package is missing: pip install 'memory-summary[redis]'"
        )
    found = shutil.which("redis-server")
    if found is None:
        skip_or_fail(
            "redis-server is missing: apt-get install redis-server (.ci/run does)"
        )
    return found


class RedisServer:
    """One private redis-server: start, stop (save, nosave or SIGKILL), restart.

    Attributes:
        port: its loopback port (kept across restarts).
        url: the ``redis://`` URL of database 0.
    """

    def __init__(self, persistence: Persistence = "none") -> None:
        self.binary = redis_server_binary()
        self.persistence = persistence
        self.dir = Path(tempfile.mkdtemp(prefix="ms-redis-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _arguments(self) -> list[str]:
        persist = {
            "none": ["--save", "", "--appendonly", "no"],
            "rdb": ["--save", "3600 1", "--appendonly", "no"],
            "aof": ["--save", "", "--appendonly", "yes", "--appendfsync", "always"],
        }[self.persistence]
        return [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--daemonize",
            "no",
            "--logfile",
            str(self.dir / "server.log"),
            *persist,
        ]

    def start(self) -> RedisServer:
        import redis

        self.process = subprocess.Popen(
            self._arguments(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_S
        pause = threading.Event()  # never set: its wait() spaces the polls
        try:
            while True:
                try:
                    if client.ping():
                        return self
                except redis.BusyLoadingError:
                    pass  # still loading its data: ask again
                except redis.ConnectionError:
                    if self.process.poll() is not None:
                        raise RuntimeError(self._failure("exited")) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(self._failure("did not answer"))
                pause.wait(0.02)
        finally:
            client.close()

    def _failure(self, what: str) -> str:
        log = self.dir / "server.log"
        text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        return f"redis-server on port {self.port} {what}: {text}"

    def stop(self, mode: StopMode = "nosave") -> None:
        """Stop the server: SHUTDOWN SAVE, SHUTDOWN NOSAVE, or SIGKILL (a crash)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        if mode == "kill":
            process.send_signal(signal.SIGKILL)
        else:
            import redis

            client = redis.Redis(port=self.port, socket_timeout=10)
            try:
                client.shutdown(save=mode == "save", nosave=mode == "nosave")
            except redis.ConnectionError:
                pass  # it closed the connection as it went down
            finally:
                client.close()
        process.wait(timeout=30)

    def restart(self, mode: StopMode) -> None:
        self.stop(mode)
        self.start()

    def close(self) -> None:
        """Stop the server and delete its data directory."""
        self.stop("kill")
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_shared: RedisServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> RedisServer:
    """Return the test session's server (no persistence), starting it once."""
    global _shared
    with _shared_lock:
        if _shared is None:
            server = RedisServer("none").start()
            atexit.register(server.close)
            _shared = server
        return _shared


def close_shared_server() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None
