"""Operator commands on a real console script: Ctrl-C, pipes, listing, typos."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_summary import Message
from memory_summary.adapters import SqliteStore
from tests.e2e.test_cli import run
from tests.e2e.test_cli_stats import compressed_db

pytestmark = pytest.mark.e2e

LONG_IDS = (
    "customer-support-session-0001-alpha",
    "customer-support-session-0002-bravo",
)


def _sessions_begun(db: Path) -> int:
    """Return how many sessions the demo's database holds (0 before it exists)."""
    with (
        contextlib.suppress(sqlite3.Error),
        contextlib.closing(
            sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        ) as conn,
    ):
        query = "SELECT count(DISTINCT session_id) FROM messages"
        return int(conn.execute(query).fetchone()[0])
    return 0


def test_ctrl_c_during_the_demo_stops_it_and_exits_130(tmp_path):
    db = tmp_path / "demo.sqlite3"
    sessions, turns = 200, 40
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    environ["PYTHONFAULTHANDLER"] = "1"  # a hang below prints every thread's stack
    # A suite started in the background inherits SIGINT ignored; the child takes it
    # back as an interactive shell would give it, then runs the console script's main.
    interactive = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
        " from memory_summary.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = [sys.executable, "-c", interactive, "demo", "--db", str(db), "--quiet"]
    argv += ["--sessions", str(sessions), "--turns", str(turns)]
    demo = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    try:
        deadline = time.monotonic() + 60
        while _sessions_begun(db) == 0:  # wait for the turns to have begun
            assert demo.poll() is None, demo.communicate()
            assert time.monotonic() < deadline, "the demo never started its turns"
            time.sleep(0.05)

        demo.send_signal(signal.SIGINT)
        try:
            out, err = demo.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            demo.send_signal(signal.SIGABRT)
            pytest.fail(
                f"the demo ignored Ctrl-C; its threads:\n{demo.communicate()[1]}"
            )
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()

    assert demo.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    assert out == ""  # no report of a run that did not finish
    # it stopped: the sessions still queued behind the 8 host threads never began
    assert 0 < _sessions_begun(db) < sessions


def test_stats_piped_to_a_file_keeps_every_column(tmp_path):
    db = tmp_path / "chat.sqlite3"
    compressed_db(db, sessions=LONG_IDS)

    result = run("stats", "--db", str(db), env={"COLUMNS": "80"})

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.strip().startswith("session"))
    assert header.split() == [
        "session",
        "calls",
        "input",
        "output",
        "source",
        "seconds",
        "folded",
        "summary",
    ]
    for sid in LONG_IDS:
        assert sid in result.stdout  # whole, not cut with an ellipsis


def test_sessions_lists_every_session_with_its_counts(tmp_path):
    db = tmp_path / "chat.sqlite3"
    compressed_db(db, sessions=("alice", "bob"))
    store = SqliteStore(db)
    try:
        store.save_message("carol", Message("user", "hello"))
    finally:
        store.close()

    table = run("sessions", "--db", str(db))
    listed = run("sessions", "--db", str(db), "--json")

    assert table.returncode == 0, table.stderr
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [s["session_id"] for s in data["sessions"]] == ["alice", "bob", "carol"]
    carol = data["sessions"][-1]
    assert (carol["active"], carol["archived"]) == (1, 0)
    assert all(s["archived"] > 0 for s in data["sessions"][:2])
    for sid in ("alice", "bob", "carol"):
        assert sid in table.stdout
    assert "3 sessions" in table.stdout


@pytest.mark.parametrize("command", ["inspect", "compress"])
def test_an_unknown_session_is_an_error_not_an_empty_session(tmp_path, command):
    db = tmp_path / "chat.sqlite3"
    compressed_db(db, sessions=("alice",))
    before = db.read_bytes()

    result = run(command, "alcie", "--db", str(db))

    assert result.returncode == 3, result.stderr
    assert "no session 'alcie'" in result.stderr
    assert "sessions" in result.stderr  # says how to list them
    assert result.stdout == ""
    assert db.read_bytes() == before
