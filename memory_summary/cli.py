"""The ``memory-summary`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from memory_summary import __version__
from memory_summary.config_file import ENV_PREFIX, load_config
from memory_summary.domain import MemorySummaryError

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3


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


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of every sub-command."""
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
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
