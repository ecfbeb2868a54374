"""The benchmark commands: ``facts`` (planted facts) and ``quality`` (LoCoMo replay)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping

from . import arg_types
from .exits import EXIT_FAILED, EXIT_OK
from .options import CHECKS, add_llm_options, load_cli_config


def run_facts_command(args: argparse.Namespace) -> int:
    """Run ``facts``: score planted facts; exit 4 when nothing compressed."""
    from memory_summary.quality.facts import LOCALES, Locale, run_facts
    from memory_summary.quality.hard_facts import HARD

    config = load_cli_config(args)
    llm = None
    if args.base_url or args.model:
        from memory_summary.adapters import OpenAIChatLLM

        llm = OpenAIChatLLM(
            args.model, base_url=args.base_url, context_tokens=args.context_tokens
        )
    locales: tuple[Locale, ...] = LOCALES if args.locale == "both" else (args.locale,)

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        report = run_facts(
            llm,
            seed=args.seed,
            conversations=args.conversations,
            locales=locales,
            config=config,
            progress=None if args.quiet else progress,
            generator=HARD if args.generator == "hard" else None,
        )
    except TimeoutError as exc:
        print(f"memory-summary: facts: {exc}", file=sys.stderr)
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
            "memory-summary: facts: no compression wrote a summary (the summarizer "
            "failed every time); the figures measure trimming only",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def run_quality_command(args: argparse.Namespace) -> int:
    """Run ``quality``: replay LoCoMo (or generated) conversations."""
    from memory_summary.quality.command import run_command

    llm = None
    if args.base_url or args.model:
        from memory_summary.adapters import OpenAIChatLLM

        llm = OpenAIChatLLM(args.model, base_url=args.base_url)
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


def add_facts_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add the ``facts`` sub-command."""
    facts = commands.add_parser(
        "facts",
        help="measure how many early facts the final summary keeps",
        description="Drive generated English and Chinese conversations (about 120 "
        "messages, twelve facts planted in the first 35: names, places, quantities, "
        "dates, ids, paths and URLs, decisions, constraints, tool outcomes) through "
        "the engine (threshold 30, keep_recent 10), and report per kind how many "
        "facts the final injected summary still holds.",
    )
    add_llm_options(facts, given)
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
    facts.add_argument("--json", action="store_true", help="print the report as JSON")
    facts.add_argument("--quiet", action="store_true", help="no progress lines")
    facts.add_argument(
        "--config",
        metavar="FILE",
        help="a TOML config file (its prompt and ratio apply; threshold, keep_recent "
        "and locale are the benchmark's)",
    )
    facts.set_defaults(run=run_facts_command)


def add_quality_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add the ``quality`` sub-command."""
    quality = commands.add_parser(
        "quality",
        help="measure how many answers of real conversations the summary keeps",
        description="Replay LoCoMo conversations (--data, default "
        "../shared/datasets/locomo/locomo-dev.json when present) through the engine "
        "with its defaults, and report per checkpoint, category and speaker the "
        "share of answers the history holds that the summary still contains, next "
        "to the lead, tail and keep-last baselines and a chance control.",
    )
    add_llm_options(quality, given)
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
        type=arg_types.budget_factor,
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
    quality.add_argument("--json", action="store_true", help="the report as JSON")
    quality.add_argument("--quiet", action="store_true", help="no progress lines")
    quality.add_argument("--config", metavar="FILE", help="a TOML config file")
    quality.set_defaults(run=run_quality_command)
