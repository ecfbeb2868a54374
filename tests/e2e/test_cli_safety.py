"""The command line cannot hurt you: real processes of the console script."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys

import pytest

from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["inspect", ""], "a session id cannot be empty"),
        (["compress", "s0", "--timeout", "0"], "argument --timeout: 0 is out of range"),
        (["compress", "s0", "--timeout", "nan"], "argument --timeout: nan is out"),
        (["demo", "--workers", "0"], "argument --workers: 0 is out of range"),
        (["demo", "--sessions", "0"], "argument --sessions: 0 is out of range"),
        (["demo", "--turns", "ten"], "'ten' is not a whole number"),
        (["inspect", "s0", "--limit", "-1"], "argument --limit: -1 is out of range"),
        (["clear", "s0", "--types", "summry"], "did you mean 'summary'?"),
        (["clear", "s0", "--types", ","], "has an empty type name"),
        (["clear", "s0", "--all"], "argument --all: not allowed with argument"),
        (["clear"], "one of the arguments session --all is required"),
        (["inspect", "s0", "--db", "a.db", "--dsn", "host=x"], "not allowed with"),
        (["stats", "--limit", "0"], "argument --limit: 0 is out of range"),
        (["demo", "--dsn", "host=x"], "unrecognized arguments: --dsn"),
        (["stats-typo"], "invalid choice: 'stats-typo'"),
    ],
)
def test_meaningless_or_conflicting_arguments_are_usage_errors(tmp_path, argv, says):
    db = tmp_path / "existing.sqlite3"
    db.write_bytes(b"")

    result = run(*argv, cwd=tmp_path)

    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert db.read_bytes() == b""  # nothing touched


def foreign_database(path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO orders (total) VALUES (9.5)")
    conn.close()


def test_the_demo_never_replaces_a_database_it_did_not_create(tmp_path):
    db = tmp_path / "prod.sqlite3"
    foreign_database(db)
    before = db.read_bytes()

    result = run("demo", "--db", str(db), "--sessions", "1", "--turns", "3")

    assert result.returncode == 3
    assert "not created by the demo" in result.stderr
    assert "--force" in result.stderr
    assert db.read_bytes() == before


def test_the_demo_refuses_a_file_that_is_not_a_database(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")

    result = run("demo", "--db", str(notes), "--sessions", "1", "--turns", "3")

    assert result.returncode == 3
    assert notes.read_text(encoding="utf-8") == "my notes\n"


def test_force_replaces_a_foreign_database_and_the_demo_replaces_its_own(tmp_path):
    db = tmp_path / "prod.sqlite3"
    foreign_database(db)
    args = ("demo", "--db", str(db), "--sessions", "1", "--turns", "3", "--quiet")

    forced = run(*args, "--force")
    again = run(*args)

    assert forced.returncode == 0, forced.stderr
    assert again.returncode == 0, again.stderr
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "orders" not in tables
    assert "memory_summary_demo" in tables


def test_the_demo_creates_no_directories(tmp_path):
    db = tmp_path / "missing" / "dir" / "x.sqlite3"

    result = run("demo", "--db", str(db), "--sessions", "1", "--turns", "3")

    assert result.returncode == 3
    assert "does not exist" in result.stderr
    assert not (tmp_path / "missing").exists()


def test_a_misspelt_variable_is_reported_with_a_suggestion():
    result = run("config", "check", env={"MEMORY_SUMMARY_TRESHOLD": "40"})

    assert result.returncode == 3
    assert "MEMORY_SUMMARY_TRESHOLD='40'" in result.stderr
    assert "did you mean MEMORY_SUMMARY_THRESHOLD?" in result.stderr


def test_every_config_error_is_reported_at_once(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        'keepRecent = -1\nlocale = "fr"\nthreshhold = 3\n', encoding="utf-8"
    )

    result = run(
        "config",
        "check",
        str(path),
        env={"MEMORY_SUMMARY_CLI_WORKRS": "3", "MEMORY_SUMMARY_PIN_FACTS": "maybe"},
    )

    assert result.returncode == 3
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 5, result.stderr
    for part in (
        "keepRecent=-1",  # named as the file spells it
        "locale='fr'",
        "did you mean 'threshold'?",
        "did you mean MEMORY_SUMMARY_CLI_WORKERS?",
        "MEMORY_SUMMARY_PIN_FACTS='maybe'",
    ):
        assert part in result.stderr


def test_bad_cli_defaults_are_reported_with_the_other_config_errors():
    result = run(
        "demo",
        env={
            "MEMORY_SUMMARY_CLI_WORKERS": "0",
            "MEMORY_SUMMARY_CLI_SESSIONS": "-2",
            "MEMORY_SUMMARY_LOCALE": "fr",
        },
    )

    assert result.returncode == 3
    assert "MEMORY_SUMMARY_CLI_WORKERS=0 is invalid; allowed: 1..256" in result.stderr
    assert "MEMORY_SUMMARY_CLI_SESSIONS=-2" in result.stderr
    assert "MEMORY_SUMMARY_LOCALE='fr'" in result.stderr


STORE_COMMANDS = (
    ["inspect", "s0"],
    ["compress", "s0"],
    ["clear", "--all"],
    ["stats"],
)


def test_store_commands_leave_files_that_are_not_their_database_alone(tmp_path):
    notes = tmp_path / "notes.sqlite3"
    notes.write_text("not a database, only text\n" * 50, encoding="utf-8")
    foreign = tmp_path / "shop.sqlite3"
    foreign_database(foreign)
    before = {path: path.read_bytes() for path in (notes, foreign)}

    results = [
        run(*argv, "--db", str(path)) for argv in STORE_COMMANDS for path in before
    ]

    for result in results:
        assert result.returncode == 3, result.stderr
        assert "a memory-summary database" in result.stderr
        assert "Traceback" not in result.stderr
    assert {path: path.read_bytes() for path in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.sqlite3",
        "shop.sqlite3",
    ]


def test_a_store_failure_exits_4(tmp_path):
    from memory_summary import Message
    from memory_summary.adapters import SqliteStore

    db = tmp_path / "chat.sqlite3"
    SqliteStore(db).close()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        # a new store's pages are its tables' roots and the schema's own pages
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        roots = {r for (r,) in conn.execute("SELECT rootpage FROM sqlite_master")}
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    schema = set(range(1, pages + 1)) - roots
    store = SqliteStore(db)
    for i in range(200):
        store.save_message("s0", Message("user", f"Question {i} about tides. " * 20))
    store.close()
    with db.open("r+b") as raw:  # every page but the schema's is garbage
        for page in range(1, db.stat().st_size // size + 1):
            if page not in schema:
                raw.seek((page - 1) * size)
                raw.write(b"\xff" * size)

    results = [run(*argv, "--db", str(db)) for argv in STORE_COMMANDS]

    for result in results:
        assert result.returncode == 4, result.stderr
        assert "malformed" in result.stderr
        assert "Traceback" not in result.stderr


def test_the_summarizer_endpoint_needs_the_openai_extra_and_says_so(tmp_path):
    code = (
        "import sys; sys.modules['openai'] = None\n"
        "from memory_summary.cli import main\n"
        "offline = main(['demo', '--sessions', '1', '--turns', '3', '--quiet'])\n"
        "online = main(['demo', '--db', 'llm.sqlite3', '--base-url', "
        "'http://127.0.0.1:9/v1', '--quiet'])\n"
        "print(offline, online)\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )

    assert result.stdout.split()[-2:] == ["0", "3"], result.stderr
    assert "pip install 'memory-summary[openai]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
def test_dsn_selects_postgresql_for_every_store_command(tmp_path):
    from memory_summary import Message
    from tests.contract.stores import dispose, make_postgres, postgres_dsn

    store = make_postgres()  # a fresh schema; skips (or fails in CI) without a server
    try:
        for i in range(40):
            store.save_message("s1", Message("user", f"Question {i} about tides."))
        where = ("--schema", store.schema)
        env = {"MEMORY_SUMMARY_PG_DSN": postgres_dsn()}

        compressed = run("compress", "s1", "--dsn", postgres_dsn(), *where)
        inspected = run("inspect", "s1", *where, env=env)  # the variable selects it
        stats = run("stats", "--json", *where, env=env)
        cleared = run("clear", "--all", "--dsn", postgres_dsn(), *where)
        sqlite_wins = run("inspect", "s1", "--db", str(tmp_path / "x.db"), env=env)
    finally:
        dispose(store)

    assert compressed.returncode == 0, compressed.stderr
    assert "session s1: compressed" in compressed.stdout
    assert inspected.returncode == 0, inspected.stderr
    assert "archived" in inspected.stdout
    assert "summary: covers messages" in inspected.stdout
    assert stats.returncode == 0, stats.stderr
    assert "s1" in stats.stdout
    assert cleared.returncode == 0, cleared.stderr
    assert "cleared 1 summaries" in cleared.stdout
    assert sqlite_wins.returncode == 3  # --db beats the variable: no such file


def test_top_level_fields_beside_a_cli_table_are_used_by_check_and_commands(tmp_path):
    db = tmp_path / "chat.sqlite3"
    assert (
        run("demo", "--sessions", "1", "--turns", "3", "--db", str(db)).returncode == 0
    )
    config = tmp_path / "chat.toml"
    config.write_text(
        f"threshold = 50\nkeep_recent = 40\n\n[memory_summary.cli]\ndb = {str(db)!r}\n",
        encoding="utf-8",
    )

    checked = run("config", "check", str(config), "--json")
    shown = run("config", "check", str(config))
    compressed = run("compress", "s0", "--config", str(config))

    assert checked.returncode == 0, checked.stderr
    values = json.loads(checked.stdout)
    assert (values["threshold"], values["keep_recent"]) == (50, 40)
    assert re.search(rf'^\s*db\s+"{re.escape(str(db))}"$', shown.stdout, re.M)
    assert compressed.returncode == 0, compressed.stderr  # the db of the cli table
    assert "keep_recent keeps the newest 40" in compressed.stdout  # top level


@pytest.mark.parametrize(
    ("cli_table", "argv"),
    [
        ("sesions = 3\n", ["stats"]),  # no command's option: every command refuses
        ("turns = 'many'\n", ["demo"]),  # an option: the commands that have it
        ("workers = 0\n", ["demo"]),
        ("timeout = -1\n", ["compress", "s0"]),
        ("db = ''\n", ["stats"]),
        ("sesions = 3\nturns = 'many'\n", ["stats"]),
    ],
    ids=["typo", "type", "range", "negative", "empty", "several"],
)
def test_config_check_refuses_the_cli_table_as_the_commands_do(
    tmp_path, cli_table, argv
):
    config = tmp_path / "chat.toml"
    config.write_text(f"[memory_summary.cli]\n{cli_table}", encoding="utf-8")

    checked = run("config", "check", str(config))
    command = run(*argv, "--config", str(config), cwd=tmp_path)

    assert checked.returncode == 3, checked.stdout
    assert command.returncode == 3
    assert checked.stderr == command.stderr  # the same errors and suggestions
    assert checked.stderr.startswith("memory-summary: error: cli.")
    assert "Traceback" not in checked.stderr


def test_config_check_reports_field_and_cli_errors_at_once(tmp_path):
    config = tmp_path / "chat.toml"
    config.write_text(
        "[memory_summary]\nkeepRecnt = 3\n[memory_summary.cli]\nsesions = 3\n",
        encoding="utf-8",
    )

    checked = run("config", "check", str(config))

    assert checked.returncode == 3
    assert "did you mean 'keepRecent'?" in checked.stderr
    assert "did you mean 'sessions'?" in checked.stderr


def _keys(db, namespace) -> list[object]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
        rows = conn.execute(
            "SELECT key FROM metadata WHERE namespace = ? ORDER BY key", (namespace,)
        ).fetchall()
    return [key for (key,) in rows]


def _summaries_with_a_foreign_key(db, namespace, insert_key, key) -> None:
    from memory_summary.adapters import SqliteStore

    store = SqliteStore(db)
    try:
        for sid in ("alice", "bob", "carol"):
            store.save_metadata("summary", sid, {"summary": f"about {sid}"})
            store.save_metadata("summary.versions", sid, {"versions": []})
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            f"INSERT INTO metadata VALUES (?, {insert_key}, '{{}}')", (namespace, key)
        )


@pytest.mark.parametrize("namespace", ["summary", "summary.versions"])
@pytest.mark.parametrize("key", [b"\xff\x00bin", "nul\x00key"], ids=repr)
def test_clear_all_clears_every_summary_and_names_a_key_no_session_can_have(
    tmp_path, namespace, key
):
    db = tmp_path / "chat.sqlite3"
    _summaries_with_a_foreign_key(db, namespace, "?", key)

    cleared = run("clear", "--all", "--db", str(db))

    assert cleared.returncode == 0, cleared.stderr
    assert "Traceback" not in cleared.stderr
    assert "cleared 3 summaries" in cleared.stdout
    assert "left 1 record whose key no session id can be" in cleared.stdout
    assert _keys(db, namespace) == [key]
    assert _keys(db, "summary") + _keys(db, "summary.versions") == [key]


@pytest.mark.parametrize("namespace", ["summary", "summary.versions"])
def test_clear_all_names_a_key_that_is_no_utf8_text_and_clears_the_rest(
    tmp_path, namespace
):
    """Text that is no UTF-8 reads as its bytes, like a blob: left and named.

    Before, the listing itself failed on it, so nothing was cleared at all.
    """
    db = tmp_path / "chat.sqlite3"
    # text that is no UTF-8 (a lone surrogate's bytes): SQLite keeps what it is given
    _summaries_with_a_foreign_key(db, namespace, "CAST(? AS TEXT)", b"\xed\xa0\x80")

    cleared = run("clear", "--all", "--db", str(db))

    assert cleared.returncode == 0, cleared.stderr
    assert "Traceback" not in cleared.stderr
    assert "cleared 3 summaries" in cleared.stdout
    assert "left 1 record whose key no session id can be: b'\\xed\\xa0\\x80'" in (
        cleared.stdout
    )
    assert _keys(db, "summary") + _keys(db, "summary.versions") == [
        "\udced\udca0\udc80"
    ]


def test_sessions_and_stats_skip_a_session_id_that_is_no_utf8_text(tmp_path):
    """The listings skip such an id (docs/stores.md); before, both commands failed."""
    db = tmp_path / "chat.sqlite3"
    _summaries_with_a_foreign_key(db, "summary", "CAST(? AS TEXT)", b"bo\xffb")
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        for sid in ("alice", "bob\xff", "carol"):
            conn.execute(
                "INSERT INTO messages (session_id, role, content) "
                "VALUES (CAST(? AS TEXT), 'user', 'hi')",
                (sid.encode("latin-1"),),
            )

    sessions = run("sessions", "--db", str(db), "--json")
    stats = run("stats", "--db", str(db))

    assert sessions.returncode == 0, sessions.stderr
    listed = json.loads(sessions.stdout)["sessions"]
    assert [row["session_id"] for row in listed] == ["alice", "carol"]
    assert stats.returncode == 0, stats.stderr
    assert re.findall(r"^ (alice|bob|carol) ", stats.stdout, re.M) == [
        "alice",
        "bob",
        "carol",
    ]
