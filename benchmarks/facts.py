"""Fact retention: the share of early facts the final injected summary still holds.

Generated English and Chinese conversations (``memory_summary.facts``) plant twelve
facts of nine kinds in their first 35 messages and never repeat them; each runs through
the engine (threshold 30, keep_recent 10) with the offline summarizer. Figures are
counts, not timings: retained/planted per kind and locale, the final summary's tokens
against its budget, compressions and summarizer calls.
"""

from __future__ import annotations

from memory_summary.facts import run_facts, table_rows

QUICK_CONVERSATIONS = 2  # per locale
FULL_CONVERSATIONS = 4


def run(quick: bool) -> list[dict]:
    """Run the conversations of every locale; one result: the whole report."""
    report = run_facts(
        conversations=QUICK_CONVERSATIONS if quick else FULL_CONVERSATIONS,
        progress=lambda line: print(f"  {line}", flush=True),
    )
    return [report.to_mapping()]


def rows(results: list[dict]) -> list[dict]:
    """Return the printed table: retained/planted per kind, per locale and overall."""
    return table_rows(results[0])
