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

import operator
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

MAX_VARIANTS = 512
"""How many rewritten statements are kept at most (then the memo starts over)."""
VARIANTS_PER_STATEMENT = 16
"""How many None patterns of one statement are rewritten; the others are bound."""

_Pick: TypeAlias = Callable[[tuple[Any, ...]], tuple[Any, ...]]
_Entry: TypeAlias = tuple[str, _Pick | None]
"""A variant and what picks its parameters; ``(sql, None)``: run as given."""
_VARIANTS: dict[tuple[str, tuple[bool, ...]], _Entry] = {}
"""Each statement's entry per None positions. Shared by every connection (the same
statements); its reads and writes are atomic."""
_BY_TYPES: dict[tuple[str, tuple[type, ...]], _Entry] = {}
"""``_VARIANTS``'s entries by the statement and its parameters' types, which tell the
None positions: ``map(type, ...)`` runs at C speed, a fraction of the instructions of
a mask computed in Python (cleared with ``_VARIANTS``)."""
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
    key = (sql, tuple(map(type, params)))  # types, not values: no __eq__ runs
    entry = _BY_TYPES.get(key)
    if entry is None:
        entry = _entry(sql, tuple([kind is _NONE for kind in key[1]]))
        if len(_BY_TYPES) >= MAX_VARIANTS:
            _BY_TYPES.clear()
        _BY_TYPES[key] = entry
    variant, pick = entry
    if pick is None:
        return sql, params
    return variant, pick(params)


_NONE = type(None)


def _entry(sql: str, mask: tuple[bool, ...]) -> _Entry:
    """Return the entry of ``sql`` for the None positions ``mask``, kept."""
    if True not in mask:
        return sql, None
    key = (sql, mask)
    entry = _VARIANTS.get(key)
    if entry is not None:
        return entry
    if _PER_STATEMENT.get(sql, 0) >= VARIANTS_PER_STATEMENT:
        return sql, None  # its prepared variants would crowd each other out
    variant = _variant(sql, mask)
    kept = [at for at, is_none in enumerate(mask) if not is_none]
    entry = (sql, None) if variant is None else (variant, _picker(kept))
    if len(_VARIANTS) >= MAX_VARIANTS:
        _VARIANTS.clear()
        _PER_STATEMENT.clear()
        _BY_TYPES.clear()
    _VARIANTS[key] = entry
    _PER_STATEMENT[sql] = _PER_STATEMENT.get(sql, 0) + 1
    return entry


def _picker(kept: list[int]) -> _Pick:
    """Return what takes the parameters at ``kept`` as a tuple (at C speed)."""
    if len(kept) >= 2:
        return operator.itemgetter(*kept)
    return lambda params: tuple([params[at] for at in kept])


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
