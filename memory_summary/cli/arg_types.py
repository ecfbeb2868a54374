"""Checked argument types of the command line: bad values are usage errors (exit 2).

Each parser takes the raw text and returns the value or raises
``argparse.ArgumentTypeError`` with a message saying what is allowed; argparse turns
that into ``memory-summary COMMAND: error: argument --limit: ...`` and exit 2.
The same checks apply to defaults from a config file (``options.checked_cli_defaults``),
where a bad value is a configuration error instead (exit 3).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

from memory_summary.domain.clear import SUMMARY_TYPE, is_near_summary

N = TypeVar("N", int, float)


def _in_range(
    text: str,
    convert: Callable[[str], N],
    noun: str,
    allowed: str,
    holds: Callable[[N], bool],
) -> N:
    """Return ``convert(text)`` if it ``holds``, else a usage error saying what is."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not {noun}; allowed: {allowed}"
        ) from None
    if not holds(value):
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed: {allowed}")
    return value


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """Return a parser of integers in ``[low, high]``."""
    allowed = f"a whole number >= {low}" if high is None else f"{low}..{high}"

    def parse(text: str) -> int:
        return _in_range(
            text,
            int,
            "a whole number",
            allowed,
            lambda value: value >= low and (high is None or value <= high),
        )

    parse.__name__ = "whole number"
    return parse


def any_whole_number(text: str) -> int:
    """Parse any integer (a seed)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_number(most: float, what: str = "a number") -> Callable[[str], float]:
    """Return a parser of finite numbers in ``(0, most]``; ``what`` names one in errors.

    >>> positive_number(4.0)("2.5")
    2.5
    """
    allowed = f"{what} > 0 and <= {most:g}"

    def parse(text: str) -> float:
        return _in_range(
            text,
            float,
            "a number",
            allowed,
            lambda value: math.isfinite(value) and 0 < value <= most,
        )

    parse.__name__ = "number"
    return parse


MAX_WAIT_S = 86_400.0  # a day; beyond the platform's limit a wait overflows

seconds = positive_number(MAX_WAIT_S, "a number of seconds")
"""Parse a number of seconds in ``(0, MAX_WAIT_S]``."""


def session_id(text: str) -> str:
    """Parse a session id: non-empty, valid Unicode (no undecodable bytes)."""
    if not text:
        raise argparse.ArgumentTypeError("a session id cannot be empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not valid Unicode (undecodable bytes in the argument)"
        ) from None
    return text


def text_option(text: str) -> str:
    """Parse a non-empty, valid-Unicode option value (a DSN, a URL, a model)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("cannot be empty")
    return session_id(text)


def memory_types(text: str) -> tuple[str, ...]:
    """Parse ``--types``: comma-separated memory type names.

    As ``engine.clear``: names other than ``summary`` are the host's other memory
    types and accepted (the clear then skips); a name that can only be a misspelling
    of ``summary`` (``summry``, ``Summary``, ``summaries``) is a usage error.
    """
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"{text!r} has an empty type name; allowed: comma-separated names, "
            f"e.g. {SUMMARY_TYPE}"
        )
    for name in names:
        session_id(name)
        if is_near_summary(name):
            raise argparse.ArgumentTypeError(
                f"unknown memory type {name!r} (did you mean {SUMMARY_TYPE!r}?)"
            )
    return names
