"""``memory-summary config check``: validate a config file, print the values."""

from __future__ import annotations

import argparse
import json

from memory_summary.config_file import ENV_PREFIX, load_config

from .exits import EXIT_OK
from .options import CLI_OPTIONS


def check_config(args: argparse.Namespace) -> int:
    """Print the effective configuration of a file plus the environment."""
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
            "Validate FILE (TOML; fields at the top level or under [memory_summary]) "
            f"plus {ENV_PREFIX}<FIELD> variables, and print the effective values."
        ),
    )
    check.add_argument("file", nargs="?", help="the TOML file (default: none)")
    check.add_argument("--json", action="store_true", help="print the values as JSON")
    check.set_defaults(run=check_config)
