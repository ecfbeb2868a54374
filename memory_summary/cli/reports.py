"""The read-only reports of a store: ``sessions`` and ``stats``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from rich.table import Table

from memory_summary.stats import collect_stats, stats_json, stats_table, usage_line
from memory_summary.terminal_text import json_shown, shown

from . import arg_types
from .console import print_table, table_console
from .exits import EXIT_OK
from .options import add_store_options, open_store

if TYPE_CHECKING:
    from memory_summary.domain import SessionCountingStore

_STATS_SHOWN = 20  # sessions in the stats table when --limit is not given
_PAGE = 500  # sessions read per query


def run_stats(args: argparse.Namespace) -> int:
    """Print the summarizer usage per session and in total.

    The usage lives in the summary records, which ``clear`` deletes with the
    summaries while the archive stays: archived messages no record accounts for are
    reported as such, so a store whose summaries were cleared never reads as one
    where nothing was compressed.
    """
    store = open_store(args)
    try:
        stats = collect_stats(store)
        accounted = {
            s.session_id: s.summarized + s.unsummarized for s in stats.sessions
        }
        unaccounted = [
            archived - accounted.get(sid, 0)
            for sid, _, archived in _every_session(store)
            if archived > accounted.get(sid, 0)
        ]
    finally:
        store.close()
    archived = sum(unaccounted)
    without = (
        f"{archived:,} archived message(s) in {len(unaccounted):,} session(s) that no "
        "summary record accounts for: their summaries were cleared (`clear` deletes a "
        "summary with the usage it carries; the archive stays)"
    )
    if args.json:
        data = stats_json(stats, limit=args.limit)
        data["archived_unaccounted"] = {
            "sessions": len(unaccounted),
            "messages": archived,
        }
        print(json_shown(data))
        return EXIT_OK
    if not stats.sessions:
        if unaccounted:
            print(f"no summary record, so no usage to report: {without}")
        else:
            print("no summary record yet: nothing was compressed")
        return EXIT_OK
    console = table_console()
    print_table(console, stats_table(stats, limit=args.limit or _STATS_SHOWN))
    print(usage_line(stats.total))
    if unaccounted:
        print(f"not counted: {without}")
    return EXIT_OK


def _every_session(
    store: SessionCountingStore,
) -> Iterator[tuple[str, int, int]]:
    """Yield every session of ``store`` with its active and archived counts."""
    after: str | None = None
    while True:
        page = store.session_counts(after=after, limit=_PAGE)
        yield from page
        if len(page) < _PAGE:
            return
        after = page[-1][0]


def run_sessions(args: argparse.Namespace) -> int:
    """Print the sessions of the store with their message counts."""
    store = open_store(args)
    try:
        found: list[tuple[str, int, int]] = []
        after: str | None = None
        while len(found) < args.limit:
            page = store.session_counts(after=after, limit=min(500, args.limit))
            found += page
            if len(page) < min(500, args.limit):
                break
            after = page[-1][0]
    finally:
        store.close()
    found = found[: args.limit]
    if args.json:
        rows = [{"session_id": s, "active": a, "archived": r} for s, a, r in found]
        print(json_shown({"sessions": rows}))
        return EXIT_OK
    table = Table(box=None, padding=(0, 1))
    table.add_column("session", no_wrap=True)
    table.add_column("active", justify="right")
    table.add_column("archived", justify="right")
    for sid, active, archived in found:
        table.add_row(shown(sid), f"{active:,}", f"{archived:,}")
    print_table(table_console(), table)
    more = " (--limit reached)" if len(found) == args.limit else ""
    print(f"{len(found)} sessions{more}")
    return EXIT_OK


def _add_report_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
    name: str,
    texts: tuple[str, str, str, str],
    limit: int | None,
    run: Callable[[argparse.Namespace], int],
) -> None:
    """Add a report: ``texts`` are its help, description, --limit and --json helps."""
    help_text, description, limit_help, json_help = texts
    parser = commands.add_parser(name, help=help_text, description=description)
    parser.add_argument(
        "--limit", type=arg_types.whole_number(1), default=limit, help=limit_help
    )
    parser.add_argument("--json", action="store_true", help=json_help)
    add_store_options(parser, given)
    parser.set_defaults(run=run)


def add_sessions_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add the ``sessions`` sub-command."""
    texts = (
        "list the sessions of a store",
        "List the sessions that hold messages, in order of their ids, "
        "with how many messages are active and archived.",
        "sessions listed (1000)",
        "print them as JSON",
    )
    _add_report_parser(commands, given, "sessions", texts, 1000, run_sessions)


def add_stats_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    """Add the ``stats`` sub-command."""
    texts = (
        "summarizer usage per session and in total",
        "What compression cost: the summarizer's input and output "
        "tokens (reported by the provider, or counted), calls and time per session, "
        "costliest first, and the total of all sessions.",
        f"sessions shown, costliest first (the table: {_STATS_SHOWN}; JSON: every "
        "one); the total counts all",
        "print it as JSON",
    )
    _add_report_parser(commands, given, "stats", texts, None, run_stats)
