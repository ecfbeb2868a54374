"""The commands on one session of a store: ``inspect``, ``compress`` and ``clear``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from memory_summary.domain import find_safe_cut
from memory_summary.domain.window import group_starts
from memory_summary.stats import usage_line
from memory_summary.terminal_text import shown

from . import arg_types
from .console import history_table, print_table, table_console
from .exits import EXIT_FAILED, EXIT_OK, UnknownSession
from .invocation import invocation
from .options import (
    add_llm_options,
    add_store_options,
    load_cli_config,
    open_store,
    summarizer_of,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from memory_summary.adapters.stores.sql.core import SqlStore
    from memory_summary.domain import Message, SummaryConfig
    from memory_summary.engine import SummaryEngine


def check_known_session(
    store: SqlStore, session_id: str, engine: SummaryEngine
) -> None:
    """Refuse a session id the store has no message and no summary of."""
    if store.get_full_history(session_id, 1) or engine.summary(session_id):
        return
    raise UnknownSession(
        f"no session {session_id!r} in this store; `{invocation()} sessions` lists them"
    )


def run_inspect(args: argparse.Namespace) -> int:
    """Print a session's history, summary and unsummarized ranges."""
    from memory_summary.engine import SummaryEngine

    config = load_cli_config(args)
    store = open_store(args)
    try:
        engine = SummaryEngine(store, config=config)
        check_known_session(store, args.session, engine)
        active = store.get_history(args.session)
        full = store.get_full_history(args.session)
        record = engine.summary(args.session)
        engine.stop()
    finally:
        store.close()
    archived = len(full) - len(active)
    print(f"session {shown(args.session)}: {len(active)} active, {archived} archived")
    if record is None:
        print("summary: none")
    else:
        print(
            f"summary: covers messages through id {record.covered_through_id}, "
            f"generation {record.generation or '-'}, "
            f"{record.tokens} tokens, {record.compressions} summarizer call(s), "
            f"by {shown(record.model or '-')}"
        )
        print(usage_line(record.usage))
        for line in record.text.splitlines():
            print(f"  | {shown(line)}")
    pending = record.unsummarized if record is not None else ()
    if pending:
        ranges = ", ".join(f"{first}-{last}" for first, last in pending)
        print(
            f"unsummarized: ids {ranges} were archived without a summary during a "
            f"summarizer outage; the next compression (or `{invocation()} compress`) "
            "folds them in"
        )
    print()
    console = table_console()
    width = console.width if console.is_terminal else None
    print_table(console, history_table(active[-args.limit :], width))
    return EXIT_OK


def run_compress(args: argparse.Namespace) -> int:
    """Compress a session now and print the outcome."""
    from memory_summary.engine import SummaryEngine

    config = load_cli_config(args)
    llm = summarizer_of(args)
    store = open_store(args)
    try:
        with SummaryEngine(store, llm, config=config) as engine:
            check_known_session(store, args.session, engine)
            try:
                outcome = engine.compress(args.session).result(timeout=args.timeout)
            except (TimeoutError, FutureTimeout):
                print(
                    f"memory-summary: compress: session {shown(args.session)} did not "
                    f"finish within --timeout {args.timeout:g} s",
                    file=sys.stderr,
                )
                return EXIT_FAILED
        detail = outcome.detail
        if outcome.code == "nothing_to_fold":
            detail = nothing_to_fold(store.get_history(args.session), config)
    finally:
        store.close()
    print(
        f"session {shown(args.session)}: {outcome.kind} ({shown(detail)}); "
        f"archived {outcome.archived}, folded {outcome.summarized}"
    )
    return EXIT_OK if outcome.ok else EXIT_FAILED


