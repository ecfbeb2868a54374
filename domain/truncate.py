"""Cutting text to a token budget on a character boundary, with a visible suffix."""

from __future__ import annotations

from collections.abc import Callable

from .text import safe_boundary

# A token of the supported encodings spans far fewer characters than this, so a prefix
# of budget * PROBE_CHARS_PER_TOKEN characters is a safe first bound for the search.
PROBE_CHARS_PER_TOKEN = 16


def truncate_to_tokens(
    text: str,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    suffix: str = "",
) -> str:
    """Return ``text`` if it fits ``budget_tokens``, else its longest fitting prefix.

    Invariants: the result counts at most ``budget_tokens`` tokens (or is empty when not
    even ``suffix`` fits), it is ``text`` or ``prefix + suffix`` for a prefix of it,
    and the prefix ends on a character boundary (``text.safe_boundary``).

    >>> truncate_to_tokens("one two three", 2, lambda s: len(s.split()), "…")
    'one two…'
    """
    if budget_tokens <= 0:
        return ""
    if count_tokens(text) <= budget_tokens:
        return text
    if count_tokens(suffix) > budget_tokens:
        return ""

    def fits(end: int) -> bool:
        return count_tokens(text[:end] + suffix) <= budget_tokens

    low, high = 0, len(text)  # fits(low) holds; the answer is in [low, high)
    probe = safe_boundary(text, budget_tokens * PROBE_CHARS_PER_TOKEN)
    if probe < high:
        if fits(probe):
            low = probe
        else:
            high = probe
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    # Token counts are not strictly monotone in prefix length; step back to a boundary
    # that is known to fit.
    end = safe_boundary(text, low)
    while end > 0 and not fits(end):
        end = safe_boundary(text, end - 1)
    return text[:end] + suffix
