"""The ``memory-summary`` command line.

Exit codes, the same for every sub-command: 0 done; 2 usage (an unknown, conflicting
or meaningless argument); 3 bad configuration or input (a config file or variable, a
missing database, a database that cannot be opened as a store: an unreachable or
malformed DSN, a missing or foreign schema, a newer release; an unknown session; a
database the demo would not replace, a missing extra); 4 the operation failed (a store
or summarizer error, a timeout, a failed clear); 130 interrupted. Nothing prints a
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from rich.console import Console
from rich.table import Table

from memory_summary import __version__
from memory_summary.config_file import (
    DSN_VARIABLE,
    ENV_PREFIX,
    cli_defaults,
    load_config,
    raise_all,
)
from memory_summary.domain import (
    ConfigError,
    MemorySummaryError,
    Message,
    MessageError,
    StoreUnavailable,
    Summarizer,
    SummaryConfig,
    TokenizerError,
)
from memory_summary.domain.errors import ConfigErrors

from . import cli_args
from .sqlite_file import check_store_database
from .stats import collect_stats, stats_json, stats_table, usage_line

if TYPE_CHECKING:
    from memory_summary.adapters.sql import SqlStore

    from .engine import SummaryEngine

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_FAILED = 4
EXIT_INTERRUPTED = 130
DEFAULT_DB = "memory-summary-demo.sqlite3"
DEFAULT_SCHEMA = "memory_summary"
_CONNECT_TIMEOUT_S = 5.0
_PIPED_WIDTH = 4096  # columns of a table printed to a pipe or a file


def invocation() -> str:
    """Return a command that runs this program from the user's shell.

    ``memory-summary`` when that name on the PATH is this program; else the full
    path of the script (say ``.venv/bin/memory-summary`` of an inactive venv); else
    ``python -m memory_summary`` with this interpreter.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    name = Path(argv0).name
    if name.startswith("memory-summary"):
        found = shutil.which(name)
        if found and Path(found).resolve() == Path(argv0).resolve():
            return "memory-summary"
        script = Path(shutil.which(argv0) or argv0)
        if script.is_file():
            return shlex.quote(str(script.absolute()))
    beside = Path(sys.executable).parent / "memory-summary"
    found = shutil.which("memory-summary")
    if found and beside.is_file() and Path(found).resolve() == beside.resolve():
        return "memory-summary"
    if beside.is_file():
        return shlex.quote(str(beside))
    return f"{shlex.quote(sys.executable)} -m memory_summary"


def _load_config(args: argparse.Namespace) -> SummaryConfig:
    return load_config(args.config, cli_options=CLI_OPTIONS)


def _config_check(args: argparse.Namespace) -> int:
    config = load_config(args.file, cli_options=CLI_OPTIONS)
    values = config.to_mapping()
    if args.json:
        print(json.dumps(values, ensure_ascii=False, indent=2))
        return EXIT_OK
    source = args.file or "defaults"
    print(f"configuration OK ({source}, with {ENV_PREFIX}* overrides)")
    width = max(map(len, values))
    for name, value in values.items():
        print(f"  {name:<{width}}  {json.dumps(value, ensure_ascii=False)}")
    return EXIT_OK


def _summarizer(args: argparse.Namespace) -> Summarizer | None:
    if not args.base_url and not args.model:
        return None  # the offline extractive summarizer
    from memory_summary.adapters import OpenAIChatLLM

    return OpenAIChatLLM(args.model, base_url=args.base_url)


def _open_db(args: argparse.Namespace) -> SqlStore:
    """Open the store the arguments name: ``--db``, else ``--dsn`` or its variable.

    Only an existing store of this library is opened: nothing is created, installed
    or changed (no SQLite file, no PostgreSQL schema or tables).

    Raises:
        ConfigError: the SQLite file does not exist or is not a memory-summary
            database.
        StoreUnavailable: the database cannot be reached, the schema does not
            exist or holds no store of ours, or it is from a newer release.
    """
    dsn = None if args.db else (args.dsn or os.environ.get(DSN_VARIABLE))
    if dsn:
        from memory_summary.adapters import PostgresStore

        return PostgresStore(
            dsn, schema=args.schema, create=False, timeout_s=_CONNECT_TIMEOUT_S
        )
    path = Path(args.db or args.default_db)
    check_store_database(
        path, f"run `{invocation()} demo`, or pass --dsn for PostgreSQL"
    )
    from memory_summary.adapters import SqliteStore

    return SqliteStore(path)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    report = run_demo(
        Path(args.db or args.default_db),
        sessions=args.sessions,
        turns=args.turns,
        seed=args.seed,
        workers=args.workers,
        llm=_summarizer(args),
        config=_load_config(args),
        progress=not args.quiet,
        force=args.force,
        command=invocation(),
    )
    print(report.render())
    return EXIT_OK


