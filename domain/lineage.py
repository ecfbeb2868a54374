"""Lineage: the summaries a session had, and which message ids each one folded.

Kept through the store's metadata interface, namespace ``VERSIONS_NAMESPACE``, key =
session id, as the mapping ``lineage_mapping`` returns::

    {"generation": "...",                       # a fence token, new with every write
     "versions": [{"version": 3, "first_id": 41, "last_id": 60,
                   "created_at": 1.7e9, "summary": "..."}, ...],  # oldest first
     "ranges": [[3, 41, 60], ...]}              # (version, first_id, last_id)

``versions`` holds the newest ``summary_versions_kept + 1`` summaries with their text;
``ranges`` keeps the id range of up to ``MAX_RANGES`` versions, so a search hit still
names the version that folded it after that version's text is gone. A version's
number is the summary record's ``compressions`` when it was written. A stored row
can hold anything: ``read_lineage`` never raises and reads what it cannot as empty.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import attrs

from .ports import EncodedRecord
from .recall import SummaryVersion
from .summary import MAX_INT, SummaryRecord
from .text import encodes_to_utf8, normalize_text

VERSIONS_NAMESPACE = "summary.versions"
MAX_RANGES = 10_000

VersionRange = tuple[int, int, int]
"""``(version, first_id, last_id)``, inclusive."""


@attrs.frozen
class Lineage:
    """A session's stored lineage (empty when none or unreadable)."""

    versions: tuple[SummaryVersion, ...] = ()
    ranges: tuple[VersionRange, ...] = ()
    generation: str | None = None

    def version_of(self, message_id: int) -> int | None:
        """Return the version whose compression folded ``message_id``, or None."""
        ranges = sorted(self.ranges, key=lambda r: r[1])
        at = bisect.bisect_right([r[1] for r in ranges], message_id) - 1
        if at >= 0 and ranges[at][1] <= message_id <= ranges[at][2]:
            return ranges[at][0]
        return None


def _is_id(value: object) -> bool:
    return (
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INT
    )


def _version(entry: object) -> SummaryVersion | None:
    if not isinstance(entry, Mapping):
        return None
    number, first, last = (
        entry.get("version"),
        entry.get("first_id"),
        entry.get("last_id"),
    )
    created, text = entry.get("created_at", 0.0), entry.get("summary", "")
    if not _is_id(number) or not isinstance(text, str):
        return None
    if (first is None) != (last is None):
        return None
    if first is not None and not (_is_id(first) and _is_id(last) and first <= last):
        return None
    if isinstance(created, bool) or not isinstance(created, (int, float)):
        return None
    if not math.isfinite(created) or created < 0:
        return None
    # a foreign writer's lone surrogate or NUL: normalized, as the record's text is,
    # or every later write of the lineage (which keeps this text) would be refused
    summary = normalize_text(text)
    return SummaryVersion(number, first, last, float(created), summary)  # type: ignore[arg-type]


def reads_back(version: SummaryVersion) -> bool:
    """Tell whether ``read_lineage`` reads ``version``, once written, as itself.

    >>> reads_back(SummaryVersion(2, 3, 9, 0.5, "Facts"))
    True
    >>> reads_back(SummaryVersion(2, 9, 3, 0.5, "Facts"))  # an empty range: left out
    False
    """
    return _version(_version_mapping(version)) == version


def _is_array(value: object) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """A JSON array: a list, or a tuple a foreign writer kept."""
    return isinstance(value, (list, tuple))


def read_lineage(data: object) -> Lineage:
    """Return the lineage stored as ``data``; what cannot be read is left out."""
    if not isinstance(data, Mapping):
        return Lineage()
    generation = data.get("generation")
    raw_versions = data.get("versions")
    raw_ranges = data.get("ranges")
    versions = [
        v
        for v in map(_version, raw_versions if _is_array(raw_versions) else ())
        if v is not None
    ]
    ranges: list[VersionRange] = [
        (item[0], item[1], item[2])
        for item in (raw_ranges if _is_array(raw_ranges) else ())
        if _is_array(item)
        and len(item) == 3
        and all(_is_id(x) for x in item)
        and item[1] <= item[2]
    ]
    return Lineage(
        tuple(versions),
        tuple(ranges),
        generation if isinstance(generation, str) else None,
    )


