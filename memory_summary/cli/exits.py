"""The exit codes of the command line and how an error is reported (never a traceback).

0 done; 2 usage (an unknown, conflicting or meaningless argument); 3 bad configuration
or input; 4 the operation failed; 130 interrupted.
"""

from __future__ import annotations

import sys

from memory_summary.domain import ConfigError
from memory_summary.domain.errors import ConfigErrors
from memory_summary.terminal_text import shown

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_FAILED = 4
EXIT_INTERRUPTED = 130


class UnknownSession(Exception):
    """The session id names no session of the store (exit 3)."""


def errors_of(exc: ConfigError) -> tuple[ConfigError, ...]:
    """Return the errors ``exc`` stands for (a ``ConfigErrors`` holds several)."""
    return exc.errors if isinstance(exc, ConfigErrors) else (exc,)


def report_error(exc: BaseException) -> None:
    """Print ``exc`` (each of its errors, for a configuration error) to stderr.

    A name in an error is the user's (a variable's, a config file's key) and a
    value may be stored text: each line goes through ``shown``, so a control
    character in either is printed as its escape, never acted on by the terminal.
    """
    errors = errors_of(exc) if isinstance(exc, ConfigError) else (exc,)
    for error in errors:
        print(f"memory-summary: error: {shown_lines(str(error))}", file=sys.stderr)


def shown_lines(text: str) -> str:
    """Return ``text`` through ``shown`` line by line: its line breaks are kept."""
    return "\n".join(shown(line) for line in text.split("\n"))
