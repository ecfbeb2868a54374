"""Leases, metadata (summary records) and archive rows of the SQL core.

A part of ``SqlStore`` (``sql.py`` holds the messages and the fenced commit): every
method here is a lone statement, or one short transaction (``quarantine_metadata``),
on the store's driver and rendered queries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memory_summary.adapters.stores.rows import (
    MAX_ROW_ID,
    check_key,
    check_lease_ttl,
    check_limit,
    check_move,
    decode_record,
    message_values,
    metadata_json,
    new_token,
    row_message,
    stored_message,
)
from memory_summary.domain import MalformedRecord, Message, StoreError

from .dialect import Dialect
from .driver import SqlDriver
from .fence import DecodedRecords, WrittenGenerations

log = logging.getLogger(__name__)


class SqlRecords:
    """Leases, metadata and archive rows over ``_driver`` and the queries ``_q``."""

    _driver: SqlDriver
    _dialect: Dialect
    _q: Mapping[str, str]
    _written: WrittenGenerations
    _decoded: DecodedRecords

    # -- leases

    def acquire_lease(self, session_id: str, *, owner: str, ttl_s: float) -> str | None:
        check_key("session_id", session_id)
        check_key("owner", owner)
        check_lease_ttl(ttl_s)
        token = new_token()
        changed, _ = self._driver.write(
            self._q["acquire_lease"],
            (session_id, owner, token, float(ttl_s)),
            "acquire_lease",
            session_id,
        )
        return token if changed else None

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        check_key("session_id", session_id)
        check_key("token", token)
        check_lease_ttl(ttl_s)
        changed, _ = self._driver.write(
            self._q["renew_lease"],
            (float(ttl_s), session_id, token),
            "renew_lease",
            session_id,
        )
        return changed > 0

    def release_lease(self, session_id: str, token: str) -> None:
        check_key("session_id", session_id)
        check_key("token", token)
        self._driver.write(
            self._q["release_lease"], (session_id, token), "release_lease", session_id
        )

    def lease_owner(self, session_id: str) -> str | None:
        check_key("session_id", session_id)
        rows = self._driver.read(
            self._q["lease_owner"], (session_id,), "lease_owner", session_id
        )
        return str(rows[0][0]) if rows else None

    def break_lease(self, session_id: str, owner: str) -> bool:
        check_key("session_id", session_id)
        check_key("owner", owner)
        changed, _ = self._driver.write(
            self._q["break_lease"], (session_id, owner), "break_lease", session_id
        )
        return changed > 0

    # -- metadata

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        text = metadata_json(namespace, key, data)
        self._driver.write(
            self._q["upsert_metadata"],
            (namespace, key, text),
            "save_metadata",
            f"{namespace}/{key}",
        )
        self._written.wrote(namespace, key, text, data)
        self._decoded.wrote(namespace, key, text, data)

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        """Return the record at the key (None: no record).

        A record whose text is the one this store last wrote there is compared in
        SQL and not copied out: its mapping is a copy of the one kept.
        """
        check_key("namespace", namespace)
        check_key("key", key)
        known = self._written.known(namespace, key)
        if known is None:
            rows = self._driver.read(
                self._q["get_metadata"], (namespace, key), "get_metadata", key
            )
        else:
            rows = self._read_unless(known[0], namespace, key)
        if not rows:
            return None
        raw = rows[0][0]
        if raw is None and known is not None:  # the text written there
            raw = known[0]
        return self._decoded.decoded(namespace, key, raw)

    def get_metadata_unless(
        self, namespace: str, key: str, generation: str
    ) -> tuple[bool, dict[str, object] | None]:
        """Return ``(True, None)`` when the row holds the text of ``generation``.

        See ``GenerationReadingStore``: the text this store last wrote at the key,
        when its generation is ``generation``, is compared whole in SQL (the read
        ``get_metadata`` makes), and nothing is decoded or copied when it is still
        there; any other row is ``(False, get_metadata's answer)``.
        """
        check_key("namespace", namespace)
        check_key("key", key)
        known = self._written.known(namespace, key)
        if known is None or known[1] is None or known[1] != generation:
            return False, self.get_metadata(namespace, key)
        rows = self._read_unless(known[0], namespace, key)
        if not rows:
            return False, None
        raw = rows[0][0]
        if raw is None:  # the text written there, whose generation was asked for
            return True, None
        return False, self._decoded.decoded(namespace, key, raw)

    def _read_unless(self, written: str, namespace: str, key: str) -> list[Any]:
        """Read the key's row: its text, or NULL when it is ``written``, unchanged."""
        return self._driver.read(
            self._q["get_metadata_unless"],
            (written, namespace, key),
            "get_metadata",
            key,
        )

    def list_metadata(self, namespace: str) -> list[str]:
        check_key("namespace", namespace)
        rows = self._driver.read(
            self._q["list_metadata"], (namespace,), "list_metadata", namespace
        )
        # Every key, a foreign one too (a blob, or text that is no UTF-8, read as
        # bytes): ``clear --all`` names what it leaves (``is_store_key``).
        return [row[0] for row in rows]

    def session_counts(
        self, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, int, int]]:
        """Return up to ``limit`` (session id, active, archived) with id > ``after``.

        Sessions that hold messages, in code-point order of their ids: page through
        them by passing the last id seen as ``after``.
        """
        check_limit(limit)
        if after is not None:
            check_key("after", after)

        def page(size: int) -> list[Any]:
            params: tuple[object, ...]
            if after is None:
                query, params = "session_counts_first", (size,)
            else:
                query, params = "session_counts_page", (after, size)
            return self._driver.read(self._q[query], params, "session_counts")

        return [
            (sid, int(active), int(archived))
            for sid, active, archived in _text_keyed(page, limit, "session ids")
        ]

    def metadata_page(
        self, namespace: str, *, after_key: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, object] | None]]:
        check_key("namespace", namespace)
        check_limit(limit)
        if after_key is not None:
            check_key("after_key", after_key)

        def page(size: int) -> list[Any]:
            params: tuple[object, ...]
            if after_key is None:
                query, params = "metadata_first", (namespace, size)
            else:
                query, params = "metadata_page", (namespace, after_key, size)
            return self._driver.read(self._q[query], params, "metadata_page", namespace)

        return [
            (row[0], _decoded_or_none(namespace, row))
            for row in _text_keyed(page, limit, f"{namespace} keys")
        ]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        check_key("namespace", namespace)
        check_key("key", key)
        deleted, _ = self._driver.write(
            self._q["delete_metadata"],
            (namespace, key),
            "delete_metadata",
            f"{namespace}/{key}",
        )
        return deleted > 0

    def quarantine_metadata(self, namespace: str, key: str, to_namespace: str) -> bool:
        check_move(namespace, key, to_namespace)
        q = self._q
        with self._driver.transaction(
            "quarantine_metadata", f"{namespace}/{key}"
        ) as tx:
            copied = tx.execute(
                q["copy_metadata"], (to_namespace, namespace, key)
            ).rowcount
            if copied:
                tx.execute(q["delete_metadata"], (namespace, key))
        if copied:  # the engine logs the warning; this is the store's trace
            log.debug("metadata %s/%s moved to %s", namespace, key, to_namespace)
        return copied > 0

    # -- the store's own archive (separator messages)

    def save_archive_message(self, session_id: str, message: Message) -> Message:
        """Write a message to the archive table (the store's ``Archive`` face)."""
        check_key("session_id", session_id)
        values = message_values(message)
        _, row_id = self._driver.write(
            self._q["insert_archive"],
            (session_id, *values),
            "save_archive_message",
            session_id,
        )
        if row_id is None:
            raise StoreError(f"archive message for {session_id!r}: no id was returned")
        return stored_message(message, row_id)

    def delete_archive_messages(self, session_id: str) -> int:
        """Delete the session's archive messages; return how many."""
        check_key("session_id", session_id)
        deleted, _ = self._driver.write(
            self._q["delete_archive"], (session_id,), "delete_archive", session_id
        )
        return deleted

    def archive_messages(self, session_id: str) -> list[Message]:
        """Return the session's archive messages, oldest first."""
        check_key("session_id", session_id)
        rows = self._driver.read(
            self._q["archive_rows"], (session_id,), "archive_messages", session_id
        )
        return [row_message(row) for row in rows]


