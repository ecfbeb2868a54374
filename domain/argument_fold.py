"""A tool's repeated calls folded into one: each argument's distinct values.

The arguments of calls of one tool (JSON objects, or the ``key: a, b`` lines this
writes) fold into one line per key with the distinct values of that key, written as
``clause_fold`` writes a slot (a run of integers as a range). Folding its own lines
again with more calls only widens each key's set.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from .clause_fold import rendered_values, values_of

__all__ = ["fold_arguments"]


def _argument_values(value: object) -> list[str]:
    if isinstance(value, list):
        return [v for item in value for v in _argument_values(item)]
    if isinstance(value, dict):
        return [json.dumps(value, ensure_ascii=False, sort_keys=True)]
    if value is None or isinstance(value, bool):
        return [json.dumps(value)]
    return [" ".join(str(value).split())]


_ARGUMENT_LINE = re.compile(r"^([\w.-]{1,40}): (.*)$", re.DOTALL)


def _arguments(text: str) -> dict[str, list[str]] | None:
    """Return one call's arguments as key -> values, or None when not readable."""
    try:
        data = json.loads(text)
    except ValueError:
        match = _ARGUMENT_LINE.match(text.strip())
        if match is None:
            return None
        return {match[1]: values_of(match[2])}
    if not isinstance(data, dict):
        return None
    return {str(key): _argument_values(value) for key, value in data.items()}


def fold_arguments(calls: Iterable[str], max_chars: int = 320) -> list[str] | None:
    """Return the arguments of one tool's calls as ``key: a, b`` lines, or None.

    Each line holds one key's distinct values in order of first appearance; a value
    holding ``, `` or ``; `` stays a JSON string. None when a call's arguments are
    neither a JSON object nor a line this wrote (nothing to fold), or when a line
    would be longer than ``max_chars``.

    >>> fold_arguments(['{"todos": ["flights", "flights"]}', '{"todos": ["hotel"]}'])
    ['todos: flights, hotel']
    >>> fold_arguments(['todos: flights, hotel', '{"todos": ["tram"]}'])
    ['todos: flights, hotel, tram']
    """
    merged: dict[str, list[str]] = {}
    for call in calls:
        arguments = _arguments(call)
        if arguments is None:
            return None
        for key, values in arguments.items():
            merged.setdefault(key, []).extend(
                json.dumps(v, ensure_ascii=False)
                if (", " in v or "; " in v or "；" in v) and not v.startswith('"')
                else v
                for v in values
            )
    lines = [
        f"{key}: {rendered_values(list(dict.fromkeys(values)))}"
        for key, values in merged.items()
        if values
    ]
    if not lines or any(len(line) > max_chars for line in lines):
        return None
    return lines
