"""The suite's hypothesis strategies, shipped in the kit: ``memory_summary.testing``."""

from __future__ import annotations

from memory_summary.testing.strategies import (
    HOSTILE_PIECES,
    MAX_ID,
    RECORD_KEYS,
    bodies,
    clean_texts,
    content_parts,
    histories,
    id_ranges,
    json_like,
    json_scalars,
    normalized,
    openai_messages,
    snippets,
    summary_records,
    texts,
    usages,
)

__all__ = [
    "HOSTILE_PIECES",
    "MAX_ID",
    "RECORD_KEYS",
    "bodies",
    "clean_texts",
    "content_parts",
    "histories",
    "id_ranges",
    "json_like",
    "json_scalars",
    "normalized",
    "openai_messages",
    "snippets",
    "summary_records",
    "texts",
    "usages",
]
