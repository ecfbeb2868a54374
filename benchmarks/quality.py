"""Real-conversation quality: the share of answers the final summary still holds.

Replays LoCoMo conversations (``../shared/datasets/locomo/locomo-dev.json`` when it is
there; never copied into the project) through the engine with its defaults and the
offline summarizer, at the default summary budget and at 4x, and scores the summary
against the lead-K, tail-K and keep-last-N baselines and a chance control
(``summary_quality``). Quick mode (CI) replays two conversations the project
generates itself (``summary_quality.synthetic``): it checks the shape of the
report, not the figures. Each run gives the ``redundancy`` of its final summaries
(``memory_summary.domain.redundancy``) and the headline per half of the shared
conversations (``halves``: tuned on conv-26 and conv-30, measured on the others); the
report adds the redundancy of the demo's summaries (``memory-summary demo``: 50
sessions of 40 turns, seed 7; quick: 6 sessions of 25 turns).

``python benchmarks/quality.py [--data PATH | --generated N] [--base-url URL --model M]
...`` runs the replay alone, with any summarizer and options (``--help``;
``summary_quality.command``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from summary_quality.benchmark import run_quality, table_rows
from summary_quality.command import build_quality_parser
from summary_quality.locomo import default_locomo_path, load_locomo, parse_locomo
from summary_quality.synthetic import generate_dialogue

from memory_summary.cli import main
from memory_summary.demo import run_demo

GENERATED = 2
DEMO = {"sessions": 50, "turns": 40}
QUICK_DEMO = {"sessions": 6, "turns": 25}


def demo_redundancy(quick: bool) -> dict:
    """Run the demo on a throw-away database; return its summaries' redundancy."""
    size = QUICK_DEMO if quick else DEMO
    with tempfile.TemporaryDirectory() as folder:
        report = run_demo(Path(folder) / "demo.sqlite3", progress=False, **size)
    return {**size, "seed": 7, "redundancy": report.redundancy}


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
    return [{"source": source, **report, "demo": demo_redundancy(quick)}]


def rows(results: list[dict]) -> list[dict]:
    """Return the printed table: each run's views, one column per kept text."""
    demo = results[0]["demo"]
    return [
        *table_rows(results[0]),
        {
            "budget": "demo",
            "view": f"redundancy, {demo['sessions']} sessions",
            **{
                text: f"{demo['redundancy']:.1%}" if text == "summary" else "-"
                for text in results[0]["texts"]
            },
        },
    ]


if __name__ == "__main__":
    sys.exit(main(build=build_quality_parser))
