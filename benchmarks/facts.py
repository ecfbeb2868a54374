"""Fact retention: the share of early facts the final injected summary still holds.

Generated English and Chinese conversations (``summary_quality.facts``) plant twelve
facts of nine kinds in their first 35 messages and never repeat them (the harder
generator, ``summary_quality.hard_facts``, adds facts the assistant states,
corrected values, a code deep in a long message and a tool result's second line);
each runs through the engine (threshold 30, keep_recent 10) twice: with the offline
summarizer, and with a forgetful one that answers the same generic sentence every
time, so that what it keeps is what pinned facts (``pin_facts``) re-attach; the
harder conversations run with the offline summarizer. Figures are counts, not
timings: retained/planted per kind and locale, the final summary's tokens against its
budget, compressions and summarizer calls.

``python benchmarks/run.py --only facts`` runs the three reports below;
``python benchmarks/facts.py [--base-url URL --model M] [--generator hard] ...`` runs
one, with any summarizer and options (``--help``; ``summary_quality.command``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from summary_quality.command import build_facts_parser
from summary_quality.facts import run_facts, table_rows
from summary_quality.hard_facts import HARD

from memory_summary import Message
from memory_summary.cli import main

QUICK_CONVERSATIONS = 2  # per locale
FULL_CONVERSATIONS = 4
GENERIC = "The user and the assistant had a long and friendly conversation."


class ForgetfulSummarizer:
    """Answers one generic sentence whatever it is asked: it keeps no fact itself."""

    label = "forgetful (a generic sentence; what stays was pinned)"

    def context_length(self, model: str | None = None) -> int:
        return 16_384

    def complete(self, messages: Sequence[Message], **_: object) -> str:
        return GENERIC


def run(quick: bool) -> list[dict]:
    """Run every locale's conversations with the offline, then a forgetful summarizer.

    Returns three reports: the offline summarizer's, the forgetful one's, and the
    offline summarizer's on the harder conversations (``hard_facts``).
    """
    conversations = QUICK_CONVERSATIONS if quick else FULL_CONVERSATIONS
    reports = []
    for llm in (None, ForgetfulSummarizer()):
        report = run_facts(
            llm,
            conversations=conversations,
            progress=lambda line: print(f"  {line}", flush=True),
        )
        reports.append(report.to_mapping())
    hard = run_facts(
        None,
        conversations=conversations,
        generator=HARD,
        progress=lambda line: print(f"  hard {line}", flush=True),
    )
    reports.append(hard.to_mapping())
    return reports


def rows(results: list[dict]) -> list[dict]:
    """Return the printed table: retained/planted per kind, locale and summarizer."""
    table = []
    names = ("offline", "forgetful+pins", "offline (hard)")
    for report, name in zip(results, names, strict=False):
        table += [{"summarizer": name, **row} for row in table_rows(report)]
    return table


if __name__ == "__main__":
    sys.exit(main(build=build_facts_parser))
