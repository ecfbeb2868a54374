"""The stored summary record: the text plus what it covers.

Persisted through the store's metadata interface, namespace ``summary``, key = session
id (seed rule 7), as the plain mapping ``SummaryRecord.to_mapping`` returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

import attrs

from .errors import StoreError

NAMESPACE = "summary"


@attrs.frozen
class SummaryRecord:
    """A session's current summary.

    Invariant: every archived message with ``id <= covered_through_id`` was folded into
    ``text``. A trim-only degrade archives without touching the record, so messages it
    archived lie beyond ``covered_through_id``.

    Attributes:
        text: the summary.
        covered_through_id: the id of the last message folded into it.
        tokens: the summary's token count in the summary model's encoding.
        summarized_count: messages folded in, over the session's life.
        compressions: summarizer calls that produced this record's history.
        model: the summary model (or the summarizer's label when it is not an LLM).
        updated_at: seconds since the epoch.
    """

    text: str
    covered_through_id: int | None
    tokens: int
    summarized_count: int = 0
    compressions: int = 0
    model: str | None = None
    updated_at: float = 0.0

    def to_mapping(self) -> dict[str, object]:
        """Return the record as JSON-compatible metadata."""
        return attrs.asdict(self)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> SummaryRecord:
        """Read a record back from metadata.

        Raises:
            StoreError: the stored mapping is not a summary record.
        """
        text, tokens = data.get("text"), data.get("tokens")
        covered = data.get("covered_through_id")
        summarized = data.get("summarized_count", 0)
        compressions = data.get("compressions", 0)
        model, updated_at = data.get("model"), data.get("updated_at", 0.0)
        if (
            isinstance(text, str)
            and (covered is None or _is_int(covered))
            and _is_int(tokens)
            and _is_int(summarized)
            and _is_int(compressions)
            and (model is None or isinstance(model, str))
            and (_is_int(updated_at) or isinstance(updated_at, float))
        ):
            return cls(
                text=text,
                covered_through_id=covered,
                tokens=tokens,
                summarized_count=summarized,
                compressions=compressions,
                model=model,
                updated_at=float(updated_at),
            )
        raise StoreError(f"stored summary record is malformed: keys {sorted(data)}")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
