"""The matching rules of the fact-retention benchmark.

Lenient about spelling, never about the value (the package docstring states them).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

_DASHES = str.maketrans(
    dict.fromkeys("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212", " ")
)
_CJK = r"\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_GLUE = (
    (re.compile(r"(?<=\d),(?=\d{3}(?!\d))"), ""),  # 4,870 -> 4870
    (re.compile(r"\s+"), " "),
    (re.compile(rf"(?<=[{_CJK}]) | (?=[{_CJK}])"), ""),
)
_WORD = "0-9a-z\u00c0-\u024f"  # Latin letters and digits: the edges with boundaries
_LATIN = "a-z\u00c0-\u024f€$¥£%"
# A digit next to a Latin letter, currency sign or %, with or without a space between.
_JUNCTION = re.compile(rf"(?<=\d) ?(?=[{_LATIN}])|(?<=[{_LATIN}]) ?(?=\d)")


def normalize_for_match(text: str) -> str:
    """Return ``text`` in the canonical spelling both the summary and keys are read in.

    >>> normalize_for_match("Order \uff2f\uff32\uff24\u2013 4,870 - 12 Kg 于 2027 年")
    'order ord 4870 12 kg于2027年'
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DASHES)
    for pattern, replacement in _GLUE:
        text = pattern.sub(replacement, text)
    return text.strip()


@functools.lru_cache(maxsize=4096)
def _key_pattern(forms: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = []
    for form in sorted({normalize_for_match(f) for f in forms}, key=len, reverse=True):
        left = f"(?<![{_WORD}])" if re.match(f"[{_WORD}]", form) else ""
        right = f"(?![{_WORD}])" if re.search(f"[{_WORD}]$", form) else ""
        if form[-1:].isdigit():
            right += r"(?![.,]\d)"  # 1.08 is not in 1.083
        pieces = _JUNCTION.split(form)  # the junctions' spaces become optional
        body = " ?".join(re.escape(piece) for piece in pieces)
        alternatives.append(left + body + right)
    return re.compile("|".join(alternatives))


def count_key(text: str, forms: Sequence[str], *, normalized: bool = False) -> int:
    """Return how often ``text`` mentions a key given as its accepted ``forms``.

    ``normalized``: ``text`` already went through ``normalize_for_match``.

    >>> count_key("Ticket TCK-4821 and TCK-48213", ["TCK-4821"])
    1
    """
    if not normalized:
        text = normalize_for_match(text)
    return sum(1 for _ in _key_pattern(tuple(forms)).finditer(text))
