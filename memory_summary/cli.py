"""The ``memory-summary`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from memory_summary import __version__
from memory_summary.adapters import SqliteStore
from memory_summary.config_file import ENV_PREFIX, cli_defaults, load_config
from memory_summary.domain import ConfigError, MemorySummaryError, Summarizer

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_FAILED = 4


def _config_check(args: argparse.Namespace) -> int:
    config = load_config(args.file)
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


DEFAULT_DB = "memory-summary-demo.sqlite3"


def _summarizer(args: argparse.Namespace) -> Summarizer | None:
    if not args.base_url and not args.model:
        return None  # the offline extractive summarizer
    from memory_summary.adapters import OpenAIChatLLM

    return OpenAIChatLLM(args.model, base_url=args.base_url)


def _open_db(args: argparse.Namespace) -> SqliteStore:
    path = Path(args.db)
    if not path.exists():
        raise ConfigError(
            "--db", str(path), "an existing database (run `memory-summary demo`)"
        )
    return SqliteStore(path)


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    report = run_demo(
        Path(args.db),
        sessions=args.sessions,
        turns=args.turns,
        seed=args.seed,
        workers=args.workers,
        llm=_summarizer(args),
        config=load_config(args.config),
        progress=not args.quiet,
    )
    print(report.render())
    return EXIT_OK


def _inspect(args: argparse.Namespace) -> int:
    from .demo import message_row
    from .engine import SummaryEngine

    store = _open_db(args)
    try:
        engine = SummaryEngine(store, config=load_config(args.config))
        active = store.get_history(args.session)
        full = store.get_full_history(args.session)
        record = engine.summary(args.session)
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
            for line in record.text.splitlines():
                print(f"  | {line}")
        pending = record.unsummarized if record is not None else ()
        if pending:
            ranges = ", ".join(f"{first}-{last}" for first, last in pending)
            print(
                f"unsummarized: ids {ranges} were archived without a summary during a "
                "summarizer outage; the next compression (or `compress`) folds them in"
            )
        print(f"\n{'id':>7}  {'role':<9}  content (active history)")
        for message in active[-args.limit :]:
            print(message_row(message))
        engine.stop()
    finally:
        store.close()
    return EXIT_OK


def _compress(args: argparse.Namespace) -> int:
    from .engine import SummaryEngine

    store = _open_db(args)
    try:
        with SummaryEngine(
            store, _summarizer(args), config=load_config(args.config)
        ) as engine:
            outcome = engine.compress(args.session).result(timeout=args.timeout)
    finally:
        store.close()
    print(
        f"session {args.session}: {outcome.kind} ({outcome.detail}); "
        f"archived {outcome.archived}, folded {outcome.summarized}"
    )
    return EXIT_OK if outcome.ok else EXIT_FAILED


def _clear(args: argparse.Namespace) -> int:
    from .engine import SummaryEngine

    if not args.all and not args.session:
        raise ConfigError("clear", None, "a SESSION, or --all")
    store = _open_db(args)
    try:
        engine = SummaryEngine(store, config=load_config(args.config))
        types = args.types.split(",") if args.types else None
        results = engine.clear("all" if args.all else "session", args.session, types)
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


def _facts(args: argparse.Namespace) -> int:
    from .facts import LOCALES, Locale, run_facts

    if args.conversations < 1:
        raise ConfigError("--conversations", args.conversations, "int >= 1")
    if args.context_tokens is not None and args.context_tokens < 1:
        raise ConfigError("--context-tokens", args.context_tokens, "int >= 1")
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
            config=load_config(args.config),
            progress=None if args.quiet else progress,
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


def _common(parser: argparse.ArgumentParser, defaults: Mapping[str, object]) -> None:
    db = defaults.get("db", DEFAULT_DB)
    parser.add_argument("--db", default=db, help=f"SQLite database (default: {db})")
    parser.add_argument("--config", metavar="FILE", help="a TOML config file")


def _llm_options(
    parser: argparse.ArgumentParser, defaults: Mapping[str, object]
) -> None:
    parser.add_argument(
        "--base-url",
        default=defaults.get("base_url"),
        help="an OpenAI-compatible endpoint (default: the offline summarizer)",
    )
    parser.add_argument(
        "--model", default=defaults.get("model"), help="the summary model at --base-url"
    )


def build_parser(
    defaults: Mapping[str, object] | None = None,
) -> argparse.ArgumentParser:
    """Return the argument parser of every sub-command.

    ``defaults`` (from the config file's ``[memory_summary.cli]`` table and the
    ``MEMORY_SUMMARY_CLI_*`` variables) replace the built-in defaults.
    """
    given = dict(defaults or {})

    def default(name: str, builtin: object) -> object:
        return given.get(name, builtin)

    parser = argparse.ArgumentParser(
        prog="memory-summary",
        description="Keep long chat conversations inside their context window.",
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

    demo = commands.add_parser(
        "demo",
        help="simulate a multi-session chat server on a SQLite file",
        description="Drive generated English and Chinese conversations (with tool "
        "calls) through one engine from a thread pool, then report what compression "
        "saved.",
    )
    _common(demo, given)
    _llm_options(demo, given)
    demo.add_argument(
        "--sessions",
        type=int,
        default=default("sessions", 50),
        help="concurrent sessions (50)",
    )
    demo.add_argument(
        "--turns", type=int, default=default("turns", 40), help="turns per session (40)"
    )
    demo.add_argument(
        "--seed", type=int, default=default("seed", 7), help="conversation seed (7)"
    )
    demo.add_argument(
        "--workers", type=int, default=default("workers", 8), help="host threads (8)"
    )
    demo.add_argument("--quiet", action="store_true", help="no progress display")
    demo.set_defaults(run=_demo)

    inspect = commands.add_parser(
        "inspect", help="show a session's history and summary"
    )
    inspect.add_argument("session")
    inspect.add_argument(
        "--limit", type=int, default=30, help="active messages shown (30)"
    )
    _common(inspect, given)
    inspect.set_defaults(run=_inspect)

    compress = commands.add_parser("compress", help="compress a session now")
    compress.add_argument("session")
    compress.add_argument(
        "--timeout",
        type=float,
        default=default("timeout", 300.0),
        help="seconds to wait",
    )
    _common(compress, given)
    _llm_options(compress, given)
    compress.set_defaults(run=_compress)

    clear = commands.add_parser("clear", help="clear summaries (one session or --all)")
    clear.add_argument("session", nargs="?")
    clear.add_argument("--all", action="store_true", help="every session's summary")
    clear.add_argument(
        "--types", help="comma-separated memory types; skips without 'summary'"
    )
    _common(clear, given)
    clear.set_defaults(run=_clear)

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
        type=int,
        default=None,
        help="the endpoint's context window, when its model listing does not say "
        "(llama.cpp); default: the listing, else 4096",
    )
    facts.add_argument(
        "--seed", type=int, default=default("seed", 7), help="conversation seed (7)"
    )
    facts.add_argument(
        "--conversations", type=int, default=4, help="conversations per locale (4)"
    )
    facts.add_argument(
        "--locale", choices=("en", "zh", "both"), default="both", help="(both)"
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
    return parser


CLI_OPTIONS: dict[str, type] = {
    "db": str,
    "sessions": int,
    "turns": int,
    "seed": int,
    "workers": int,
    "base_url": str,
    "model": str,
    "timeout": float,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    known, _ = pre.parse_known_args(argv)
    try:
        defaults = cli_defaults(known.config, CLI_OPTIONS)
    except MemorySummaryError as exc:
        print(f"memory-summary: error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    args = build_parser(defaults).parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = run(args)
    except MemorySummaryError as exc:
        print(f"memory-summary: error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except BrokenPipeError:  # the reader (say, `head`) went away: not our error
        sys.stderr.close()
        return EXIT_OK
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