def _console() -> Console:
    """Return the console tables print to: a pipe or file gets every column.

    On a terminal a table fits its width; elsewhere (``stats > usage.txt``) no
    terminal bounds the line, so columns are never cut to a guessed 80.
    """
    console = Console(soft_wrap=False, highlight=False, emoji=False, markup=False)
    if not console.is_terminal:
        console.width = _PIPED_WIDTH
    return console


class UnknownSession(Exception):
    """The session id names no session of the store (exit 3)."""


def _known_session(store: SqlStore, session_id: str, engine: SummaryEngine) -> None:
    """Refuse a session id the store has no message and no summary of."""
    if store.get_full_history(session_id, 1) or engine.summary(session_id):
        return
    raise UnknownSession(
        f"no session {session_id!r} in this store; `{invocation()} sessions` lists them"
    )


def _history_table(messages: Sequence[Message], width: int) -> Table:
    """Return one row per message, the content cut to fit ``width`` columns."""
    table = Table(
        title="active history", title_justify="left", box=None, padding=(0, 1)
    )
    id_width = max((len(str(m.id)) for m in messages), default=2)
    content_width = max(20, width - id_width - 9 - 6)
    table.add_column("id", justify="right", no_wrap=True, width=id_width)
    table.add_column("role", no_wrap=True, width=9)
    table.add_column(
        "content", no_wrap=True, overflow="ellipsis", max_width=content_width
    )
    for message in messages:
        text = " ".join(message.text.split())
        if message.tool_calls:
            text = ", ".join(
                f"{c.name}({c.arguments[:40]})" for c in message.tool_calls
            )
        table.add_row(str(message.id), message.role, text[:200])
    return table


def _inspect(args: argparse.Namespace) -> int:
    from .engine import SummaryEngine

    config = _load_config(args)
    store = _open_db(args)
    try:
        engine = SummaryEngine(store, config=config)
        _known_session(store, args.session, engine)
        active = store.get_history(args.session)
        full = store.get_full_history(args.session)
        record = engine.summary(args.session)
        engine.stop()
    finally:
        store.close()
    archived = len(full) - len(active)
    print(f"session {args.session}: {len(active)} active, {archived} archived")
    if record is None:
        print("summary: none")
    else:
        print(
            f"summary: covers messages through id {record.covered_through_id}, "
            f"generation {record.generation or '-'}, "
            f"{record.tokens} tokens, {record.compressions} summarizer call(s), "
            f"by {record.model}"
        )
        print(usage_line(record.usage))
        for line in record.text.splitlines():
            print(f"  | {line}")
    pending = record.unsummarized if record is not None else ()
    if pending:
        ranges = ", ".join(f"{first}-{last}" for first, last in pending)
        print(
            f"unsummarized: ids {ranges} were archived without a summary during a "
            f"summarizer outage; the next compression (or `{invocation()} compress`) "
            "folds them in"
        )
    print()
    console = _console()
    console.print(_history_table(active[-args.limit :], min(console.width, 200)))
    return EXIT_OK


def _compress(args: argparse.Namespace) -> int:
    from .engine import SummaryEngine

    config = _load_config(args)
    llm = _summarizer(args)
    store = _open_db(args)
    try:
        with SummaryEngine(store, llm, config=config) as engine:
            _known_session(store, args.session, engine)
            try:
                outcome = engine.compress(args.session).result(timeout=args.timeout)
            except (TimeoutError, FutureTimeout):
                print(
                    f"memory-summary: compress: session {args.session} did not finish "
                    f"within --timeout {args.timeout:g} s",
                    file=sys.stderr,
                )
                return EXIT_FAILED
    finally:
        store.close()
    print(
        f"session {args.session}: {outcome.kind} ({outcome.detail}); "
        f"archived {outcome.archived}, folded {outcome.summarized}"
    )
    return EXIT_OK if outcome.ok else EXIT_FAILED


