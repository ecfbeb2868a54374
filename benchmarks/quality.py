"""Real-conversation quality: the share of answers the final summary still holds.

Replays LoCoMo conversations (``../shared/datasets/locomo/locomo-dev.json`` when it is
there; never copied into the project) through the engine with its defaults and the
offline summarizer, at the default summary budget and at 4x, and scores the summary
against the lead-K, tail-K and keep-last-N baselines and a chance control
(``memory_summary.quality``). Quick mode (CI) replays two conversations the project
generates itself (``memory_summary.quality.synthetic``): it checks the shape of the
report, not the figures.
"""

from __future__ import annotations

from memory_summary.quality.benchmark import run_quality, table_rows
from memory_summary.quality.locomo import default_locomo_path, load_locomo, parse_locomo
from memory_summary.quality.synthetic import generate_dialogue

GENERATED = 2


def _conversations(quick: bool) -> tuple[str, list]:
    path = None if quick else default_locomo_path()
    if path is None:
        if not quick:
            print("  quality: no LoCoMo data at ../shared/datasets/locomo: generated")
        data = [generate_dialogue(7, index) for index in range(GENERATED)]
        return "generated", parse_locomo(data, source="generated")
    return str(path), load_locomo(path)


def run(quick: bool) -> list[dict]:
    """Replay the conversations at the default budget and at 4x; one report."""
    source, conversations = _conversations(quick)
    report = run_quality(
        conversations, progress=lambda line: print(f"  {line}", flush=True)
    )
    return [{"source": source, **report}]


def rows(results: list[dict]) -> list[dict]:
    """Return the printed table: each run's views, one column per kept text."""
    return table_rows(results[0])
