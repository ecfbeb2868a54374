"""The memory types of a host's unified memory clear, and which one is ours (SPEC 7).

A host clears every memory source with one list of types; ``summary`` is this
library's. Any other name is another source's type and skips our part, so
``types=["memory"]`` clears nothing here. A name that can only be a misspelling of
ours (``Summary``, ``summaries``, ``summry``) would skip silently while the user
believes the summaries gone: it is an error with ``summary`` suggested instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from .errors import ConfigError

SUMMARY_TYPE = "summary"
_NEAR_MISS_RATIO = 0.75  # summry 0.92, summaries 0.75; memory 0.62, history 0.43


def is_near_summary(name: str) -> bool:
    """Return whether ``name`` is not ``summary`` but can only mean it.

    >>> [is_near_summary(n) for n in ("summry", "Summary", "summary", "memory")]
    [True, True, False, False]
    """
    if name == SUMMARY_TYPE:
        return False
    folded = name.casefold()
    ratio = difflib.SequenceMatcher(None, folded, SUMMARY_TYPE).ratio()
    return ratio >= _NEAR_MISS_RATIO


def clears_summary(types: Collection[str] | None) -> bool:
    """Return whether a unified clear of ``types`` includes the summary.

    ``None`` clears every type; a collection clears the summary when it names
    ``summary``, and skips it otherwise (the host's other types).

    Raises:
        ConfigError: a name is not text, is empty, or is a near miss of ``summary``.

    >>> clears_summary(None), clears_summary(["memory"]), clears_summary(["summary"])
    (True, False, True)
    """
    if types is None:
        return True
    for name in types:
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("types", name, "non-empty memory type names")
        if is_near_summary(name):
            raise ConfigError(
                "types",
                name,
                f"{SUMMARY_TYPE!r} or another memory source's type "
                f"(did you mean {SUMMARY_TYPE!r}?)",
            )
    return SUMMARY_TYPE in types
