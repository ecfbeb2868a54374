"""``memory-summary demo``: a simulated multi-session chat server on a SQLite file."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from .exits import EXIT_OK
from .invocation import invocation
from .options import (
    CHECKS,
    add_llm_options,
    add_store_options,
    load_cli_config,
    summarizer_of,
)


def run_demo_command(args: argparse.Namespace) -> int:
    """Run the demo and print its report."""
    from memory_summary.demo import run_demo

    report = run_demo(
        Path(args.db or args.default_db),
        sessions=args.sessions,
        turns=args.turns,
        seed=args.seed,
        workers=args.workers,
        llm=summarizer_of(args),
        config=load_cli_config(args),
        progress=not args.quiet,
        force=args.force,
        command=invocation(),
    )
    print(report.render())
    return EXIT_OK


def add_demo_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add the ``demo`` sub-command."""
    demo = commands.add_parser(
        "demo",
        help="simulate a multi-session chat server on a SQLite file",
        description="Drive generated English and Chinese conversations (with tool "
        "calls) through one engine from a thread pool, then report what compression "
        "saved. The database is created afresh and marked as the demo's; an existing "
        "file is replaced only when an earlier demo created it (or with --force).",
    )
    add_store_options(demo, given, postgres=False)
    add_llm_options(demo, given)
    for name, text, builtin in (
        ("sessions", "concurrent sessions", 50),
        ("turns", "turns per session", 40),
        ("seed", "conversation seed", 7),
        ("workers", "host threads", 8),
    ):
        demo.add_argument(
            f"--{name}",
            type=CHECKS[name],
            default=given.get(name, builtin),
            help=f"{text} ({builtin})",
        )
    demo.add_argument("--quiet", action="store_true", help="no progress display")
    demo.add_argument(
        "--force",
        action="store_true",
        help="replace --db even when the demo did not create it",
    )
    demo.set_defaults(run=run_demo_command)