def _skip_foreign_keys(rows: list[Any], what: str) -> list[Any]:
    """Return the rows whose first column (a key, a session id) is text.

    Another program may put a blob, or text that is no UTF-8 (read as its bytes),
    in SQLite's key and session id columns: no session id can be one, so a listing
    of sessions skips it, with a warning (docs/stores.md).
    """
    kept = [row for row in rows if isinstance(row[0], str)]
    if len(kept) < len(rows):
        skipped = [row[0] for row in rows if not isinstance(row[0], str)]
        log.warning(
            "skipped %d %s that are no UTF-8 text (another program's): %s",
            len(skipped),
            what,
            ", ".join(repr(key)[:40] for key in skipped[:3]),
        )
    return kept


def _text_keyed(page: Callable[[int], list[Any]], limit: int, what: str) -> list[Any]:
    """Return up to ``limit`` rows of ``page`` whose key is text (see above).

    A listing's callers page on until a page comes back short, so skipped rows
    must not shorten one: a full read that lost rows is read again, longer, until
    it holds ``limit`` text keys or ends (only ever when a foreign key is there).
    """
    size = limit
    rows = page(size)
    while len(rows) == size and sum(isinstance(row[0], str) for row in rows) < limit:
        size = min(size * 2, MAX_ROW_ID)
        rows = page(size)
    return _skip_foreign_keys(rows, what)[:limit]


def _decoded_or_none(namespace: str, row: Sequence[object]) -> dict[str, object] | None:
    """Return a metadata row's mapping, or None when it is not one (never raises)."""
    try:
        return decode_record(namespace, str(row[0]), row[1])
    except MalformedRecord:
        return None
