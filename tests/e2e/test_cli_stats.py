"""``memory-summary stats`` and the usage line of ``inspect``, in a subprocess."""

from __future__ import annotations

import json

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import SqliteStore
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e

GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."


def compressed_db(path, sessions=("alice", "bob", "carol")):
    """Write a SQLite file where each session was compressed once; return usages."""
    store = SqliteStore(path)
    config = SummaryConfig(threshold=10, keep_recent=4)
    try:
        with SummaryEngine(store, ScriptedSummarizer(GOOD), config=config) as engine:
            for n, sid in enumerate(sessions):
                for i in range(12 + 4 * n):  # different sizes: different costs
                    role = "user" if i % 2 == 0 else "assistant"
                    store.save_message(sid, Message(role, f"{sid} message {i}."))
                assert engine.compress(sid).result(timeout=30).kind == "compressed"
            return engine.usage_by_session(), engine.usage()
    finally:
        store.close()


def test_stats_json_reports_every_session_and_the_total(tmp_path):
    db = tmp_path / "chat.sqlite3"
    by_session, total = compressed_db(db)

    result = run("stats", "--db", str(db), "--json")

    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    seen = {s["session_id"]: s["usage"] for s in data["sessions"]}
    assert set(seen) == {"alice", "bob", "carol"}
    for sid, usage in by_session.items():
        assert seen[sid]["input_tokens"] == usage.input_tokens
        assert seen[sid]["output_tokens"] == usage.output_tokens
        assert seen[sid]["source"] == "counted"
    inputs = [s["usage"]["input_tokens"] for s in data["sessions"]]
    assert inputs == sorted(inputs, reverse=True)  # costliest first
    assert data["total"]["input_tokens"] == total.input_tokens
    assert data["total"]["calls"] == 3
    assert data["total"]["session_count"] == 3


def test_stats_table_shows_the_costliest_sessions_and_the_total_of_all(tmp_path):
    db = tmp_path / "chat.sqlite3"
    by_session, total = compressed_db(db)

    result = run("stats", "--db", str(db), "--limit", "1")

    assert result.returncode == 0, result.stderr
    costliest = max(by_session, key=lambda sid: by_session[sid].total_tokens)
    assert costliest == "carol"  # the longest session
    assert "carol" in result.stdout
    assert "alice" not in result.stdout
    assert "all 3 (2 not shown)" in result.stdout
    assert f"{total.input_tokens:,} input + {total.output_tokens:,} output" in (
        result.stdout
    )


def test_stats_of_an_empty_database_says_so(tmp_path):
    db = tmp_path / "empty.sqlite3"
    SqliteStore(db).close()

    result = run("stats", "--db", str(db))

    assert result.returncode == 0, result.stderr
    assert "nothing was compressed" in result.stdout


def test_inspect_shows_the_sessions_usage(tmp_path):
    db = tmp_path / "chat.sqlite3"
    by_session, _ = compressed_db(db, sessions=("alice",))
    usage = by_session["alice"]

    result = run("inspect", "alice", "--db", str(db))

    assert result.returncode == 0, result.stderr
    assert (
        f"usage: {usage.input_tokens:,} input + {usage.output_tokens:,} output "
        "tokens in 1 call(s) (counted with the engine's tokenizer)"
    ) in result.stdout


@pytest.mark.parametrize(("limit", "listed"), [(["--limit", "2"], 2), ([], 3)])
def test_stats_json_lists_the_limit_costliest_sessions_and_counts_all(
    tmp_path, limit, listed
):
    db = tmp_path / "chat.sqlite3"
    _, total = compressed_db(db)

    result = run("stats", "--db", str(db), "--json", *limit)

    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [s["session_id"] for s in data["sessions"]] == ["carol", "bob", "alice"][
        :listed
    ]
    assert data["total"]["session_count"] == 3
    assert data["total"]["sessions_shown"] == listed
    assert data["total"]["input_tokens"] == total.input_tokens  # all, not the shown


def test_stats_after_clear_all_says_the_summaries_were_cleared(tmp_path):
    db = tmp_path / "chat.sqlite3"
    compressed_db(db)
    store = SqliteStore(db)
    try:
        archived = sum(count for _, _, count in store.session_counts(limit=10))
    finally:
        store.close()

    cleared = run("clear", "--all", "--db", str(db))
    table = run("stats", "--db", str(db))
    data = json.loads(run("stats", "--db", str(db), "--json").stdout)

    assert cleared.returncode == 0, cleared.stderr
    assert table.returncode == 0, table.stderr
    assert "nothing was compressed" not in table.stdout
    assert f"{archived:,} archived message(s) in 3 session(s)" in table.stdout
    assert "summaries were cleared" in table.stdout
    assert data["sessions"] == []
    assert data["archived_unaccounted"] == {"sessions": 3, "messages": archived}


def test_stats_counts_what_was_archived_before_a_clear_as_unaccounted(tmp_path):
    db = tmp_path / "chat.sqlite3"
    compressed_db(db, sessions=("alice",))
    config = tmp_path / "keep4.toml"
    config.write_text("[memory_summary]\nthreshold = 5\nkeep_recent = 2\n")
    store = SqliteStore(db)
    try:
        before = store.session_counts(limit=10)[0][2]
    finally:
        store.close()

    run("clear", "--all", "--db", str(db))
    compressed = run("compress", "alice", "--db", str(db), "--config", str(config))
    data = json.loads(run("stats", "--db", str(db), "--json").stdout)

    assert compressed.returncode == 0, compressed.stderr
    assert "compressed" in compressed.stdout
    assert [s["session_id"] for s in data["sessions"]] == ["alice"]
    assert data["archived_unaccounted"] == {"sessions": 1, "messages": before}


def test_stats_after_clearing_one_session_says_what_it_does_not_count(tmp_path):
    db = tmp_path / "chat.sqlite3"
    by_session, _ = compressed_db(db)

    run("clear", "bob", "--db", str(db))
    result = run("stats", "--db", str(db))

    assert result.returncode == 0, result.stderr
    assert "all 2" in result.stdout
    kept = by_session["alice"].input_tokens + by_session["carol"].input_tokens
    assert f"usage: {kept:,} input" in result.stdout
    assert "not counted: " in result.stdout
    assert "in 1 session(s)" in result.stdout


def test_stats_of_a_store_never_compressed_says_nothing_was(tmp_path):
    db = tmp_path / "chat.sqlite3"
    store = SqliteStore(db)
    try:
        store.save_message("alice", Message("user", "hello"))
    finally:
        store.close()

    result = run("stats", "--db", str(db))

    assert result.returncode == 0, result.stderr
    assert "nothing was compressed" in result.stdout
