"""The argument parser of every sub-command, with defaults from the config file."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import NoReturn

from memory_summary import __version__
from memory_summary.config_file import CliSettings, load_config
from memory_summary.domain import ConfigError
from memory_summary.domain.errors import ConfigErrors
from memory_summary.terminal_text import shown

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
    An option is matched as argparse matches it (its name, or a unique prefix of a
    long one: ``--li``), and an option's value is read as its value, even when it is
    a command's name (``--db stats sessions``: the command is ``sessions``). The
    line suggested is one the command accepts: an option the command lacks, or one
    without its value, is said instead. With no command after the options (``--db
    X``), the error says a command is missing and lists them.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    commands = _commands_of(parser)
    if not commands or not argv or not argv[0].startswith("-"):
        return
    takes_value = _options_taking_a_value(parser)
    first = argv[0].partition("=")[0]
    if not _matches(first, takes_value):
        return  # no command's option: argparse says it is unrecognized
    at = 0
    while at < len(argv) and argv[at] not in commands:
        option, has_equals, _ = argv[at].partition("=")
        if _matches(option, _GLOBAL_OPTIONS) and not has_equals:
            parser.parse_args([option])  # the help or the version, as asked
        matched = _matches(option, takes_value)
        has_value = not has_equals and any(takes_value[m] for m in matched)
        at += 2 if has_value and _is_value(argv[at + 1 : at + 2]) else 1
    given = argv[:at]
    if at >= len(argv):
        parser.error(
            f"a command is missing: {first} is an option of a command and goes "
            f"after the command's name ({invocation()} COMMAND "
            f"{shown(shlex.join(given))}); commands: {', '.join(commands)}"
        )
    command = [argv[at]]
    nested = commands[argv[at]]
    while at + 1 < len(argv) and argv[at + 1] in _commands_of(nested):
        at += 1  # `config check`: the options follow the whole command's name
        command.append(argv[at])
        nested = _commands_of(nested)[argv[at]]
    _refuse_options_the_command_lacks(parser, nested, " ".join(command), given)
    fixed = shlex.join([*command, *given, *argv[at + 1 :]])
    parser.error(
        f"{first} is an option of the command, so it goes after it: "
        f"{invocation()} {shown(fixed)}"
    )


def _refuse_options_the_command_lacks(
    parser: argparse.ArgumentParser,
    command: argparse.ArgumentParser,
    name: str,
    given: Sequence[str],
) -> None:
    """Say which option of ``given`` ``command`` lacks, or which lacks its value."""
    takes_value = {
        option: action.nargs != 0
        for action in command._actions
        for option in action.option_strings
    }
    at = 0
    while at < len(given):
        option, has_equals, _ = given[at].partition("=")
        matched = _matches(option, takes_value)
        if len(matched) != 1:
            said = (
                f"is ambiguous for `{name}` (it could be {', '.join(matched)})"
                if matched
                else f"is not an option of `{name}`"
            )
            parser.error(f"{shown(option)} {said}; see {invocation()} {name} --help")
        if not takes_value[matched[0]] or has_equals:
            at += 1
        elif _is_value(given[at + 1 : at + 2]):
            at += 2
        else:
            parser.error(
                f"{shown(option)} needs a value, and goes after the command's "
                f"name: {invocation()} {name} {shown(option)} VALUE"
            )


def _matches(option: str, options: Collection[str]) -> list[str]:
    """Return the options ``option`` names, as argparse matches them.

    Itself, else the options a long option's prefix starts (``--li``: ``--limit``);
    several are ambiguous, none unknown.
    """
    if option in options:
        return [option]
    if not option.startswith("--") or len(option) < 3:
        return []
    return [name for name in options if name.startswith(option)]


def _is_value(following: Sequence[str]) -> bool:
    """Say whether the token after an option is its value, as argparse reads it."""
    return bool(following) and (
        not following[0].startswith("-")
        or _NEGATIVE.fullmatch(following[0]) is not None
    )


_NEGATIVE = re.compile(r"-\d+|-\d*\.\d+")  # argparse's: a value, not an option


def _commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Return the sub-commands of ``parser`` by name (none for a plain parser)."""
    return {
        name: command
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, command in action.choices.items()
    }


def _options_taking_a_value(parser: argparse.ArgumentParser) -> dict[str, bool]:
    """Return whether each option of every sub-command takes a value (``--db X``)."""
    found: dict[str, bool] = {}
    for command in _commands_of(parser).values():
        found.update(_options_taking_a_value(command))
        for action in command._actions:
            for option in action.option_strings:
                found.setdefault(option, action.nargs != 0)
    return found


_GLOBAL_OPTIONS = ("-h", "--help", "--version")


def _note_configured_defaults(
    parser: argparse.ArgumentParser, settings: CliSettings
) -> None:
    """Add to each option's help the default configured for it, or why it is refused.

    An option's help names its built-in default; a value from ``[memory_summary.cli]``
    or a ``MEMORY_SUMMARY_CLI_*`` variable replaces it, and a rejected one stops
    every command that has the option, so ``--help`` says which applies.
    """
    for action in parser._actions:
        name = action.dest
        if not action.option_strings or name not in settings.sources:
            continue
        if name in settings.rejected:
            note = (
                f"configured {settings.rejected[name]} (a command with this option "
                "stops until it is fixed)"
            )
        elif name in settings.values:
            shown_value = shown(str(settings.values[name]))
            note = f"default here: {shown_value} (from {settings.sources[name]})"
        else:
            continue
        note = shown(note).replace("%", "%%")  # argparse %-formats a help
        action.help = f"{action.help}; {note}" if action.help else note
    for command in _commands_of(parser).values():
        _note_configured_defaults(command, settings)


def _escape_usage_errors(parser: argparse.ArgumentParser) -> None:
    """Make the usage errors of ``parser`` and its commands show what was typed inert.

    argparse writes some arguments into its messages as they were typed
    (``unrecognized arguments: ...``, ``ambiguous option: ...``): an escape sequence
    typed or pasted there would act on the terminal, and a typed newline would
    start a line that reads as the program's own. Every message goes through
    ``shown`` instead (none of argparse's spans lines); the messages this module
    writes are shown already, and ``shown`` leaves its own escapes as they are.
    """
    error = parser.error

    def escaped(message: str) -> NoReturn:
        error(shown(message))  # one line: a typed newline is shown as \x0a

    parser.error = escaped  # type: ignore[method-assign]
    for command in _commands_of(parser).values():
        _escape_usage_errors(command)


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
    parser = build(settings.values)
    _escape_usage_errors(parser)
    _note_configured_defaults(parser, settings)
    try:
        _refuse_options_before_the_command(parser, argv)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    # A name no option has (a file's key, a variable) is a typo every command
    # refuses; `config check`, which has no --config, reports it with the rest.
    if settings.unknown and "config" in vars(args):
        report_error(
            _with_field_errors(ConfigErrors(tuple(settings.errors)), config_path)
        )
        return EXIT_CONFIG
    # A bad default stops only a command that has the option; `config check` lists all.
    used = [error for name, error in settings.rejected.items() if name in vars(args)]
    if used:
        report_error(_with_field_errors(ConfigErrors(tuple(used)), config_path))
        return EXIT_CONFIG
    return args
