"""The options several sub-commands share, and what they open.

The config, the store and the summarizer.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from memory_summary.config_file import (
    DSN_VARIABLE,
    CliSettings,
    cli_settings,
    load_config,
    raise_all,
)
from memory_summary.domain import ConfigError, SummaryConfig
from memory_summary.sqlite_file import check_store_database

from . import arg_types
from .invocation import invocation

if TYPE_CHECKING:
    from memory_summary.adapters import OpenAIChatLLM
    from memory_summary.adapters.stores.sql.core import SqlStore

DEFAULT_DB = "memory-summary-demo.sqlite3"
DEFAULT_SCHEMA = "memory_summary"
_CONNECT_TIMEOUT_S = 5.0


def load_cli_config(args: argparse.Namespace) -> SummaryConfig:
    """Return the engine's configuration: ``--config`` plus the environment."""
    return load_config(args.config, cli_options=CLI_OPTIONS)


def summarizer_of(
    args: argparse.Namespace, *, context_tokens: int | None = None
) -> OpenAIChatLLM | None:
    """Return the summarizer of ``--base-url``; None for the offline one.

    ``context_tokens``: the endpoint's context window, when its model listing does not
    say (llama.cpp).
    """
    if not args.base_url and not args.model:
        return None  # the offline extractive summarizer
    from memory_summary.adapters import OpenAIChatLLM

    return OpenAIChatLLM(
        args.model, base_url=args.base_url, context_tokens=context_tokens
    )


def open_store(args: argparse.Namespace) -> SqlStore:
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


def add_store_options(
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
        type=arg_types.text_option,
        # the built-in default: --help adds a configured one (parser.py)
        help=f"SQLite database (default: {DEFAULT_DB})",
    )
    if postgres:
        where.add_argument(
            "--dsn",
            type=arg_types.text_option,
            default=defaults.get("dsn"),
            help=f"a PostgreSQL DSN (default: ${DSN_VARIABLE}); --db wins over "
            "the variable; needs the 'postgres' extra",
        )
        parser.add_argument(
            "--schema",
            type=arg_types.text_option,
            default=defaults.get("schema", DEFAULT_SCHEMA),
            help=f"the PostgreSQL schema ({DEFAULT_SCHEMA})",
        )
    parser.add_argument("--config", metavar="FILE", help="a TOML config file")


def add_llm_options(
    parser: argparse.ArgumentParser, defaults: Mapping[str, object]
) -> None:
    """Add ``--base-url`` and ``--model``."""
    parser.add_argument(
        "--base-url",
        type=arg_types.text_option,
        default=defaults.get("base_url"),
        help="an OpenAI-compatible endpoint (default: the offline summarizer; needs "
        "the 'openai' extra)",
    )
    parser.add_argument(
        "--model",
        type=arg_types.text_option,
        default=defaults.get("model"),
        help="the summary model at --base-url",
    )


# The numeric options and their checks, shared by argparse and config defaults.
CHECKS: dict[str, Callable[[str], object]] = {
    "sessions": arg_types.whole_number(1, 10_000),
    "turns": arg_types.whole_number(1, 10_000),
    "workers": arg_types.whole_number(1, 256),
    "seed": arg_types.any_whole_number,
    "timeout": arg_types.seconds,
}


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


def checked_cli_defaults(config_path: str | Path | None) -> dict[str, object]:
    """Return the command-line defaults of a config file and the environment.

    The file's ``[memory_summary.cli]`` table and the ``MEMORY_SUMMARY_CLI_*``
    variables, checked as the options themselves check a value (``config check``).

    Raises:
        ConfigError: an unknown option (with the closest one suggested), a wrong type
            or an out-of-range value (all of them at once).
    """
    settings = checked_cli_settings(config_path)
    raise_all(settings.errors)
    return settings.values


def checked_cli_settings(config_path: str | Path | None) -> CliSettings:
    """Return ``cli_settings`` with the out-of-range values rejected too.

    Each value of the right type is checked by its option's own parser, as on the
    command line; an error names where the value came from (``cli.sessions`` or
    ``MEMORY_SUMMARY_CLI_SESSIONS``).

    Raises:
        ConfigError: the file cannot be read, or its ``[memory_summary.cli]`` is no
            table.
    """
    settings = cli_settings(config_path, CLI_OPTIONS)
    values = dict(settings.values)
    rejected = dict(settings.rejected)
    for name, value in settings.values.items():
        check = CHECKS.get(name, arg_types.text_option)
        try:
            check(str(value))  # the option's own parser, as on the command line
        except argparse.ArgumentTypeError as exc:
            allowed = str(exc).rpartition("allowed: ")[2]
            rejected[name] = ConfigError(settings.sources[name], value, allowed)
            del values[name]
    return attrs.evolve(settings, values=values, rejected=rejected)