def with_version(
    lineage: Lineage, version: SummaryVersion, *, kept: int
) -> tuple[tuple[SummaryVersion, ...], tuple[VersionRange, ...]]:
    """Return the versions and ranges after ``version`` was written.

    Earlier entries with the same or a higher number (left by a cleared summary) go.
    """
    versions = [v for v in lineage.versions if v.version < version.version]
    versions = [*versions, version][-(kept + 1) :]
    ranges = [r for r in lineage.ranges if r[0] < version.version]
    if version.first_id is not None and version.last_id is not None:
        ranges.append((version.version, version.first_id, version.last_id))
    return tuple(versions), tuple(ranges[-MAX_RANGES:])


def _version_mapping(v: SummaryVersion) -> dict[str, object]:
    return {
        "version": v.version,
        "first_id": v.first_id,
        "last_id": v.last_id,
        "created_at": v.created_at,
        "summary": v.summary,
    }


def lineage_mapping(
    versions: Sequence[SummaryVersion],
    ranges: Sequence[VersionRange],
    generation: str,
) -> dict[str, object]:
    """Return the JSON-compatible mapping a lineage is stored as."""
    return {
        "generation": generation,
        "versions": [_version_mapping(v) for v in versions],
        "ranges": list(map(list, ranges)),
    }


def version_json(version: SummaryVersion) -> str:
    """Return the JSON of one version's entry, as ``encoded_lineage`` joins them.

    Raises:
        ValueError: a value JSON cannot express (``created_at`` not finite).
    """
    return json.dumps(_version_mapping(version), ensure_ascii=False, allow_nan=False)


def encoded_lineage(
    versions: Sequence[SummaryVersion],
    ranges: Sequence[VersionRange],
    generation: str,
    entries: Sequence[str],
    *,
    entries_utf8: bool = False,
) -> EncodedRecord:
    """Return ``lineage_mapping``'s record with its JSON, from each version's JSON.

    ``entries`` holds ``version_json(v)`` for each of ``versions``, in order: a
    version's entry made once is reused by every later write that keeps it, so a
    write encodes only its new version, not every kept summary's text again.
    ``entries_utf8``: each entry is known to encode to UTF-8 (``encodes_to_utf8``);
    the record then says its JSON does (``utf8_safe``), and no store scans the
    whole text for lone surrogates at each commit.

    >>> v = SummaryVersion(1, 3, 9, 0.5, "Facts: …")
    >>> record = encoded_lineage([v], [(1, 3, 9)], "g1", [version_json(v)])
    >>> record.json_text == json.dumps(record, ensure_ascii=False)
    True
    """
    mapping = lineage_mapping(versions, ranges, generation)
    head = json.dumps({"generation": generation}, ensure_ascii=False)[:-1]
    listed = ", ".join(entries)
    tail = json.dumps(mapping["ranges"])
    text = f'{head}, "versions": [{listed}], "ranges": {tail}}}'
    # the ranges are integers: ASCII; the head holds the generation
    safe = entries_utf8 and encodes_to_utf8(head)
    return EncodedRecord(mapping, text, utf8_safe=safe)


def summary_versions(
    record: SummaryRecord | None, lineage: Lineage, *, kept: int
) -> list[SummaryVersion]:
    """Return the session's summaries, oldest first, the current one last.

    The current summary comes from ``record`` (it is always there when a summary
    is); up to ``kept`` earlier ones from the lineage. Without a record (cleared,
    forgotten or never written) there is none.
    """
    if record is None:
        return []
    number = record.compressions
    stored = {v.version: v for v in lineage.versions}
    earlier = sorted(
        (v for v in stored.values() if v.version < number), key=lambda v: v.version
    )
    out = earlier[-kept:] if kept else []
    if record.text:
        mine = stored.get(number)
        out.append(
            SummaryVersion(
                number,
                None if mine is None else mine.first_id,
                None if mine is None else mine.last_id,
                record.updated_at,
                record.text,
                current=True,
            )
        )
    return out
