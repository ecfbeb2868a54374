"""The answer-matching rule: does a text contain a question's answer?

Used to score what a summary keeps of a conversation's answers (``locomo``). Lenient
about spelling, strict about words:

1. Both texts are NFKC-normalized and case-folded; a possessive ``'s`` is dropped,
   other apostrophes join (``don't`` = ``dont``), and every other punctuation mark
   or symbol reads as a space.
2. Number words read as digits (``two`` = ``2``, ``twenty`` = ``20``).
3. Plurals fold to their singular (``cats``/``cat``, ``boxes``/``box``,
   ``hobbies``/``hobby``); the same folding applies to both texts, so it needs to be
   consistent, not correct English.
4. The text is read as words; a CJK character is a word of its own.
5. An answer is split into parts at commas and semicolons (``"pottery, camping"``);
   each part is found when all of its content words (its words without articles,
   prepositions and such ``STOPWORDS``; all of its words when it has no other) occur
   within a window of ``len(part) + WINDOW_SLACK`` consecutive words of the text, in
   any order. The answer is contained when every part is.

>>> contains_answer("Mel: we went camping at a lake!", "Camping at the lake")
True
>>> contains_answer("She has two dogs and three cats.", "3 cats")
True
>>> contains_answer("Camping is fun. Later, much later, far away: a lake.", "lake")
True
>>> contains_answer("Camping is fun. Later, much later: a lake.", "camping lake")
False
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Sequence

WINDOW_SLACK = 4
"""How many more words than the answer part's own the window around a match spans."""

_CARDINALS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
    "seventeen", "eighteen", "nineteen", "twenty",
)  # fmt: skip
_TENS = ("thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
NUMBER_WORDS: dict[str, str] = {
    **{word: str(value) for value, word in enumerate(_CARDINALS)},
    **{word: str(30 + 10 * n) for n, word in enumerate(_TENS)},
    "hundred": "100",
    "thousand": "1000",
}
STOPWORDS = frozenset((
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by",
    "from", "as", "is", "was", "are", "were", "be", "been", "it", "its", "this",
    "that", "these", "those", "her", "his", "their", "my", "our", "your", "he", "she",
    "they", "we", "i", "you",
))  # fmt: skip
_CJK = re.compile(r"([\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\u3040-\u30ff])")
_POSSESSIVE = re.compile(r"(?<=\w)'s\b")
_APOSTROPHE = re.compile(r"(?<=\w)'(?=\w)")
_NOT_WORD = re.compile(r"[^\w]+|_+")
_PARTS = re.compile(r"[,;，；、]")


def fold_word(word: str) -> str:
    """Return ``word`` (lower case) with a number word as digits and a plural folded.

    >>> [fold_word(w) for w in ["twelve", "hobbies", "boxes", "cats", "glass", "bus"]]
    ['12', 'hobby', 'box', 'cat', 'glass', 'bus']
    """
    if word in NUMBER_WORDS:
        return NUMBER_WORDS[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def words_of(text: str) -> list[str]:
    """Return the words of ``text`` as the rule reads them (steps 1 to 4).

    >>> words_of("Melanie's 'Two' kids—don't they love ocean-swimming?")
    ['melanie', '2', 'kid', 'dont', 'they', 'love', 'ocean', 'swimming']
    """
    text = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    text = _APOSTROPHE.sub("", _POSSESSIVE.sub("", text))
    text = _CJK.sub(r" \1 ", text)
    return [fold_word(word) for word in _NOT_WORD.split(text) if word]


def answer_parts(answer: str) -> list[list[str]]:
    """Return the parts of an answer, each as the content words it must show.

    >>> answer_parts("Pottery, a trip to the beach; 2022")
    [['pottery'], ['trip', 'beach'], ['2022']]
    """
    parts = []
    for piece in _PARTS.split(answer):
        words = words_of(piece)
        content = [w for w in words if w not in STOPWORDS] or words
        if content:
            parts.append(content)
    return parts


class MatchText:
    """A text read once, to look many answers up in it (``contains``)."""

    def __init__(self, text: str) -> None:
        self.words = words_of(text)
        self._at: dict[str, list[int]] = {}
        for position, word in enumerate(self.words):
            self._at.setdefault(word, []).append(position)

    def has_part(self, part: Sequence[str], span: int) -> bool:
        """Tell whether every word of ``part`` occurs within ``span`` words."""
        wanted = set(part)
        lists = [self._at.get(word) for word in wanted]
        if any(not positions for positions in lists):
            return False
        anchor = min(lists, key=lambda positions: len(positions or ()))
        assert anchor is not None  # every list is non-empty here
        return any(_fits(lists, start - span + 1, start, span) for start in anchor)

    def contains(self, answer: str) -> bool:
        """Tell whether the text contains ``answer`` (every part, rule step 5)."""
        parts = answer_parts(answer)
        return bool(parts) and all(
            self.has_part(part, len(part) + WINDOW_SLACK) for part in parts
        )


def _occurs(positions: Sequence[int], low: int, high: int) -> bool:
    index = bisect.bisect_left(positions, low)
    return index < len(positions) and positions[index] <= high


def _fits(
    lists: Iterable[Sequence[int] | None], low: int, anchor: int, span: int
) -> bool:
    """Tell whether some window of ``span`` words holding ``anchor`` holds them all."""
    for left in range(max(low, 0), anchor + 1):
        right = left + span - 1
        if all(_occurs(positions or [], left, right) for positions in lists):
            return True
    return False


def contains_answer(text: str, answer: str) -> bool:
    """Tell whether ``text`` contains ``answer`` under the matching rule.

    >>> contains_answer("I started doing aerial yoga!", "aerial yoga")
    True
    >>> contains_answer("Yoga, they say, is aerial", "aerial yoga")
    True
    >>> contains_answer("I love yoga", "aerial yoga")
    False
    """
    return MatchText(text).contains(answer)
