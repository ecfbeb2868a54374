"""A throw-away PostgreSQL cluster, for tests that restart or crash the server.

Never the shared server: ``initdb`` in a temporary directory, a free loopback port,
the Unix socket inside that directory, ``fsync`` off. The binaries come from
``$MEMORY_SUMMARY_PG_BINDIR``, ``/usr/lib/postgresql/<newest>/bin``, or ``PATH``.

PostgreSQL refuses to run as root. Under root the cluster runs as the ``postgres`` OS
user, in a directory made with ``tempfile`` and handed to that user: pytest's
``tmp_path`` sits under a directory only root may enter. Otherwise it uses
``tmp_path``. Use the ``pg_cluster`` fixture (import it into a test module)::

    from tests.pgcluster import pg_cluster  # noqa: F401

    def test_something(pg_cluster):
        pg_cluster.restart(mode="immediate")
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.stores import skip_or_fail

BINDIR_VARIABLE = "MEMORY_SUMMARY_PG_BINDIR"
SERVER_USER = "postgres"
START_TIMEOUT_S = 60


def find_bindir() -> Path | None:
    """Return the directory holding initdb and pg_ctl, or None."""
    configured = os.environ.get(BINDIR_VARIABLE)
    if configured:
        return Path(configured)
    installed = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: (
            int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0
        ),
    )
    if installed:
        return installed[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PgCluster:
    """One private PostgreSQL server: start, stop (fast or immediate), restart.

    Attributes:
        port: its loopback TCP port (kept across restarts).
        dsn: a libpq connection string for the ``postgres`` database.
    """

    def __init__(self, bindir: Path, base: Path, run_as: str | None) -> None:
        self.bindir = bindir
        self.base = base
        self.data = base / "data"
        self.log = base / "server.log"
        self.run_as = run_as
        self.port = free_port()

    @property
    def dsn(self) -> str:
        return (
            f"host=127.0.0.1 port={self.port} dbname=postgres user=postgres "
            "connect_timeout=5"
        )

    def _run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / tool), *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.base,
            user=self.run_as,
            env={**os.environ, "LC_ALL": "C", "LANG": "C"},
            timeout=START_TIMEOUT_S + 30,
        )

    def _failed(self, what: str, done: subprocess.CompletedProcess[str]) -> None:
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        pytest.fail(f"{what} failed ({done.returncode}): {done.stderr}\n{log[-3000:]}")

    def init(self) -> None:
        done = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        if done.returncode != 0:
            self._failed("initdb", done)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c shared_buffers=16MB -c max_connections=40"
        )
        done = self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
        )
        if done.returncode != 0:
            self._failed("pg_ctl start", done)

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` ends sessions cleanly, ``immediate`` crashes."""
        done = self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        if done.returncode != 0:
            self._failed("pg_ctl stop", done)

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (``fast`` or ``immediate``) and start it on the same port."""
        self.stop(mode)
        self.start()

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


def _server_user() -> str | None:
    """Return the OS user to run the server as (None: this process's own user)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        skip_or_fail(f"running as root needs an OS user {SERVER_USER!r} for PostgreSQL")
    return SERVER_USER


@pytest.fixture
def pg_cluster(tmp_path: Path) -> Iterator[PgCluster]:
    """Yield a started throw-away cluster; it is stopped and deleted afterwards."""
    bindir = find_bindir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        skip_or_fail(
            f"no PostgreSQL server binaries (initdb, pg_ctl); set ${BINDIR_VARIABLE}"
        )
    run_as = _server_user()
    if run_as is None:
        base, made = tmp_path / "pgcluster", None
        base.mkdir()
    else:
        made = Path(tempfile.mkdtemp(prefix="memory-summary-pg-"))
        account = pwd.getpwnam(run_as)
        os.chown(made, account.pw_uid, account.pw_gid)
        base = made
    cluster = PgCluster(bindir, base, run_as)  # type: ignore[arg-type]
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
