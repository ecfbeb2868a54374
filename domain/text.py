"""Text normalization for hostile input and cuts that never split a character.

Normalization (applied to every stored message field that holds text):

- a lone surrogate (U+D800..U+DFFF, which cannot be encoded as UTF-8) becomes U+FFFD;
- a NUL byte (U+0000) is removed: databases and C libraries treat it as the end of the
  string, so keeping it would silently truncate the stored text.

A *character boundary* here is a code-point boundary that does not separate a base
character from the combining marks, variation selectors or zero-width joiner sequence
that follow it.
"""

from __future__ import annotations

import re
import sys
import unicodedata

REPLACEMENT = "\ufffd"
ELLIPSIS = "\u2026"

INVISIBLE = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff"
)
"""The characters that show nothing, as a regex character-class body (with ranges):
every format character (category Cf: soft hyphen, zero-width space and joiners, bidi
marks, embeddings, overrides and isolates, invisible operators, the Mongolian vowel
separator, tag characters...), the combining grapheme joiner, the variation
selectors, the Hangul fillers and the other default-ignorable code points. A tag or a
label with them mixed in reads as the tag or the label to a model."""
_SURROGATE_OR_NUL = re.compile("[\ud800-\udfff\x00]")
_ZWJ = "\u200d"


def _replace(match: re.Match[str]) -> str:
    return "" if match.group() == "\x00" else REPLACEMENT


def normalize_text(text: str) -> str:
    r"""Return ``text`` with lone surrogates replaced and NUL bytes removed.

    >>> normalize_text("a\x00b\ud800")
    'ab\ufffd'
    """
    # isascii is O(1) in CPython (ASCII text holds no surrogate); an encoder's check
    # is one pass of C, several times faster than the pattern's search
    if not text.isascii() and has_lone_surrogate(text):
        return _SURROGATE_OR_NUL.sub(_replace, text)
    return text.replace("\x00", "") if "\x00" in text else text


# A compact str's size: a header, then (length + 1) code units of 1, 2 or 4 bytes.
_HEADER = sys.getsizeof("\u0100") - 4


def has_lone_surrogate(text: str) -> bool:
    r"""Tell whether ``text`` holds a lone surrogate, the one thing UTF-8 cannot encode.

    Every strict encoder refuses exactly those, so the cheapest for the text's width
    answers: Latin-1 (a copy) clears a text whose code points are all below 256 (70
    times faster than encoding it to UTF-8), UTF-16 or UTF-32 checks a wider one
    (twice as fast): a lineage of long non-ASCII summaries saves a millisecond a commit.
    The width is read from the text's size; a wrong guess only costs time.

    >>> has_lone_surrogate("café ☕"), has_lone_surrogate("caf\ud800")
    (False, True)
    """
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        pass
    else:
        return False
    wide = sys.getsizeof(text) > _HEADER + 3 * (len(text) + 1)
    try:
        text.encode("utf-32-le" if wide else "utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def _is_extender(char: str) -> bool:
    """Tell whether ``char`` attaches to the character before it."""
    return (
        unicodedata.combining(char) != 0
        or unicodedata.category(char) in ("Mn", "Me", "Mc")
        or "\ufe00" <= char <= "\ufe0f"  # variation selectors
        or char == _ZWJ
        or "\U0001f3fb" <= char <= "\U0001f3ff"  # emoji skin-tone modifiers
    )


def safe_boundary(text: str, index: int) -> int:
    """Return the largest character boundary <= ``index``."""
    index = max(0, min(index, len(text)))
    while 0 < index < len(text) and (
        _is_extender(text[index]) or text[index - 1] == _ZWJ
    ):
        index -= 1
    return index


def cut_chars(text: str, limit: int) -> str:
    """Return ``text`` cut to at most ``limit`` characters, marked with an ellipsis.

    Text that fits is returned unchanged. A cut piece ends with ``…`` and, ellipsis
    included, is at most ``limit`` code points long; it never splits a character.
    """
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    return text[: safe_boundary(text, limit - 1)] + ELLIPSIS
