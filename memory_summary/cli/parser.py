"""The argument parser of every sub-command, with defaults from the config file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from memory_summary import __version__
from memory_summary.config_file import load_config
from memory_summary.domain import ConfigError
from memory_summary.domain.errors import ConfigErrors

from .config import add_config_parser
from .demo import add_demo_parser
from .exits import EXIT_CONFIG, EXIT_USAGE, errors_of, report_error
from .invocation import invocation
from .options import CLI_OPTIONS, checked_cli_settings
from .reports import add_sessions_parser, add_stats_parser
from .store import add_store_parsers

ParserBuilder = Callable[[Mapping[str, object] | None], argparse.ArgumentParser]
"""Makes an argument parser from the config file's defaults (``build_parser``)."""


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
    add_config_parser(commands)
    add_demo_parser(commands, given)
    add_store_parsers(commands, given)
    add_sessions_parser(commands, given)
    add_stats_parser(commands, given)
    return parser


def _with_field_errors(exc: ConfigError, config_path: str | None) -> ConfigError:
    """Return ``exc`` joined by the config fields' own errors: all are reported."""
    errors = list(errors_of(exc))
    try:
        load_config(config_path, cli_options=CLI_OPTIONS)
    except ConfigError as fields:
        seen = {str(error) for error in errors}
        errors += [e for e in errors_of(fields) if str(e) not in seen]
    return errors[0] if len(errors) == 1 else ConfigErrors(tuple(errors))


def _refuse_options_before_the_command(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> None:
    """Say where an option given before the command goes (``--db X sessions``).

    Every option but ``--help`` and ``--version`` is a command's, so it follows the
    command's name; argparse alone would call the option's value an invalid command.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or not argv[0].startswith("-") or argv[0] in _GLOBAL_OPTIONS:
        return
    commands = [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    at = next((i for i, item in enumerate(argv) if item in commands), None)
    if at is not None:
        given = " ".join(argv[:at])
        parser.error(
            f"{argv[0]} is an option of the command, so it goes after it: "
            f"{invocation()} {argv[at]} {given} ..."
        )


_GLOBAL_OPTIONS = ("-h", "--help", "--version")


class _UsageError(Exception):
    """The first pass over the arguments met a usage error."""


class _SilentParser(argparse.ArgumentParser):
    """Finds ``--config`` before the full parser exists; reports nothing itself."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def parse_arguments(
    argv: Sequence[str] | None, build: ParserBuilder = build_parser
) -> argparse.Namespace | int:
    """Return the parsed arguments, or the exit code when parsing ended the run.

    ``build`` makes the parser from the defaults of ``--config``'s file.
    """
    pre = _SilentParser(add_help=False)
    pre.add_argument("--config")
    try:
        config_path = pre.parse_known_args(argv)[0].config
    except _UsageError:  # the full parser below says what is wrong
        config_path = None
    try:
        settings = checked_cli_settings(config_path)
    except ConfigError as exc:
        report_error(_with_field_errors(exc, config_path))
        return EXIT_CONFIG
    if settings.unknown:  # a name no option has: a typo every command refuses
        report_error(
            _with_field_errors(ConfigErrors(tuple(settings.errors)), config_path)
        )
        return EXIT_CONFIG
    parser = build(settings.values)
    try:
        _refuse_options_before_the_command(parser, argv)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    # A bad default stops only a command that has the option; `config check` lists all.
    used = [error for name, error in settings.rejected.items() if name in vars(args)]
    if used:
        report_error(_with_field_errors(ConfigErrors(tuple(used)), config_path))
        return EXIT_CONFIG
    return args
