"""SQLite text that is no UTF-8: read as its bytes, or a clear ``MalformedRecord``.

SQLite keeps whatever bytes a program gives a TEXT column; Python's ``sqlite3`` then
fails the whole fetch. ``SqliteDriver`` reads such a result again with a text factory
that keeps the bytes (docs/stores.md: "Rows another program wrote").
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, cast

from memory_summary.domain import MalformedRecord, StoreError

from .driver import store_error

# What sqlite3 raises when a TEXT value is no UTF-8 (another program wrote the bytes,
# e.g. ``CAST(x'ff61' AS TEXT)``): the whole fetch fails, whichever row holds it.
_UNDECODABLE = "Could not decode to UTF-8"


def undecodable(exc: BaseException) -> bool:
    """Return whether ``exc`` is sqlite3's failure to decode a TEXT value."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(
        _UNDECODABLE
    )


def _text_or_bytes(raw: bytes) -> str | bytes:
    """Decode a TEXT value; keep one that is no UTF-8 as its bytes, a blob's type.

    Read that way, such text meets the rules a blob in the column meets: a key or
    session id that is no text is skipped by the listings, a record that is none
    is a ``MalformedRecord`` (moved aside by the engine), a message row holding one
    a ``MalformedRecord`` naming its id (docs/stores.md).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


@contextlib.contextmanager
def foreign_text_as_bytes(conn: object) -> Iterator[None]:
    """Read text that is no UTF-8 as bytes on ``conn`` (a sqlite3 connection).

    Only where a plain read failed on such text, or once (a migration): a Python
    text factory costs every other read a call per value.
    """
    connection = cast(sqlite3.Connection, conn)
    connection.text_factory = _text_or_bytes
    try:
        yield
    finally:
        connection.text_factory = str


def read_foreign_text(
    conn: sqlite3.Connection, sql: str, params: Sequence[object]
) -> list[Any]:
    """Run a read again, text that is no UTF-8 read as bytes (``_text_or_bytes``)."""
    with foreign_text_as_bytes(conn):
        return conn.execute(sql, params).fetchall()


def driver_error(what: str, about: str | None, exc: BaseException) -> StoreError:
    """Return the StoreError for ``exc``; text that is no UTF-8 is a malformed row."""
    if undecodable(exc):
        where = what if about is None else f"{what} for {about!r}"
        return MalformedRecord(
            f"{where} failed: a stored text value is not UTF-8, written by another "
            f"program ({exc}); nothing was changed"
        )
    return store_error(what, about, exc)