def _clear(args: argparse.Namespace) -> int:
    from .engine import SummaryEngine

    config = _load_config(args)
    store = _open_db(args)
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
        print(
            f"{result.source}: {'ok' if result.success else 'FAILED'}: {result.message}"
        )
    return EXIT_OK if all(r.success for r in results) else EXIT_FAILED


def _stats(args: argparse.Namespace) -> int:
    store = _open_db(args)
    try:
        stats = collect_stats(store)
    finally:
        store.close()
    if args.json:
        print(json.dumps(stats_json(stats), indent=2, ensure_ascii=False))
        return EXIT_OK
    if not stats.sessions:
        print("no summary record yet: nothing was compressed")
        return EXIT_OK
    _console().print(stats_table(stats, limit=args.limit))
    print(usage_line(stats.total))
    return EXIT_OK


def _sessions(args: argparse.Namespace) -> int:
    store = _open_db(args)
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
        print(json.dumps({"sessions": rows}, ensure_ascii=False, indent=2))
        return EXIT_OK
    table = Table(box=None, padding=(0, 1))
    table.add_column("session", no_wrap=True)
    table.add_column("active", justify="right")
    table.add_column("archived", justify="right")
    for sid, active, archived in found:
        table.add_row(sid, f"{active:,}", f"{archived:,}")
    _console().print(table)
    more = " (--limit reached)" if len(found) == args.limit else ""
    print(f"{len(found)} sessions{more}")
    return EXIT_OK


def _sessions_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    sessions = commands.add_parser(
        "sessions",
        help="list the sessions of a store",
        description="List the sessions that hold messages, in order of their ids, "
        "with how many messages are active and archived.",
    )
    sessions.add_argument(
        "--limit",
        type=cli_args.whole_number(1),
        default=1000,
        help="sessions listed (1000)",
    )
    sessions.add_argument("--json", action="store_true", help="print them as JSON")
    _common(sessions, given)
    sessions.set_defaults(run=_sessions)


def _stats_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    stats = commands.add_parser(
        "stats",
        help="summarizer usage per session and in total",
        description="What compaction cost: the summarizer's input and output "
        "tokens (reported by the provider, or counted), calls and time per session, "
        "costliest first, and the total of all sessions.",
    )
    stats.add_argument(
        "--limit",
        type=cli_args.whole_number(1),
        default=20,
        help="sessions shown (20); the total counts all",
    )
    stats.add_argument("--json", action="store_true", help="every session as JSON")
    _common(stats, given)
    stats.set_defaults(run=_stats)


def _facts(args: argparse.Namespace) -> int:
    from .facts import LOCALES, Locale, run_facts
    from .quality.hard_facts import HARD

    config = _load_config(args)
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


def _quality(args: argparse.Namespace) -> int:
    from .quality.command import run_command

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
            config=_load_config(args),
        )
    finally:
        if llm is not None:
            llm.close()


def _common(
    parser: argparse.ArgumentParser,
    defaults: Mapping[str, object],
    *,
    postgres: bool = True,
) -> None:
    """Add ``--db``, ``--config`` and, with ``postgres``, ``--dsn`` and ``--schema``."""
    db = str(defaults.get("db", DEFAULT_DB))
    parser.set_defaults(default_db=db)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        type=cli_args.text_option,
        help=f"SQLite database (default: {db})",
    )
    if postgres:
        where.add_argument(
            "--dsn",
            type=cli_args.text_option,
            default=defaults.get("dsn"),
            help=f"a PostgreSQL DSN (default: ${DSN_VARIABLE}); --db wins over "
            "the variable; needs the 'postgres' extra",
        )
        parser.add_argument(
            "--schema",
            type=cli_args.text_option,
            default=defaults.get("schema", DEFAULT_SCHEMA),
            help=f"the PostgreSQL schema ({DEFAULT_SCHEMA})",
        )
    parser.add_argument("--config", metavar="FILE", help="a TOML config file")


def _llm_options(
    parser: argparse.ArgumentParser, defaults: Mapping[str, object]
) -> None:
    parser.add_argument(
        "--base-url",
        type=cli_args.text_option,
        default=defaults.get("base_url"),
        help="an OpenAI-compatible endpoint (default: the offline summarizer; needs "
        "the 'openai' extra)",
    )
    parser.add_argument(
        "--model",
        type=cli_args.text_option,
        default=defaults.get("model"),
        help="the summary model at --base-url",
    )


