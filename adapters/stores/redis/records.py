"""The Redis store's memo of decoded records: each record's bytes decoded once.

The summary record is read before every model call, mostly unchanged since the last
read; decoding a long one (``json.loads`` of a megabyte) cost more than fetching it.
``DecodedRecords`` follows the rules of the SQL stores' memo of the same name: the
mapping kept is a function of the bytes kept with it, so a read whose bytes equal
them (compared whole: what the server holds now, whoever wrote it) needs no decoding.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from memory_summary.adapters.stores.rows import decode_record, json_copy

DECODED_BYTES = 4_000_000
"""The record bytes a ``DecodedRecords`` keeps the mappings of at most."""


class DecodedRecords:
    """The mapping of the record bytes last read, per (namespace, key).

    A read gives the bytes the server holds now; when they equal the bytes kept for
    the key (compared whole, a fraction of decoding's cost), the read gets a copy of
    the mapping kept with them (``json_copy``: containers copied, scalars shared).
    Any other bytes (another writer's, another process's, corruption) are decoded
    and kept instead; bytes that cannot be decoded raise as ``decode_record`` does
    and leave the memo as it was. Nothing is ever served that the server no longer
    holds: the comparison is with the bytes just read. Least recently used mappings
    go first once ``max_bytes`` (of their bytes) would be exceeded; a record larger
    than half of that is not kept.

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, max_bytes: int = DECODED_BYTES) -> None:
        self._max = max_bytes
        self._size = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict[
            tuple[str, str], tuple[bytes | str, dict[str, object]]
        ] = OrderedDict()

    def decoded(self, namespace: str, key: str, raw: object) -> dict[str, object]:
        """``decode_record(namespace, key, raw)``, decoding the same bytes once.

        Returns a mapping of the caller's own: never the one kept.

        Raises:
            MalformedRecord: see ``decode_record``.
        """
        if type(raw) is not bytes and type(raw) is not str:  # (str: a client of
            return decode_record(namespace, key, raw)  # yours that decodes replies)
        at = (namespace, key)
        with self._lock:
            kept = self._kept.get(at)
            if kept is not None:
                self._kept.move_to_end(at)
        if kept is not None and raw == kept[0]:
            return json_copy(kept[1])  # type: ignore[return-value]
        record = decode_record(namespace, key, raw)
        if len(raw) > self._max // 2:
            self.forget(namespace, key)
            return record
        with self._lock:
            before = self._kept.pop(at, None)
            if before is not None:
                self._size -= len(before[0])
            self._kept[at] = (raw, record)
            self._size += len(raw)
            while self._size > self._max:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._size -= len(dropped)
        return json_copy(record)  # type: ignore[return-value]

    def forget(self, namespace: str, key: str) -> None:
        """Drop what is kept for the key (its bytes are no longer worth keeping)."""
        with self._lock:
            before = self._kept.pop((namespace, key), None)
            if before is not None:
                self._size -= len(before[0])

    @property
    def size(self) -> int:
        """How many bytes (or characters) of record the kept mappings stand for."""
        with self._lock:
            return self._size
