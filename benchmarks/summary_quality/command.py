"""The two benchmark commands: ``benchmarks/facts.py`` and ``benchmarks/quality.py``.

``facts`` scores planted facts; ``quality`` replays LoCoMo conversations from
``--data`` (default: ``default_locomo_path``), or conversations the project generates
(``--generated N``), and prints the benchmark's table (``benchmark.table_rows``) or its
JSON report. Each runs through ``memory_summary.cli.main``, so the options (and their
defaults from a config file's ``[memory_summary.cli]`` table), the error reports and the
exit codes are the command line's: 2 usage; 3 for data that cannot be replayed (a
missing or unreadable file, not JSON, not LoCoMo's shape, no conversation); 4 when the
summarizer failed every call of a run (the figures then measure trimming only; the
report is still printed) or no compression wrote a summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory_summary.cli import arg_types
from memory_summary.cli.exits import EXIT_CONFIG, EXIT_FAILED, EXIT_OK
from memory_summary.cli.options import (
    CHECKS,
    add_llm_options,
    load_cli_config,
    summarizer_of,
)
from memory_summary.domain import Summarizer, SummaryConfig

from .benchmark import run_quality, table_rows
from .facts import LOCALES, Locale, run_facts
from .hard_facts import HARD
from .locomo import DatePrefix, LocomoError, default_locomo_path, load_locomo
from .locomo import parse_locomo as _parse
from .synthetic import generate_dialogue
from .text_table import render_table

EXIT_SKIPPED = EXIT_OK  # no data found where none was named: nothing to measure
MAX_BUDGET_FACTOR = 1000.0  # past it the summary budget is the whole context anyway
budget_factor = arg_types.positive_number(MAX_BUDGET_FACTOR)
"""Parse a summary budget multiple: a finite number in ``(0, MAX_BUDGET_FACTOR]``."""


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_facts_command(args: argparse.Namespace) -> int:
    """Run ``facts``: score planted facts; exit 4 when nothing compressed."""
    config = load_cli_config(args)
    llm = summarizer_of(args, context_tokens=args.context_tokens)
    locales: tuple[Locale, ...] = LOCALES if args.locale == "both" else (args.locale,)
    try:
        report = run_facts(
            llm,
            seed=args.seed,
            conversations=args.conversations,
            locales=locales,
            config=config,
            progress=None if args.quiet else _progress,
            generator=HARD if args.generator == "hard" else None,
        )
    except TimeoutError as exc:
        print(f"facts: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if llm is not None:
            llm.close()
    if args.json:
        print(json.dumps(report.to_mapping(), ensure_ascii=False, indent=2))
    else:
        print(report.render())
    if report.compressions == 0:
        print(
            "facts: no compression wrote a summary (the summarizer failed every "
            "time); the figures measure trimming only",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def run_quality_command(args: argparse.Namespace) -> int:
    """Run ``quality``: replay LoCoMo (or generated) conversations."""
    llm = summarizer_of(args)
    try:
        return run_command(
            data=args.data,
            generated=args.generated,
            limit=args.conversations,
            budget_factors=args.budget_factors,
            dates=args.dates,
            as_json=args.json,
            quiet=args.quiet,
            llm=llm,
            config=load_cli_config(args),
        )
    finally:
        if llm is not None:
            llm.close()


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
    """Run the real-conversation benchmark as asked; return the exit code."""
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
                "quality: no LoCoMo data (pass --data PATH, or --generated N for "
                "generated chats); skipped",
                file=sys.stderr,
            )
            return EXIT_SKIPPED
        try:
            conversations = load_locomo(path)
        except OSError as exc:
            print(
                f"quality: cannot read {path}: {exc.strerror or exc}", file=sys.stderr
            )
            return EXIT_CONFIG
        except LocomoError as exc:
            print(f"quality: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        source = str(path)
    conversations = conversations[:limit] if limit else conversations
    if not conversations:
        print(f"quality: {source}: no conversation to replay", file=sys.stderr)
        return EXIT_CONFIG
    report = run_quality(
        conversations,
        llm=llm,
        config=config,
        budget_factors=budget_factors,
        dates=dates,
        progress=None if quiet else _progress,
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
                f"quality: {what} failed, every one (the summarizer failed; see the "
                "log): the figures measure trimming only",
                file=sys.stderr,
            )
            code = EXIT_FAILED
        else:
            print(f"quality: {what} failed (trimmed instead)", file=sys.stderr)
    return code


def _parser(
    name: str, description: str, given: Mapping[str, object]
) -> argparse.ArgumentParser:
    """Return a command's parser with the options both share."""
    parser = argparse.ArgumentParser(
        prog=f"python benchmarks/{name}.py",
        description=description,
        epilog="exit codes: 0 done, 2 usage, 3 bad configuration or input, "
        "4 the operation failed",
    )
    add_llm_options(parser, given)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def build_facts_parser(
    defaults: Mapping[str, object] | None = None,
) -> argparse.ArgumentParser:
    """Return the parser of ``benchmarks/facts.py``.

    ``defaults``: the config file's ``[memory_summary.cli]`` values (``base_url``,
    ``model``, ``seed``).
    """
    given = dict(defaults or {})
    facts = _parser(
        "facts",
        "Drive generated English and Chinese conversations (about 120 messages, "
        "twelve facts planted in the first 35: names, places, quantities, dates, ids, "
        "paths and URLs, decisions, constraints, tool outcomes) through the engine "
        "(threshold 30, keep_recent 10), and report per kind how many facts the "
        "final injected summary still holds.",
        given,
    )
    facts.add_argument(
        "--context-tokens",
        type=arg_types.whole_number(1),
        default=None,
        help="the endpoint's context window, when its model listing does not say "
        "(llama.cpp); default: the listing, else 4096",
    )
    facts.add_argument(
        "--seed",
        type=CHECKS["seed"],
        default=given.get("seed", 7),
        help="conversation seed (7)",
    )
    facts.add_argument(
        "--conversations",
        type=arg_types.whole_number(1, 1000),
        default=4,
        help="conversations per locale (4)",
    )
    facts.add_argument(
        "--locale", choices=("en", "zh", "both"), default="both", help="(both)"
    )
    facts.add_argument(
        "--generator",
        choices=("standard", "hard"),
        default="standard",
        help="hard: also facts the assistant states, corrected values, a code deep "
        "in a long message and a tool result's second line (standard)",
    )
    facts.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML config file (its prompt and ratio apply; threshold, keep_recent "
        "and locale are the benchmark's)",
    )
    facts.set_defaults(run=run_facts_command)
    return facts