# The numeric options and their checks, shared by argparse and config defaults.
CHECKS: dict[str, Callable[[str], object]] = {
    "sessions": cli_args.whole_number(1, 10_000),
    "turns": cli_args.whole_number(1, 10_000),
    "workers": cli_args.whole_number(1, 256),
    "seed": cli_args.any_whole_number,
    "timeout": cli_args.seconds,
}


def _demo_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    demo = commands.add_parser(
        "demo",
        help="simulate a multi-session chat server on a SQLite file",
        description="Drive generated English and Chinese conversations (with tool "
        "calls) through one engine from a thread pool, then report what compression "
        "saved. The database is created afresh and marked as the demo's; an existing "
        "file is replaced only when an earlier demo created it (or with --force).",
    )
    _common(demo, given, postgres=False)
    _llm_options(demo, given)
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
    demo.set_defaults(run=_demo)


def _store_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    inspect = commands.add_parser(
        "inspect", help="show a session's history and summary"
    )
    inspect.add_argument("session", type=cli_args.session_id)
    inspect.add_argument(
        "--limit",
        type=cli_args.whole_number(1),
        default=30,
        help="active messages shown (30)",
    )
    _common(inspect, given)
    inspect.set_defaults(run=_inspect)

    compress = commands.add_parser("compress", help="compress a session now")
    compress.add_argument("session", type=cli_args.session_id)
    compress.add_argument(
        "--timeout",
        type=cli_args.seconds,
        default=given.get("timeout", 300.0),
        help="seconds to wait (300)",
    )
    _common(compress, given)
    _llm_options(compress, given)
    compress.set_defaults(run=_compress)

    clear = commands.add_parser("clear", help="clear summaries (one session or --all)")
    which = clear.add_mutually_exclusive_group(required=True)
    which.add_argument("session", nargs="?", type=cli_args.session_id)
    which.add_argument("--all", action="store_true", help="every session's summary")
    clear.add_argument(
        "--types",
        type=cli_args.memory_types,
        help="comma-separated memory types of a unified clear; skips without 'summary'",
    )
    _common(clear, given)
    clear.set_defaults(run=_clear)


