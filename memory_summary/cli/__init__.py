"""The ``memory-summary`` command line (``memory_summary.cli:main``).

Exit codes, the same for every sub-command: 0 done; 2 usage (an unknown, conflicting
or meaningless argument); 3 bad configuration or input (a config file or variable, a
missing database, a database that cannot be opened as a store: an unreachable or
malformed DSN, a missing or foreign schema, a newer release; an unknown session; a
database the demo would not replace, a missing extra); 4 the operation failed (a store
or summarizer error, a timeout, a failed clear); 130 interrupted. Nothing prints a
traceback.

One module a group of commands: ``config`` (config check), ``demo``, ``store``
(inspect, compress, clear), ``reports`` (sessions, stats); ``parser`` builds the
argument parser from them, ``options`` holds what several share, ``exits`` the exit
codes. The benchmarks of a source checkout (``benchmarks/facts.py``, ``quality.py``)
run their own parser through ``main``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from memory_summary.domain import (
    ConfigError,
    MemorySummaryError,
    MessageError,
    StoreUnavailable,
    TokenizerError,
)

from .exits import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UnknownSession,
    report_error,
    shown_lines,
)
from .invocation import invocation
from .options import CHECKS, CLI_OPTIONS, DEFAULT_DB, DEFAULT_SCHEMA
from .parser import ParserBuilder, build_parser, parse_arguments

__all__ = [
    "CHECKS",
    "CLI_OPTIONS",
    "DEFAULT_DB",
    "DEFAULT_SCHEMA",
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "UnknownSession",
    "build_parser",
    "invocation",
    "main",
]


def _escape_unencodable(stream: object) -> None:
    """Write what ``stream``'s encoding cannot hold as backslash escapes.

    A value from the environment or a config file (shown in ``--help`` and in
    listings) may hold characters an ASCII or Latin-1 terminal cannot print; stderr
    already escapes them, and stdout then does too instead of raising.
    """
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError, TypeError):
            reconfigure(errors="backslashreplace")


def main(
    argv: Sequence[str] | None = None, *, build: ParserBuilder = build_parser
) -> int:
    """Run the command line; return the process exit code.

    ``build`` makes the argument parser from the config file's defaults (by default
    every sub-command's); another parser's commands share this error handling and
    these exit codes.
    """
    if argv is None:  # the process's own command line: its stdout is ours
        _escape_unencodable(sys.stdout)
    args = parse_arguments(argv, build)
    if isinstance(args, int):
        return args
    run = getattr(args, "run", None)
    if run is None:
        build(None).print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code: int = run(args)
    except (ConfigError, MessageError, TokenizerError) as exc:
        report_error(exc)
        return EXIT_CONFIG
    except StoreUnavailable as exc:
        said = shown_lines(str(exc))  # a DSN or a path may hold any character
        print(f"memory-summary: error: cannot open the store: {said}", file=sys.stderr)
        return EXIT_CONFIG
    except UnknownSession as exc:
        report_error(exc)
        return EXIT_CONFIG
    except MemorySummaryError as exc:  # a store or summarizer failed
        report_error(exc)
        return EXIT_FAILED
    except ImportError as exc:  # an optional extra is not installed
        report_error(exc)
        return EXIT_CONFIG
    except BrokenPipeError:  # the reader (say, `head`) went away: not our error
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        report_error(exc)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("memory-summary: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code
