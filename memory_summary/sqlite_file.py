"""What a SQLite file on disk holds, and whether the command line may touch it.

The CLI never deletes or alters a file it was not asked to: ``demo`` replaces only a
database it created itself (marked with a ``memory_summary_demo`` table) unless forced,
and creates no directories; ``inspect``, ``compress``, ``clear`` and ``stats`` open
only a database that already holds memory-summary's tables, so they never add a
schema to someone else's file. Every check opens the file read-only.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from memory_summary.domain import ConfigError

DEMO_MARK_TABLE = "memory_summary_demo"
STORE_TABLES = frozenset({"messages", "metadata"})


def sqlite_tables(path: Path) -> frozenset[str] | None:
    """Return the table names of the SQLite database at ``path``; None if it is not one.

    Opens the file read-only: nothing is created or changed, not even a journal.
    """
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            rows = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
    except sqlite3.Error:
        return None
    return frozenset(str(name) for (name,) in rows)


def is_demo_database(path: Path) -> bool:
    """Tell whether ``path`` is a SQLite database the demo created."""
    return DEMO_MARK_TABLE in (sqlite_tables(path) or ())


def check_store_database(path: Path, hint: str) -> None:
    """Check that ``path`` is an existing memory-summary SQLite database.

    Raises:
        ConfigError: it does not exist, or it is not such a database (``hint``
            says how to make one).
    """
    if not path.is_file():
        raise ConfigError("--db", str(path), f"an existing database ({hint})")
    tables = sqlite_tables(path)
    if tables is None or not STORE_TABLES.issubset(tables):
        what = "not a SQLite database" if tables is None else "another program's"
        raise ConfigError(
            "--db",
            str(path),
            f"a memory-summary database; this file is {what}, and is left as it is",
        )


def prepare_demo_database(path: Path, *, force: bool = False) -> None:
    """Make way for a fresh demo database at ``path`` and mark it as the demo's.

    Raises:
        ConfigError: the directory does not exist, ``path`` is a directory, or it is
            a file an earlier demo did not create (and ``force`` is false).
    """
    if str(path) == ":memory:" or not str(path).strip():
        raise ConfigError("--db", str(path), "a database file path")
    if not path.parent.is_dir():
        raise ConfigError(
            "--db",
            str(path),
            f"a file in an existing directory ({path.parent} does not exist; the "
            "demo creates no directories)",
        )
    if path.is_dir():
        raise ConfigError("--db", str(path), "a file path, not a directory")
    if path.exists():
        if not force and not is_demo_database(path):
            raise ConfigError(
                "--db",
                str(path),
                "a new path or a database an earlier demo created: this file was not "
                "created by the demo and would be deleted; pass --force to replace it",
            )
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    _mark(path)


def _mark(path: Path) -> None:
    # Marked before the store's own tables exist: a demo that dies half-way still
    # left a database a later demo may replace.
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"CREATE TABLE {DEMO_MARK_TABLE} (created_at TEXT NOT NULL)")
        conn.execute(
            f"INSERT INTO {DEMO_MARK_TABLE} VALUES (?)",
            (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),),
        )
