r"""The metadata records of the Redis store: summaries and the host's own records.

A record is one key (``r:<namespace>\x00<key>``) and its namespace's sorted index
(``x:<namespace>``) lists its keys in order; scripts (``redis_lua``) change both at
once. A record in a session namespace expires with its session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import redis

from memory_summary.adapters.stores.rows import (
    check_key,
    check_limit,
    check_move,
    decode_record,
    metadata_json,
)
from memory_summary.domain import MalformedRecord, StoreError

from .history import RedisScripted
from .records import DecodedRecords

log = logging.getLogger(__name__)

PAGE = 1000
"""Keys read per script call of a page."""


class RedisMetadata(RedisScripted):
    """The metadata methods of ``RedisStore``, which mixes this in."""

    prefix: str
    _client: redis.Redis
    _ttl: str
    _session_namespaces: tuple[str, ...]
    _decoded: DecodedRecords

    def _record(self, namespace: str, key: str) -> str:
        raise NotImplementedError  # pragma: no cover - RedisStore names keys

    def _run(self, what: str, where: str, call: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError  # pragma: no cover - RedisStore runs commands

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        text = metadata_json(namespace, key, data)
        ttl = self._ttl if namespace in self._session_namespaces else "0"
        self._script(
            "SAVE_METADATA",
            f"{namespace}/{key}",
            [
                self._record(namespace, key),
                self._key("x", namespace),
                self.prefix + "namespaces",
            ],
            [text, key, namespace, ttl],
        )
        self._decoded.wrote(namespace, key, text, data)

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        check_key("namespace", namespace)
        check_key("key", key)
        raw = self._run(
            "get_metadata", key, self._client.get, self._record(namespace, key)
        )
        return None if raw is None else self._decoded.decoded(namespace, key, raw)

    def _pages(
        self, namespace: str, after_key: str | None, limit: int
    ) -> Iterator[tuple[str, bytes]]:
        start = "-" if after_key is None else f"({after_key}"
        while limit > 0:
            flat = self._script(
                "METADATA_PAGE",
                namespace,
                [self._key("x", namespace)],
                [self._record(namespace, ""), start, min(limit, PAGE)],
            )
            for at in range(0, len(flat), 2):
                yield _text_key(namespace, flat[at]), flat[at + 1]
            if len(flat) < 2 * min(limit, PAGE):
                return
            limit -= len(flat) // 2
            start = "(" + _text_key(namespace, flat[-2])

    def list_metadata(self, namespace: str) -> list[str]:
        check_key("namespace", namespace)
        return [key for key, _ in self._pages(namespace, None, 2**62)]

    def metadata_page(
        self, namespace: str, *, after_key: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, object] | None]]:
        check_key("namespace", namespace)
        if after_key is not None:
            check_key("after_key", after_key)
        check_limit(limit)
        return [
            (key, _decoded_or_none(namespace, key, raw))
            for key, raw in self._pages(namespace, after_key, limit)
        ]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        check_key("namespace", namespace)
        check_key("key", key)
        deleted = self._script(
            "DELETE_METADATA",
            f"{namespace}/{key}",
            [self._record(namespace, key), self._key("x", namespace)],
            [key],
        )
        return bool(deleted)

    def quarantine_metadata(self, namespace: str, key: str, to_namespace: str) -> bool:
        check_move(namespace, key, to_namespace)
        moved = self._script(
            "QUARANTINE",
            f"{namespace}/{key}",
            [
                self._record(namespace, key),
                self._key("x", namespace),
                self._record(to_namespace, key),
                self._key("x", to_namespace),
                self.prefix + "namespaces",
            ],
            [key, to_namespace],
        )
        if moved:  # the engine logs the warning; this is the store's trace
            log.debug("metadata %s/%s moved to %s", namespace, key, to_namespace)
        return bool(moved)


def _decoded_or_none(namespace: str, key: str, raw: object) -> dict[str, object] | None:
    """Return a record's mapping, or None when it is not one (never raises)."""
    try:
        return decode_record(namespace, key, raw)
    except MalformedRecord:
        return None


def _text_key(namespace: str, raw: Any) -> str:
    """Return a key of the namespace's index as text; refuse one that is no UTF-8.

    Only a foreign writer puts such a member there: no store call can name it, so
    the listing fails as a ``StoreError`` (a clear then changes nothing).
    """
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(
            f"a key in namespace {namespace!r} is not UTF-8 ({bytes(raw)[:40]!r}): "
            "another program wrote it"
        ) from exc
