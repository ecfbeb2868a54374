"""The former name of ``compression`` (deprecated): kept for imports not moved yet."""

from __future__ import annotations

from .folding import (
    OVERSIZED_SUFFIX,
    SEPARATOR_TEXTS,
    SKIP_REASONS,
    FoldChunk,
    Outcome,
    OutcomeCode,
    OutcomeKind,
    SkipReason,
    compacted,
    fold_chunks,
    next_record,
    separator_message,
)

__all__ = [
    "OVERSIZED_SUFFIX",
    "SEPARATOR_TEXTS",
    "SKIP_REASONS",
    "FoldChunk",
    "Outcome",
    "OutcomeCode",
    "OutcomeKind",
    "SkipReason",
    "compacted",
    "fold_chunks",
    "next_record",
    "separator_message",
]
