"""The face of one SQL driver: what the SQL core needs of it, and nothing more.

A face (``SqlDriver``) is the only code that touches its driver (``sqlite3``,
``psycopg``): it connects, pools, runs statements and turns the driver's exceptions into
``StoreError``, so none escapes ``adapters/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from memory_summary.domain import StoreError


class Rows(Protocol):
    """The result of one statement, as a DB-API cursor offers it."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor(Protocol):
    """Runs statements inside a transaction (a driver's connection)."""

    def execute(self, sql: str, params: Sequence[Any], /) -> Rows: ...


class SqlDriver(Protocol):
    """The face of one database driver: connecting, pooling and its exceptions.

    ``what`` and ``about`` (a session id or a metadata key) only name the operation
    in the ``StoreError`` a failure raises.
    """

    def read(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> list[Any]:
        """Run one query and return all its rows."""
        ...

    def write(
        self, sql: str, params: Sequence[object], what: str, about: str | None = None
    ) -> tuple[int, int | None]:
        """Run one statement, atomic on its own; return its row count and new id."""
        ...

    def transaction(
        self, what: str, about: str | None = None
    ) -> AbstractContextManager[Executor]:
        """Run a block in one transaction: committed at its end, undone if it raises."""
        ...

    def close(self) -> None:
        """Release every connection."""
        ...


def store_error(what: str, about: str | None, exc: BaseException) -> StoreError:
    """Return the StoreError a face raises for a driver failure in ``what``."""
    where = what if about is None else f"{what} for {about!r}"
    return StoreError(f"{where} failed: {exc}")
