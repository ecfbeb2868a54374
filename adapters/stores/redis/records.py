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
from collections.abc import Mapping

from memory_summary.adapters.stores.rows import decode_record, json_copy, plain_copy
from memory_summary.domain import EncodedRecord

DECODED_BYTES = 4_000_000
"""The record bytes a ``DecodedRecords`` keeps the mappings of at most (encoded
bytes: the mappings kept take several times that in memory)."""

FEW_CONTAINERS = 16
"""A record of at most this many ``[`` and ``{`` is kept whatever its size."""

BYTES_PER_CONTAINER = 128
"""A record of more is kept only with at least this many bytes per ``[`` or ``{``.

A hit copies every list and dict in Python (several thousand instructions each) while
``json.loads`` builds one in C for about as many as it takes for a few hundred bytes of
text: a lineage of 2,000 ranges (a list each, 20 bytes apiece) cost 1.4 times its
decoding to copy, a text-heavy summary a thirtieth. Brackets inside strings count too
(the rule only errs towards decoding)."""


class DecodedRecords:
    """The mapping of the record bytes last read, per (namespace, key).

    A read gives the bytes the server holds now; when they equal the bytes kept for
    the key (compared whole, a fraction of decoding's cost), the read gets a copy of
    the mapping kept with them (``json_copy``: containers copied, scalars shared).
    Any other bytes (another writer's, another process's, corruption) are decoded
    and kept instead; bytes that cannot be decoded raise as ``decode_record`` does
    and leave the memo as it was. Nothing is ever served that the server no longer
    holds: the comparison is with the bytes just read. A record the store writes as
    an ``EncodedRecord`` (the lineage a commit attaches) is kept as written
    (``wrote``, under the UTF-8 bytes of its JSON, what the server returns): the
    next read of those bytes decodes nothing. Least recently used mappings
    go first once ``max_bytes`` (of their bytes) would be exceeded; a record larger
    than half of that is not kept, nor one of many containers for its size (over
    ``FEW_CONTAINERS`` and fewer than ``BYTES_PER_CONTAINER`` bytes per ``[`` or
    ``{``: copying its lists and dicts would cost more than decoding them).

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, max_bytes: int = DECODED_BYTES) -> None:
        self._max = max_bytes
        self._size = 0
        self._lock = threading.Lock()
        self._kept: OrderedDict[
            tuple[str, str], tuple[bytes | str, Mapping[str, object]]
        ] = OrderedDict()

    def wrote(self, namespace: str, key: str, text: str, record: object) -> None:
        """Keep ``record`` as the mapping of ``text``, just written at the key.

        Only an ``EncodedRecord`` whose JSON is ``text``: it is what decoding that
        text gives (and cannot change). Any other record is left for the next read
        to decode.
        """
        if type(record) is not EncodedRecord or (
            record.json_text is not text and record.json_text != text
        ):
            return
        self._keep((namespace, key), text.encode("utf-8"), record)

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
            return plain_copy(kept[1])
        record = decode_record(namespace, key, raw)
        if not self._keep(at, raw, record):
            return record
        return json_copy(record)  # type: ignore[return-value]

    def _worth_keeping(self, raw: bytes | str) -> bool:
        """Whether a hit on ``raw`` would cost less than decoding it (and fits)."""
        size = len(raw)
        if size > self._max // 2:
            return False
        allowed = max(FEW_CONTAINERS, size // BYTES_PER_CONTAINER)
        return not _many_containers(raw, allowed)

    def _keep(
        self, at: tuple[str, str], raw: bytes | str, record: Mapping[str, object]
    ) -> bool:
        """Keep ``record`` as the mapping of ``raw``; whether it was kept."""
        if not self._worth_keeping(raw):
            self.forget(*at)
            return False
        with self._lock:
            before = self._kept.pop(at, None)
            if before is not None:
                self._size -= len(before[0])
            self._kept[at] = (raw, record)
            self._size += len(raw)
            while self._size > self._max:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._size -= len(dropped)
        return True

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


def _many_containers(raw: bytes | str, allowed: int) -> bool:
    """Whether ``raw`` holds more than ``allowed`` ``[`` and ``{``.

    Lists and dicts at most: brackets in strings count too (the rule errs towards
    decoding).

    ``find`` scans at C speed (``count`` of one byte cost half of decoding text), and
    the search ends at the first bracket over ``allowed``.
    """
    brackets = (b"[", b"{") if isinstance(raw, bytes) else ("[", "{")
    for bracket in brackets:
        at = raw.find(bracket)  # type: ignore[arg-type]
        while at >= 0:
            allowed -= 1
            if allowed < 0:
                return True
            at = raw.find(bracket, at + 1)  # type: ignore[arg-type]
    return False
