"""The stored summary record: its text, what it covers, what was archived without it.

Persisted through the store's metadata interface, namespace ``summary``, key = session
id (seed rule 7), as the plain mapping ``SummaryRecord.to_mapping`` returns.

A stored row can hold anything, so ``read_record`` reads one without ever raising: a
poisoned row must not stall a session. It accepts

- our own shape (a mapping with ``"text"``); unknown extra keys are ignored, so a
  record written by a newer version still reads;
- the original plugin's shape ``{"summary": str, "coveredUpTo": int, "messageCount":
  int}``. Its ``coveredUpTo`` counts messages, not ids, so it is not trusted as an id:
  the record covers no id, and ``messageCount`` (when a sane count) becomes
  ``summarized_count``;

and returns ``Unreadable(reason)`` for anything else; the shell then moves the row to
``QUARANTINE_NAMESPACE``. A reason names keys and types, never stored text.

Counters and ids are ints in [0, 2**63) (``bool`` is not an int here), ``updated_at``
a finite number >= 0, and ``unsummarized`` a list of ``[first_id, last_id]`` pairs;
well-typed ranges that overlap or touch are merged on read, since their union is
their meaning.

``usage`` (the summarizer's totals, ``domain.usage``) is bookkeeping: a record
without it (written before it existed) or with a malformed one reads with no usage,
and its summary stays readable. So is ``native`` (a provider's compaction block,
``domain.native``): absent, or unreadable and dropped, the record reads without it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import TypeAlias, TypeGuard

import attrs

from .errors import MalformedRecord
from .native import NativeArtifact, read_native
from .text import normalize_text
from .usage import NO_USAGE, SummarizerUsage, read_usage

NAMESPACE = "summary"
QUARANTINE_NAMESPACE = "summary.quarantine"
MAX_INT = 2**63 - 1  # the largest id a SQL BIGINT holds
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}\Z")

IdRange: TypeAlias = tuple[int, int]
"""Inclusive message ids ``(first_id, last_id)``."""
IdRanges: TypeAlias = tuple[IdRange, ...]
"""Sorted, disjoint, non-adjacent inclusive id ranges."""


def _as_ranges(value: Iterable[Iterable[int]]) -> IdRanges:
    pairs: list[IdRange] = []
    for pair in value:
        first, last = pair
        pairs.append((first, last))
    return tuple(pairs)


def _check_ranges(
    instance: object, attribute: attrs.Attribute[IdRanges], value: IdRanges
) -> None:
    previous_last = -2
    for first, last in value:
        if not previous_last + 1 < first <= last:
            raise ValueError(
                f"unsummarized={value!r} is invalid; allowed: sorted, disjoint, "
                "non-adjacent (first_id, last_id) ranges with first_id <= last_id"
            )
        previous_last = last


@attrs.frozen
class SummaryRecord:
    """A session's current summary.

    Invariant: every archived message with ``id <= covered_through_id`` was folded into
    ``text``, except the ids in ``unsummarized``. A trim-only degrade archives without
    a summary and records the range it archived there.

    Attributes:
        text: the summary ("" when only trims happened so far).
        covered_through_id: the id of the last message folded into it.
        tokens: the summary's token count in the summary model's encoding.
        summarized_count: messages folded in, over the session's life.
        compressions: summarizer calls that produced this record's history.
        model: the summary model (or the summarizer's label when it is not an LLM).
        updated_at: seconds since the epoch.
        generation: an opaque fence token, new with every commit (the shell makes it).
        unsummarized: id ranges archived without a summary, oldest first.
        usage: the summarizer's tokens and time over the session's life, carried
            forward by every commit (and gone with the record on a clear or forget).
        native: the provider's own compaction block for ``text``, when a native
            summarizer wrote it (stored only when set).
    """

    text: str
    covered_through_id: int | None
    tokens: int
    summarized_count: int = 0
    compressions: int = 0
    model: str | None = None
    updated_at: float = 0.0
    generation: str | None = None
    unsummarized: IdRanges = attrs.field(
        default=(), converter=_as_ranges, validator=_check_ranges
    )
    usage: SummarizerUsage = NO_USAGE
    native: NativeArtifact | None = None

    def to_mapping(self) -> dict[str, object]:
        """Return the record as JSON-compatible metadata (ranges as lists)."""
        out = attrs.asdict(self, recurse=False)
        out["unsummarized"] = [list(pair) for pair in self.unsummarized]
        out["usage"] = self.usage.to_mapping()
        if self.native is None:
            del out["native"]
        else:
            out["native"] = self.native.to_mapping()
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> SummaryRecord:
        """Read a record back from metadata (``read_record``, raising).

        Raises:
            MalformedRecord: a ``StoreError``; the mapping is no summary record.
        """
        record = read_record(data)
        if not isinstance(record, SummaryRecord):
            reason = "no data" if record is None else record.reason
            raise MalformedRecord(f"stored summary record is unreadable: {reason}")
        return record


@attrs.frozen
class Unreadable:
    """A stored summary that is no record: ``reason`` names keys and types only."""

    reason: str


class _Malformed(Exception):
    """A field failed its check; ``read_record`` turns it into ``Unreadable``."""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return type(value).__name__


def _count(data: Mapping[object, object], key: str, default: int | None) -> int:
    """Return ``data[key]``, an int in [0, MAX_INT]; ``default`` None: required."""
    if key not in data:
        if default is None:
            raise _Malformed(f"{key!r} is missing")
        return default
    value = data[key]
    if not _is_int(value):
        raise _Malformed(f"{key!r} is {_kind(value)}, expected int")
    if not 0 <= value <= MAX_INT:
        raise _Malformed(f"{key!r} is out of range, expected int in [0, 2**63)")
    return value


def _optional_id(data: Mapping[object, object], key: str) -> int | None:
    return None if data.get(key) is None else _count(data, key, None)


def _optional_text(data: Mapping[object, object], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _Malformed(f"{key!r} is {_kind(value)}, expected str or null")


def _timestamp(data: Mapping[object, object], key: str) -> float:
    value = data.get(key, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Malformed(f"{key!r} is {_kind(value)}, expected a number")
    # float() of a huge int raises OverflowError: bound it first.
    if _is_int(value) and not 0 <= value <= MAX_INT:
        raise _Malformed(f"{key!r} is out of range, expected a number >= 0")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise _Malformed(f"{key!r} is not finite and >= 0")
    return number


def _ranges(data: Mapping[object, object], key: str) -> IdRanges:
    raw = data.get(key, ())
    if not isinstance(raw, (list, tuple)):
        raise _Malformed(f"{key!r} is {_kind(raw)}, expected a list of pairs")
    pairs: list[IdRange] = []
    for pair in raw:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise _Malformed(f"{key!r} holds {_kind(pair)}, expected [first, last]")
        first, last = pair
        if not (_is_int(first) and _is_int(last) and 0 <= first <= last <= MAX_INT):
            raise _Malformed(f"{key!r} holds a pair that is not ids first <= last")
        pairs.append((first, last))
    return _merged(pairs)


def _read_own(data: Mapping[object, object]) -> SummaryRecord:
    text = data["text"]
    if not isinstance(text, str):
        raise _Malformed(f"'text' is {_kind(text)}, expected str")
    model = _optional_text(data, "model")
    return SummaryRecord(
        text=normalize_text(text),
        covered_through_id=_optional_id(data, "covered_through_id"),
        tokens=_count(data, "tokens", None),
        summarized_count=_count(data, "summarized_count", 0),
        compressions=_count(data, "compressions", 0),
        model=None if model is None else normalize_text(model),
        updated_at=_timestamp(data, "updated_at"),
        generation=_optional_text(data, "generation"),
        unsummarized=_ranges(data, "unsummarized"),
        # usage is bookkeeping: a malformed value resets it, never the summary
        usage=read_usage(data.get("usage")),
        native=read_native(data.get("native")),  # a cache: unreadable, dropped
    )


def _read_plugin(data: Mapping[object, object]) -> SummaryRecord:
    text = data["summary"]
    if not isinstance(text, str):
        raise _Malformed(f"'summary' is {_kind(text)}, expected str")
    count = data.get("messageCount")
    # coveredUpTo counts messages, not ids: it is no id, so the record covers none.
    return SummaryRecord(
        text=normalize_text(text),
        covered_through_id=None,
        tokens=0,
        summarized_count=count if _is_int(count) and 0 <= count <= MAX_INT else 0,
    )


def _describe_keys(data: Mapping[object, object]) -> str:
    """Name up to six identifier-like keys; count the rest (they may be user text)."""
    names = sorted(
        repr(key) for key in data if isinstance(key, str) and _IDENTIFIER.match(key)
    )
    shown, rest = names[:6], len(data) - min(len(names), 6)
    return "[" + ", ".join([*shown, *([f"+{rest} more"] if rest else [])]) + "]"


def read_record(data: object) -> SummaryRecord | Unreadable | None:
    """Return the record stored as ``data``, ``Unreadable`` or None; never raise.

    >>> plugin = {"summary": "Likes tea.", "coveredUpTo": 4, "messageCount": 4}
    >>> read_record(plugin).summarized_count
    4
    >>> read_record({"summary": 5})
    Unreadable(reason="'summary' is int, expected str")
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        return Unreadable(f"expected a mapping, got {_kind(data)}")
    try:
        if "text" in data:
            return _read_own(data)
        if "summary" in data:
            return _read_plugin(data)
    except _Malformed as exc:
        return Unreadable(str(exc))
    return Unreadable(f"neither 'text' nor 'summary' among keys {_describe_keys(data)}")


def _merged(pairs: Iterable[IdRange]) -> IdRanges:
    out: list[IdRange] = []
    for first, last in sorted(pairs):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return tuple(out)


def add_unsummarized(
    ranges: Iterable[IdRange], first_id: int, last_id: int
) -> IdRanges:
    """Return ``ranges`` plus ``first_id..last_id``, merged where they overlap or touch.

    >>> add_unsummarized(((1, 3), (9, 9)), 4, 6)
    ((1, 6), (9, 9))
    """
    if first_id > last_id:
        raise ValueError(
            f"range {first_id}..{last_id} is invalid; allowed: first <= last"
        )
    return _merged([*ranges, (first_id, last_id)])


def drop_unsummarized_through(ranges: Iterable[IdRange], last_id: int) -> IdRanges:
    """Return ``ranges`` without ids <= ``last_id`` (a straddling range is cut).

    >>> drop_unsummarized_through(((1, 3), (5, 9)), 6)
    ((7, 9),)
    """
    return tuple(
        (max(first, last_id + 1), last) for first, last in ranges if last > last_id
    )


def trimmed_record(
    previous: SummaryRecord | None,
    *,
    first_id: int,
    last_id: int,
    generation: str,
    now: float,
) -> SummaryRecord:
    """Return the record after ``first_id..last_id`` was archived without a summary.

    seed: a failed summary still trims and keeps the previous summary untouched; the
    range is remembered so ``resummarized_record`` can fold it in later.
    """
    base = previous or SummaryRecord(text="", covered_through_id=None, tokens=0)
    return attrs.evolve(
        base,
        unsummarized=add_unsummarized(base.unsummarized, first_id, last_id),
        generation=generation,
        updated_at=now,
    )


def resummarized_record(
    previous: SummaryRecord,
    *,
    text: str,
    tokens: int,
    through_id: int,
    folded: int,
    model: str | None,
    generation: str,
    now: float,
) -> SummaryRecord:
    """Return the record after unsummarized ranges through ``through_id`` were folded.

    ``text`` replaces the summary, ``folded`` messages are counted in, and
    ``covered_through_id`` only moves forward.
    """
    if folded < 0:
        raise ValueError(f"folded={folded} is invalid; allowed: int >= 0")
    covered = previous.covered_through_id
    return attrs.evolve(
        previous,
        text=text,
        tokens=tokens,
        covered_through_id=through_id if covered is None else max(covered, through_id),
        unsummarized=drop_unsummarized_through(previous.unsummarized, through_id),
        summarized_count=previous.summarized_count + folded,
        compressions=previous.compressions + 1,
        model=model,
        generation=generation,
        updated_at=now,
        native=None,  # the text now holds what the block never saw
    )
