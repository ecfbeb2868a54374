"""SQLite statements with their None parameters written as ``NULL`` in the SQL.

Python's ``sqlite3`` binds str, int and float as they are, but sends every other
parameter, None included, through its adapter registry (a tuple built, a dict
lookup, two attribute lookups): about 3,300 instructions (1 µs) a parameter. A
message row holds eight columns that are mostly None: adapting them cost an insert
a third of its instructions in ``sqlite3``. ``inline_nulls`` turns such a statement
into a variant whose placeholders for None are the literal ``NULL``, the other
parameters bound as before: a bound NULL and a literal one are the same value in
every expression, so the statement means exactly what it meant. Only the message
inserts use it (each of the store's other statements binds None rarely, and a
check on every statement would cost more than it saves).

Only a statement whose every ``?`` is a placeholder is rewritten: one with a quote
(a string literal or quoted name), a comment, or a numbered or named parameter runs
as given, and so does one in PostgreSQL's ``%s`` (its ``?`` marks do not match the
parameters: the shared SQL core may pass any dialect's statement). Variants are
kept per statement and None positions: at most ``VARIANTS_PER_STATEMENT`` of one
statement (a connection prepares 128 statements at most, and a message insert has
about 256 patterns of None), past which that statement's other patterns are bound
as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_VARIANTS = 512
"""How many rewritten statements are kept at most (then the memo starts over)."""
VARIANTS_PER_STATEMENT = 16
"""How many None patterns of one statement are rewritten; the others are bound."""

_VARIANTS: dict[tuple[str, tuple[bool, ...]], object] = {}
"""Each statement's variant per None positions (None: run as given). Shared by every
connection (the same statements); its reads and writes are atomic."""
_MISSING = object()  # no variant kept yet (a variant is a str or None)
_PER_STATEMENT: dict[str, int] = {}
"""How many variants of each statement ``_VARIANTS`` holds (cleared with it)."""

_UNSAFE = ("'", '"', "`", "[", "--", "/*", ":", "@", "$", "#", "%")
"""What makes a ``?`` possibly not a placeholder, or names parameters: left as is."""


def _parts(sql: str, count: int) -> list[str] | None:
    """Return ``sql`` split at its placeholders; None: not to be rewritten."""
    if any(mark in sql for mark in _UNSAFE):
        return None
    parts = sql.split("?")
    if len(parts) != count + 1 or any(part[:1].isdigit() for part in parts[1:]):
        return None
    return parts


def inline_nulls(sql: str, params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """Return ``sql`` and ``params`` with the None parameters written as ``NULL``.

    The statement and parameters as given when none is None, or when ``sql`` is not
    one to rewrite (see the module).
    """
    mask = tuple([value is None for value in params])  # identity: no __eq__ runs
    if True not in mask:
        return sql, params
    key = (sql, mask)
    variant = _VARIANTS.get(key, _MISSING)
    if variant is _MISSING:
        if _PER_STATEMENT.get(sql, 0) >= VARIANTS_PER_STATEMENT:
            return sql, params  # its prepared variants would crowd each other out
        variant = _variant(sql, mask)
        if len(_VARIANTS) >= MAX_VARIANTS:
            _VARIANTS.clear()
            _PER_STATEMENT.clear()
        _VARIANTS[key] = variant
        _PER_STATEMENT[sql] = _PER_STATEMENT.get(sql, 0) + 1
    if not isinstance(variant, str):
        return sql, params
    return variant, tuple([value for value in params if value is not None])


def _variant(sql: str, mask: Sequence[bool]) -> str | None:
    """Return ``sql`` with the placeholders at ``mask``'s True positions as NULL."""
    parts = _parts(sql, len(mask))
    if parts is None:
        return None
    out = [parts[0]]
    for is_none, rest in zip(mask, parts[1:], strict=True):
        out.append("NULL" if is_none else "?")
        out.append(rest)
    return "".join(out)
