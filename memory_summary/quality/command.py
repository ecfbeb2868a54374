"""``memory-summary quality``: the real-conversation benchmark from the command line.

Reads LoCoMo conversations from ``--data`` (default: ``default_locomo_path``), or
replays conversations the project generates (``--generated N``), and prints the
benchmark's table (``benchmark.table_rows``) or its JSON report.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memory_summary.domain import Summarizer, SummaryConfig

from .benchmark import run_quality, table_rows
from .locomo import DatePrefix, LocomoError, default_locomo_path, load_locomo
from .locomo import parse_locomo as _parse
from .synthetic import generate_dialogue
from .text_table import render_table

EXIT_OK, EXIT_FAILED, EXIT_SKIPPED = 0, 1, 0


def run_command(
    *,
    data: str | None,
    generated: int,
    limit: int | None,
    budget_factors: list[float],
    dates: DatePrefix,
    as_json: bool,
    quiet: bool,
    llm: Summarizer | None,
    config: SummaryConfig | None,
) -> int:
    """Run the benchmark as the CLI asked; return the exit code."""
    if generated:
        source = "generated"
        conversations = _parse(
            [generate_dialogue(7, index) for index in range(generated)],
            source="generated",
        )
    else:
        path = Path(data) if data else default_locomo_path()
        if path is None:
            print(
                "memory-summary: quality: no LoCoMo data (pass --data PATH, or "
                "--generated N for generated chats); skipped",
                file=sys.stderr,
            )
            return EXIT_SKIPPED
        try:
            conversations = load_locomo(path)
        except (OSError, LocomoError) as exc:
            print(f"memory-summary: quality: {exc}", file=sys.stderr)
            return EXIT_FAILED
        source = str(path)
    conversations = conversations[:limit] if limit else conversations
    if not conversations:
        print("memory-summary: quality: no conversation to replay", file=sys.stderr)
        return EXIT_FAILED

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    report = run_quality(
        conversations,
        llm=llm,
        config=config,
        budget_factors=budget_factors,
        dates=dates,
        progress=None if quiet else progress,
    )
    report = {"source": source, **report}
    if as_json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print(
            f"summary quality: {report['summarizer']}, {source}, "
            f"{len(conversations)} conversation(s), threshold "
            f"{report['threshold']}, keep_recent {report['keep_recent']}"
        )
        print(render_table(table_rows(report), indent=""))
    return EXIT_OK
