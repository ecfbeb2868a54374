"""``memory-summary config check``: validate a config file, print the values."""

from __future__ import annotations

import argparse
import json
import os

from memory_summary.config_file import (
    ENV_PREFIX,
    OTHER_VARIABLES,
    known_variables,
    load_config,
    raise_all,
)
from memory_summary.domain import ConfigError
from memory_summary.terminal_text import json_shown, shown

from .exits import EXIT_OK, errors_of
from .options import CLI_OPTIONS, checked_cli_defaults


def check_config(args: argparse.Namespace) -> int:
    """Print the effective configuration of a file plus the environment.

    The engine's fields and the command line's defaults (``[memory_summary.cli]``,
    ``MEMORY_SUMMARY_CLI_*``) are checked as the commands check them, and every
    error of either is reported at once.

    Raises:
        ConfigError: the errors found (``ConfigErrors`` for several).
    """
    errors: list[ConfigError] = []
    config, defaults = None, {}
    try:
        config = load_config(args.file, cli_options=CLI_OPTIONS)
    except ConfigError as exc:
        errors += errors_of(exc)
    try:
        defaults = checked_cli_defaults(args.file)
    except ConfigError as exc:
        seen = {str(error) for error in errors}  # a file error is met twice
        errors += [error for error in errors_of(exc) if str(error) not in seen]
    raise_all(errors)
    assert config is not None
    values = config.to_mapping()
    known = known_variables(CLI_OPTIONS)
    if args.json:  # the fields alone: the JSON reads back as a configuration
        print(json_shown(values))
        return EXIT_OK
    source = args.file or "defaults"
    overrides = sorted(  # the variables that set a field or an option
        name for name in known if name in os.environ and name not in OTHER_VARIABLES
    )
    said = f", with {', '.join(overrides)}" if overrides else ", no variable set"
    print(f"configuration OK ({shown(source)}{said})")
    width = max(map(len, [*values, *defaults]))
    for name, value in values.items():
        print(f"  {name:<{width}}  {_value(value)}")
    if defaults:
        print(f"command-line defaults ([memory_summary.cli], {ENV_PREFIX}CLI_*):")
        for name, value in defaults.items():
            print(f"  {name:<{width}}  {_value(value)}")
    return EXIT_OK


def _value(value: object) -> str:
    return shown(json.dumps(value, ensure_ascii=False))


def add_config_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Add ``config check``."""
    config = commands.add_parser("config", help="inspect the configuration")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION")
    check = config_commands.add_parser(
        "check",
        help="validate a TOML config file and print the effective values",
        description=(
            "Validate FILE (TOML; fields at the top level or under [memory_summary], "
            "which merge; the command line's defaults under [memory_summary.cli]) "
            f"plus {ENV_PREFIX}<FIELD> and {ENV_PREFIX}CLI_<OPTION> variables as the "
            "commands check them, and print the effective values."
        ),
    )
    check.add_argument("file", nargs="?", help="the TOML file (default: none)")
    check.add_argument("--json", action="store_true", help="print the values as JSON")
    check.set_defaults(run=check_config)
