"""The store commands open only an existing store of this library, or exit 3.

``inspect``, ``stats``, ``clear`` and ``compress`` never create a PostgreSQL schema
or tables (a typo in ``--schema``, another application's schema), answer a DSN that
is malformed or leads nowhere with one message, and refuse a database of a newer
release: all exit 3, as the same mistakes with ``--db`` do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from uuid import uuid4

import pytest

from memory_summary.adapters import SqliteStore
from tests.e2e.test_cli import run

pytestmark = pytest.mark.e2e

COMMANDS = [("inspect", "s1"), ("stats",), ("clear", "--all"), ("compress", "s1")]


def _postgres():
    psycopg = pytest.importorskip("psycopg")
    from tests.contract.stores import make_postgres, postgres_dsn

    make_postgres().drop_schema()  # skips (or fails in CI) without a server
    return psycopg, postgres_dsn()


def _schema_tables(psycopg, dsn, schema):
    """Return None when ``schema`` does not exist, else its table names."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
        ).fetchone()
        if found is None:
            return None
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchall()
    return sorted(name for (name,) in rows)


@pytest.mark.postgres
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_mistyped_schema_is_never_created(command):
    psycopg, dsn = _postgres()
    schema = f"typo_{uuid4().hex[:10]}"

    result = run(*command, "--dsn", dsn, "--schema", schema)

    assert result.returncode == 3, result.stderr
    assert f"schema {schema!r} does not exist" in result.stderr
    assert "Traceback" not in result.stderr
    assert _schema_tables(psycopg, dsn, schema) is None


SCHEMA_CASES = [
    *((command, "Bad-Schema", "bad_schema") for command in COMMANDS),
    (("sessions",), "1abc", None),
    (("stats",), "a" * 64, None),
    (("stats",), "x;y", "x_y"),
]


@pytest.mark.parametrize(
    ("command", "schema", "near"),
    SCHEMA_CASES,
    ids=[f"{c[0][0]}-{c[1][:10]}" for c in SCHEMA_CASES],
)
def test_a_schema_name_no_store_can_have_is_a_config_error(command, schema, near):
    pytest.importorskip("psycopg")
    # no server is asked: the name is refused before connecting
    dsn = "host=127.0.0.1 port=1 dbname=test user=postgres connect_timeout=3"

    result = run(*command, "--dsn", dsn, "--schema", schema)

    assert result.returncode == 3, result.stderr
    assert f"schema={schema!r} is invalid" in result.stderr
    assert "[a-z_][a-z0-9_]*" in result.stderr
    if near is not None:
        assert f"did you mean {near!r}?" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_another_applications_schema_is_left_alone(command):
    psycopg, dsn = _postgres()
    schema = f"app_{uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".orders (id INT PRIMARY KEY)')
    try:
        result = run(*command, "--dsn", dsn, "--schema", schema)
        tables = _schema_tables(psycopg, dsn, schema)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    assert result.returncode == 3, result.stderr
    assert "holds no memory-summary store" in result.stderr
    assert tables == ["orders"]


@pytest.mark.parametrize(
    "dsn",
    [
        "this is not a dsn",
        "host=127.0.0.1 port=1 dbname=test user=postgres connect_timeout=3",
        "postgresql://nobody@[::1",
    ],
    ids=["malformed", "refused", "broken-url"],
)
def test_a_dsn_that_leads_nowhere_exits_3_with_one_message(dsn):
    pytest.importorskip("psycopg")

    result = run("stats", "--dsn", dsn)

    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memory-summary: error: cannot open the store:")
    assert result.stdout == ""


def test_a_sqlite_database_of_a_newer_release_exits_3(tmp_path):
    path = tmp_path / "newer.sqlite3"
    SqliteStore(path).close()
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")
    conn.close()

    result = run("inspect", "s1", "--db", str(path))

    assert result.returncode == 3, result.stderr
    assert "newer than" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.postgres
def test_a_postgres_schema_of_a_newer_release_exits_3():
    psycopg, dsn = _postgres()
    from tests.contract.stores import dispose, make_postgres

    store = make_postgres()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{store.schema}".schema_version (version) VALUES (99)'
        )
    try:
        result = run("stats", "--dsn", dsn, "--schema", store.schema)
    finally:
        dispose(store)

    assert result.returncode == 3, result.stderr
    assert "newer than" in result.stderr