def nothing_to_fold(history: Sequence[Message], config: SummaryConfig) -> str:
    """Say why no message of ``history`` (a session's active one) could be folded.

    The compression's outcome says ``nothing_to_fold``; this names what holds the
    messages: ``keep_recent`` (or ``keep_recent_tokens``) alone, or a tool-call group
    (an assistant's calls and their results, never split) that reaches from the
    oldest messages into the kept ones.
    """
    messages = [m for m in history if not m.is_instruction]  # context, never folded
    keep = max(config.keep_recent, 1)
    said = "nothing to compress"
    if len(messages) <= keep:
        return (
            f"{said}: {len(messages)} active message(s), and keep_recent keeps the "
            f"newest {config.keep_recent}"
        )
    first_kept = len(messages) - keep
    if find_safe_cut(messages, keep) > 0:
        return (
            f"{said}: keep_recent_tokens={config.keep_recent_tokens} keeps every "
            "active message"
        )
    starts = group_starts(messages)
    start = starts[first_kept]
    members = [i for i, s in enumerate(starts) if s == start]
    if start == 0 and len(members) > 1:
        return (
            f"{said}: messages {messages[0].id} to {messages[members[-1]].id} are one "
            f"tool-call group (an assistant's tool calls and their {len(members) - 1} "
            f"result(s)) that reaches into the newest {config.keep_recent} messages "
            "kept (keep_recent); a group is never split, so it folds once newer "
            "messages push all of it out of the kept part"
        )
    return f"{said}: no cut before the newest {config.keep_recent} messages is safe"


def run_clear(args: argparse.Namespace) -> int:
    """Clear one session's summary or every one."""
    from memory_summary.engine import SummaryEngine

    config = load_cli_config(args)
    store = open_store(args)
    try:
        engine = SummaryEngine(store, config=config)
        results = engine.clear(
            "all" if args.all else "session", args.session, args.types
        )
        engine.stop()
    finally:
        store.close()
    if not results:
        print("skipped: --types does not include summary")
    for result in results:
        status = "ok" if result.success else "FAILED"
        print(f"{shown(result.source)}: {status}: {shown(result.message)}")
    return EXIT_OK if all(r.success for r in results) else EXIT_FAILED


def add_store_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add ``inspect``, ``compress`` and ``clear``."""
    inspect = commands.add_parser(
        "inspect",
        help="show a session's history and summary",
        description="Print a session's counts of active and archived messages, its "
        "summary (what it covers, its tokens, the summarizer calls and time it took), "
        "the ranges archived without a summary, and its newest active messages. "
        "Nothing is changed.",
    )
    inspect.add_argument("session", type=arg_types.session_id)
    inspect.add_argument(
        "--limit",
        type=arg_types.whole_number(1),
        default=30,
        help="active messages shown (30)",
    )
    add_store_options(inspect, given)
    inspect.set_defaults(run=run_inspect)

    compress = commands.add_parser(
        "compress",
        help="compress a session now",
        description="Compress one session now, as engine.compress(SESSION) does: fold "
        "its older active messages into the summary (with the offline summarizer, or "
        "the model at --base-url) and archive them; the newest keep_recent stay "
        "active. Prints the outcome; exit 4 when it failed or degraded.",
    )
    compress.add_argument("session", type=arg_types.session_id)
    compress.add_argument(
        "--timeout",
        type=arg_types.seconds,
        default=given.get("timeout", 300.0),
        help="seconds to wait (300)",
    )
    add_store_options(compress, given)
    add_llm_options(compress, given)
    compress.set_defaults(run=run_compress)

    clear = commands.add_parser(
        "clear",
        help="clear summaries (one session or --all)",
        description="Delete the summary record of one session (or of every one with "
        "--all): the summary, its earlier versions and the summarizer usage it "
        "carried, which stats reports. The active history and the archive stay; the "
        "next compression starts a new summary from the active messages.",
    )
    which = clear.add_mutually_exclusive_group(required=True)
    which.add_argument("session", nargs="?", type=arg_types.session_id)
    which.add_argument("--all", action="store_true", help="every session's summary")
    clear.add_argument(
        "--types",
        type=arg_types.memory_types,
        help="comma-separated memory types of a unified clear; skips without 'summary'",
    )
    add_store_options(clear, given)
    clear.set_defaults(run=run_clear)