def _facts_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    facts = commands.add_parser(
        "facts",
        help="measure how many early facts the final summary keeps",
        description="Drive generated English and Chinese conversations (about 120 "
        "messages, twelve facts planted in the first 35: names, places, quantities, "
        "dates, ids, paths and URLs, decisions, constraints, tool outcomes) through "
        "the engine (threshold 30, keep_recent 10), and report per kind how many "
        "facts the final injected summary still holds.",
    )
    _llm_options(facts, given)
    facts.add_argument(
        "--context-tokens",
        type=cli_args.whole_number(1),
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
        type=cli_args.whole_number(1, 1000),
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
    facts.set_defaults(run=_facts)


def _quality_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    given: Mapping[str, object],
) -> None:
    quality = commands.add_parser(
        "quality",
        help="measure how many answers of real conversations the summary keeps",
        description="Replay LoCoMo conversations (--data, default "
        "../shared/datasets/locomo/locomo-dev.json when present) through the engine "
        "with its defaults, and report per checkpoint, category and speaker the "
        "share of answers the history holds that the summary still contains, next "
        "to the lead, tail and keep-last baselines and a chance control.",
    )
    _llm_options(quality, given)
    quality.add_argument("--data", metavar="PATH", help="a LoCoMo JSON file")
    quality.add_argument(
        "--generated",
        type=cli_args.whole_number(0, 100),
        default=0,
        help="replay this many generated chats instead of LoCoMo (0)",
    )
    quality.add_argument(
        "--conversations",
        type=cli_args.whole_number(1, 1000),
        default=None,
        help="replay only the first N conversations (all)",
    )
    quality.add_argument(
        "--budget-factors",
        type=float,
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
    quality.set_defaults(run=_quality)


def build_parser(
    defaults: Mapping[str, object] | None = None,
) -> argparse.ArgumentParser:
    """Return the argument parser of every sub-command.

    ``defaults`` (from the config file's ``[memory_summary.cli]`` table and the
    ``MEMORY_SUMMARY_CLI_*`` variables) replace the built-in defaults.
    """
    given = dict(defaults or {})
    parser = argparse.ArgumentParser(
        prog="memory-summary",
        description="Keep long chat conversations inside their context window.",
        epilog="exit codes: 0 done, 2 usage, 3 bad configuration or input, "
        "4 the operation failed",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    config = commands.add_parser("config", help="inspect the configuration")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION")
    check = config_commands.add_parser(
        "check",
        help="validate a TOML config file and print the effective values",
        description=(
            "Validate FILE (TOML; fields at the top level or under [memory_summary]) "
            f"plus {ENV_PREFIX}<FIELD> variables, and print the effective values."
        ),
    )
    check.add_argument("file", nargs="?", help="the TOML file (default: none)")
    check.add_argument("--json", action="store_true", help="print the values as JSON")
    check.set_defaults(run=_config_check)
    _demo_parser(commands, given)
    _store_parsers(commands, given)
    _sessions_parser(commands, given)
    _stats_parser(commands, given)
    _facts_parser(commands, given)
    _quality_parser(commands, given)
    return parser


CLI_OPTIONS: dict[str, type] = {
    "db": str,
    "dsn": str,
    "schema": str,
    "sessions": int,
    "turns": int,
    "seed": int,
    "workers": int,
    "base_url": str,
    "model": str,
    "timeout": float,
}


def _checked_defaults(config_path: str | None) -> dict[str, object]:
    """Return the command-line defaults of the config file and environment.

    Raises:
        ConfigError: an unknown option, a wrong type or an out-of-range value (all
            of them at once).
    """
    defaults = cli_defaults(config_path, CLI_OPTIONS)
    errors: list[ConfigError] = []
    for name, value in defaults.items():
        check = CHECKS.get(name, cli_args.text_option)
        try:
            cli_args.check_default(name, value, check)
        except argparse.ArgumentTypeError as exc:
            allowed = str(exc).rpartition("allowed: ")[2]
            errors.append(ConfigError(f"cli.{name}", value, allowed))
    raise_all(errors)
    return defaults


def _errors_of(exc: ConfigError) -> tuple[ConfigError, ...]:
    return exc.errors if isinstance(exc, ConfigErrors) else (exc,)


def _with_field_errors(exc: ConfigError, config_path: str | None) -> ConfigError:
    """Return ``exc`` joined by the config fields' own errors: all are reported."""
    errors = list(_errors_of(exc))
    try:
        load_config(config_path, cli_options=CLI_OPTIONS)
    except ConfigError as fields:
        seen = {str(error) for error in errors}
        errors += [e for e in _errors_of(fields) if str(e) not in seen]
    return errors[0] if len(errors) == 1 else ConfigErrors(tuple(errors))


def _error(exc: BaseException) -> None:
    errors = _errors_of(exc) if isinstance(exc, ConfigError) else (exc,)
    for error in errors:
        print(f"memory-summary: error: {error}", file=sys.stderr)


class _UsageError(Exception):
    """The first pass over the arguments met a usage error."""


class _SilentParser(argparse.ArgumentParser):
    """Finds ``--config`` before the full parser exists; reports nothing itself."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | int:
    """Return the parsed arguments, or the exit code when parsing ended the run."""
    pre = _SilentParser(add_help=False)
    pre.add_argument("--config")
    try:
        config_path = pre.parse_known_args(argv)[0].config
    except _UsageError:  # the full parser below says what is wrong
        config_path = None
    try:
        defaults = _checked_defaults(config_path)
    except ConfigError as exc:
        _error(_with_field_errors(exc, config_path))
        return EXIT_CONFIG
    try:
        return build_parser(defaults).parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    args = _parse(argv)
    if isinstance(args, int):
        return args
    run = getattr(args, "run", None)
    if run is None:
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = run(args)
    except (ConfigError, MessageError, TokenizerError) as exc:
        _error(exc)
        return EXIT_CONFIG
    except StoreUnavailable as exc:
        print(f"memory-summary: error: cannot open the store: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except UnknownSession as exc:
        _error(exc)
        return EXIT_CONFIG
    except MemorySummaryError as exc:  # a store or summarizer failed
        _error(exc)
        return EXIT_FAILED
    except ImportError as exc:  # an optional extra is not installed
        _error(exc)
        return EXIT_CONFIG
    except BrokenPipeError:  # the reader (say, `head`) went away: not our error
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        _error(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("memory-summary: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
