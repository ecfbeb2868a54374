"""The memory types of a host's unified memory clear, and which one is ours (SPEC 7).

A host clears every memory source with one list of types; ``summary`` is this
library's. Any other name is another source's type and skips our part, so
``types=["memory"]`` clears nothing here, as SPEC 7 says. A name that can only be a
misspelling of ours (``Summary``, ``summaries``, ``summry``) skips too (the engine
logs a warning naming it: ``near_misses``); the command line, where a person typed
it, refuses it with ``summary`` suggested instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SUMMARY_TYPE = "summary"
_NEAR_MISS_RATIO = 0.75  # summry 0.92, summaries 0.75; memory 0.62, history 0.43


def is_near_summary(name: object) -> bool:
    """Return whether ``name`` is not ``summary`` but can only mean it.

    >>> [is_near_summary(n) for n in ("summry", "Summary", "summary", "memory", 5)]
    [True, True, False, False, False]
    """
    if not isinstance(name, str) or name == SUMMARY_TYPE:
        return False
    folded = name.casefold()
    ratio = difflib.SequenceMatcher(None, folded, SUMMARY_TYPE).ratio()
    return ratio >= _NEAR_MISS_RATIO


def clears_summary(types: Iterable[object] | None) -> bool:
    """Return whether a unified clear of ``types`` includes the summary.

    ``None`` clears every type; otherwise the summary is cleared when ``types``
    names ``summary`` and skipped when it does not (the host's other types), whatever
    the other names are.

    >>> clears_summary(None), clears_summary(["memory"]), clears_summary(["summary"])
    (True, False, True)
    """
    return types is None or SUMMARY_TYPE in types


def near_misses(types: Iterable[object]) -> list[str]:
    """Return the names of ``types`` that can only be misspellings of ``summary``.

    >>> near_misses(["memory", "summry", "summary"])
    ['summry']
    """
    return [name for name in types if is_near_summary(name)]  # type: ignore[misc]