def build_quality_parser(
    defaults: Mapping[str, object] | None = None,
) -> argparse.ArgumentParser:
    """Return the parser of ``benchmarks/quality.py``.

    ``defaults``: the config file's ``[memory_summary.cli]`` values (``base_url``,
    ``model``).
    """
    quality = _parser(
        "quality",
        "Replay LoCoMo conversations (--data, default "
        "../shared/datasets/locomo/locomo-dev.json when present) through the engine "
        "with its defaults, and report per checkpoint, category and speaker the "
        "share of answers the history holds that the summary still contains, next "
        "to the lead, tail and keep-last baselines and a chance control.",
        dict(defaults or {}),
    )
    quality.add_argument("--data", metavar="PATH", help="a LoCoMo JSON file")
    quality.add_argument(
        "--generated",
        type=arg_types.whole_number(0, 100),
        default=0,
        help="replay this many generated chats instead of LoCoMo (0)",
    )
    quality.add_argument(
        "--conversations",
        type=arg_types.whole_number(1, 1000),
        default=None,
        help="replay only the first N conversations (all)",
    )
    quality.add_argument(
        "--budget-factors",
        type=budget_factor,
        nargs="+",
        default=[1, 4],
        help="summary budgets as multiples of the configured one (1 4)",
    )
    quality.add_argument(
        "--dates",
        choices=("session", "every", "none"),
        default="session",
        help="where session dates appear in the replayed text (session)",
    )
    quality.add_argument("--config", metavar="FILE", help="a TOML config file")
    quality.set_defaults(run=run_quality_command)
    return quality
