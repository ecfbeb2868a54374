"""The in-memory store's records: the compression leases and the metadata records.

``InMemoryStore`` mixes ``MemoryRecords`` in. Leases time out on
``time.monotonic()``, so they bind the threads of this process; records are kept as
the SQL stores return them (decoded JSON) and copied on the way out.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping

import attrs

from memory_summary.adapters.stores.rows import (
    check_key,
    check_lease_ttl,
    check_limit,
    check_move,
    json_copy,
    metadata_json,
    new_token,
)


@attrs.frozen
class Lease:
    """A session's compression lease: who holds it, its token, when it expires."""

    owner: str
    token: str
    expires_at: float  # time.monotonic() seconds


class MemoryRecords:
    """The lease and metadata methods of ``InMemoryStore``, which mixes this in."""

    _lock: threading.Lock
    _metadata: dict[tuple[str, str], dict[str, object]]
    _leases: dict[str, Lease]

    def _holds(self, session_id: str, token: str) -> bool:
        lease = self._leases.get(session_id)
        return (
            lease is not None
            and lease.token == token
            and lease.expires_at > time.monotonic()
        )

    def acquire_lease(self, session_id: str, *, owner: str, ttl_s: float) -> str | None:
        check_key("session_id", session_id)
        check_key("owner", owner)
        check_lease_ttl(ttl_s)
        with self._lock:
            now = time.monotonic()
            lease = self._leases.get(session_id)
            if lease is not None and lease.expires_at > now:
                return None
            token = new_token()
            self._leases[session_id] = Lease(owner, token, now + ttl_s)
            return token

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        check_key("session_id", session_id)
        check_key("token", token)
        check_lease_ttl(ttl_s)
        with self._lock:
            if not self._holds(session_id, token):
                return False
            lease = self._leases[session_id]
            self._leases[session_id] = attrs.evolve(
                lease, expires_at=time.monotonic() + ttl_s
            )
            return True

    def release_lease(self, session_id: str, token: str) -> None:
        check_key("session_id", session_id)
        check_key("token", token)
        with self._lock:
            self._drop_lease(session_id, token)

    def _drop_lease(self, session_id: str, token: str) -> None:
        """Drop the lease if it carries ``token``; the caller holds the lock."""
        lease = self._leases.get(session_id)
        if lease is not None and lease.token == token:
            del self._leases[session_id]

    def lease_owner(self, session_id: str) -> str | None:
        check_key("session_id", session_id)
        with self._lock:
            lease = self._leases.get(session_id)
            if lease is None or lease.expires_at <= time.monotonic():
                return None
            return lease.owner

    def break_lease(self, session_id: str, owner: str) -> bool:
        check_key("session_id", session_id)
        check_key("owner", owner)
        with self._lock:
            lease = self._leases.get(session_id)
            if lease is None or lease.owner != owner:
                return False
            del self._leases[session_id]
            return True

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        kept = json.loads(metadata_json(namespace, key, data))
        with self._lock:
            self._metadata[(namespace, key)] = kept

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        check_key("namespace", namespace)
        check_key("key", key)
        with self._lock:
            record = self._metadata.get((namespace, key))
        # Stored records are never mutated, only replaced: copy outside the lock.
        return None if record is None else json_copy(record)  # type: ignore[return-value]

    def list_metadata(self, namespace: str) -> list[str]:
        check_key("namespace", namespace)
        with self._lock:
            return sorted(key for ns, key in self._metadata if ns == namespace)

    def metadata_page(
        self, namespace: str, *, after_key: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, object] | None]]:
        check_key("namespace", namespace)
        if after_key is not None:
            check_key("after_key", after_key)
        check_limit(limit)
        with self._lock:
            keys = sorted(
                key
                for ns, key in self._metadata
                if ns == namespace and (after_key is None or key > after_key)
            )[:limit]
            rows = [(key, self._metadata[(namespace, key)]) for key in keys]
        return [(key, json_copy(data)) for key, data in rows]  # type: ignore[misc]

    def delete_metadata(self, namespace: str, key: str) -> bool:
        check_key("namespace", namespace)
        check_key("key", key)
        with self._lock:
            return self._metadata.pop((namespace, key), None) is not None

    def quarantine_metadata(self, namespace: str, key: str, to_namespace: str) -> bool:
        check_move(namespace, key, to_namespace)
        with self._lock:
            record = self._metadata.pop((namespace, key), None)
            if record is None:
                return False
            self._metadata[(to_namespace, key)] = record
            return True
