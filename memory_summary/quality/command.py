"""``memory-summary quality``: the real-conversation benchmark from the command line.

Reads LoCoMo conversations from ``--data`` (default: ``default_locomo_path``), or
replays conversations the project generates (``--generated N``), and prints the
benchmark's table (``benchmark.table_rows``) or its JSON report. Exits as every
command does: 3 for data that cannot be replayed (a missing or unreadable file, not
JSON, not LoCoMo's shape, no conversation), 4 when the summarizer failed every call
of a run (the figures then measure trimming only; the report is still printed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from memory_summary.cli.exits import EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from memory_summary.domain import Summarizer, SummaryConfig

from .benchmark import run_quality, table_rows
from .locomo import DatePrefix, LocomoError, default_locomo_path, load_locomo
from .locomo import parse_locomo as _parse
from .synthetic import generate_dialogue
from .text_table import render_table

EXIT_SKIPPED = EXIT_OK  # no data found where none was named: nothing to measure


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
        except OSError as exc:
            print(
                f"memory-summary: quality: cannot read {path}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_CONFIG
        except LocomoError as exc:
            print(f"memory-summary: quality: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        source = str(path)
    conversations = conversations[:limit] if limit else conversations
    if not conversations:
        print(
            f"memory-summary: quality: {source}: no conversation to replay",
            file=sys.stderr,
        )
        return EXIT_CONFIG

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
    return _judged(report["runs"])


def _judged(runs: list[dict[str, Any]]) -> int:
    """Say on stderr which runs lost summarizer calls; 4 when one lost every call."""
    code = EXIT_OK
    for run in runs:
        calls, failures = run["summarizer_calls"], run["summarizer_failures"]
        if not failures:
            continue
        what = f"x{run['budget_factor']:g}: {failures} of {calls} summarizer call(s)"
        if failures == calls:
            print(
                f"memory-summary: quality: {what} failed, every one (the summarizer "
                "failed; see the log): the figures measure trimming only",
                file=sys.stderr,
            )
            code = EXIT_FAILED
        else:
            print(
                f"memory-summary: quality: {what} failed (trimmed instead)",
                file=sys.stderr,
            )
    return code
