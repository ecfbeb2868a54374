r"""Stored text made safe to print: every character a terminal would act on, shown.

Chat text is untrusted. Written raw, an ESC starts an escape sequence (clear the
screen, write the clipboard through OSC 52, hide a link behind OSC 8 text), a C1
control (``\x9b`` is CSI) does the same on many terminals, a carriage return or
backspace overwrites what was printed, and a bidi override (Trojan Source) shows text
in another order than it is stored. Markup escaping (rich's) covers none of these.

``shown(text)`` returns the text with each such character written as its escape
(``\x1b``, ``\u202e``), visible and inert, on a terminal and in a pipe alike; every
other character is kept. ``json_shown(data)`` is ``json.dumps`` with the same
characters escaped as JSON ``\uXXXX`` escapes: the same values once parsed.

Neutralised: the C0 controls and DEL (``Cc``, tab and newline included: callers
split lines first), the C1 controls, the line and paragraph separators (``Zl``,
``Zp``), lone surrogates (``Cs``), and the invisible format characters (``Cf``: bidi
marks, embeddings, overrides and isolates, zero-width spaces, word joiners, BOM, soft
hyphen, tag characters...) except ZWNJ and ZWJ, which join letters in Persian and Indic
scripts and the parts of an emoji.
"""

from __future__ import annotations

import json
import re
import unicodedata

# ZWNJ and ZWJ shape real text (Persian, Indic scripts, emoji sequences): kept.
_KEPT_FORMAT = frozenset({"\u200c", "\u200d"})
_NEUTRALISED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _is_neutralised(char: str) -> bool:
    return (
        unicodedata.category(char) in _NEUTRALISED_CATEGORIES
        and char not in _KEPT_FORMAT
    )


# What may need neutralising: anything but printable ASCII (the common case is fast).
_CANDIDATE = re.compile(r"[^\x20-\x7e]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if not _is_neutralised(char):
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(text: str) -> str:
    r"""Return ``text`` with every character a terminal acts on written as its escape.

    A literal backslash is kept as it is.

    >>> print(shown("ok \x1b]52;c;cHduZWQ=\x07 \u202eevil\u202c"))
    ok \x1b]52;c;cHduZWQ=\x07 \u202eevil\u202c
    >>> print(shown("caf\u00e9 \u4f60\u597d \U0001f468\u200d\U0001f469"))
    café 你好 👨‍👩
    """
    return _CANDIDATE.sub(_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\n" or not _is_neutralised(char):  # a raw newline is the indent's
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # a UTF-16 surrogate pair, as JSON has
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def json_shown(data: object, *, indent: int | None = 2) -> str:
    r"""Return ``data`` as JSON whose text holds no character a terminal acts on.

    ``json.dumps`` escapes only the C0 controls (inside strings: a raw newline is
    the indentation's); the others are written as ``\uXXXX`` escapes too, so the
    document parses to the same values.

    >>> print(json_shown({"s": "\x9b2J\u202e"}, indent=None))
    {"s": "\u009b2J\u202e"}
    """
    return _CANDIDATE.sub(
        _json_escape, json.dumps(data, ensure_ascii=False, indent=indent)
    )
