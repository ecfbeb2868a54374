"""Pinned facts: identifiers a summary must not lose, re-attached deterministically.

After the summarizer answers, identifiers found in the folded transcript (ids and codes,
numbers with units, dates, file paths, URLs, e-mail addresses, and names the user
introduced) and the pins the previous summary carried are checked against the new
summary; those it lost are appended in one short section (``Pinned facts: a; b; c``,
``固定事实：…`` in Chinese), within the budget: the newest pins are kept, the
oldest give way first. Any summarizer, even one that answers a generic sentence,
then keeps them. A quantity is pinned with the words before it that say what it
measures (``Lisbon: 20°C``, ``budget is 1,200 EUR``; ``in_context``), and not at
all when none do (a search hit's "12 days ago"): a bare "20°C" tells a reader nothing.

Matching is literal and case-insensitive: a pin counts as kept when its text appears in
the summary as written (a paraphrase such as "twelve kilograms" for ``12 kg`` does not);
a quantity's context need not (``pin_value``).

Why about 525 lines: the identifier kinds, the pre-filters that keep the scan linear
and cheap on every line, a quantity's context and the pinned section are one concern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from .config import Locale
from .lexicon import MONTHS as _MONTHS
from .lexicon import UNITS as _UNITS
from .truncate import truncate_to_tokens

PIN_HEADERS: dict[Locale, str] = {"en": "Pinned facts: ", "zh": "固定事实："}
PIN_SEPARATORS: dict[Locale, str] = {"en": "; ", "zh": "；"}
MAX_PIN_SHARE = 0.25
"""Pins may take up to this share of the budget, cutting the summary's end for room."""
MAX_PIN_CHARS = 120
"""A longer match is no identifier (a megabyte of digits, a path of many parts)."""
MAX_PINS = 200
"""At most this many identifiers are taken from one transcript."""
MAX_KEPT = 24
"""A pinned section lists at most this many pins: the newest."""
MAX_PER_LINE = 4
"""At most this many pins come from one user or assistant entry."""
MAX_PER_TOOL_RESULT = 1
"""A tool result gives its first identifier only: its outcome. One listing search hits
holds dozens of numbers that would push the conversation's own identifiers out."""

_NAME = r"[A-Z][a-z]+(?: [A-Z][a-z]+){0,2}"
MAX_WORD_CHARS = 256
"""Only the head of a longer word is scanned (a pasted blob, a minified line): no pin
is longer than ``MAX_PIN_CHARS``; the head keeps the identifier a blob opens with."""
MAX_SCAN_CHARS = 1024
"""The identifier pattern scans pieces of at most this many characters (kept words cut
at a word boundary), so its work is linear in the text on any input."""

_QUANTITY_KIND = (
    rf"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?|(?<![\d,.])\d[\d,]*(?:\.\d+)?\s?{_UNITS}"
    r"(?![A-Za-z]))"
)
"""An amount or a number with its unit: "12 kg", "$2,400", "20°C"."""
# One pass, leftmost match first; at one position the earlier kind wins (a URL's path
# is no file path, an id's digits are no number). Every unbounded run starts only where
# a run of its characters starts (the lookbehinds): at any later position of the same
# run it could only match what the earlier start already tried, and retrying there is
# what made a long word cost quadratic time.
_KINDS: tuple[str, ...] = (
    r"https?://[^\s<>\"'`)\]}，。；]+",  # URLs
    r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail addresses
    r"(?<![\w/.])(?:~|\.{1,2})?/(?:[\w.@-]+/)*[\w.@-]+",  # absolute paths
    r"\b[A-Za-z]:\\(?:[\w. -]+\\)*[\w.-]+",  # Windows paths
    r"(?<![\w/-])-*\b(?:[\w-]+/)+[\w-]+\.[A-Za-z0-9]{1,6}\b",  # relative file paths
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b",  # ISO dates
    rf"\b\d{{1,2}} {_MONTHS}(?: \d{{4}})?\b",  # 3 March 2026
    rf"\b{_MONTHS} \d{{1,2}}(?:, \d{{4}})?\b",  # March 3, 2026
    r"\d{4}年\d{1,2}月(?:\d{1,2}日)?",  # 2026年3月3日
    r"#\d{3,}\b",  # #4711
    r"\b[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)+\b",  # ORD-2041, TICKET_77-B
    r"\b(?:[A-Z]+\d|\d+[A-Z])[A-Z0-9]{3,}\b",  # X7K9P2, 4XK9Q
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",  # UUIDs
    _QUANTITY_KIND,
)
_IDENTIFIER = re.compile("|".join(f"(?:{kind})" for kind in _KINDS))
_NEEDS = ("/", "@", "/", "\\", "/", "-", "A", "A", "年", "#", "A", "A", "-", "")
"""The character each kind cannot match without, in ``_KINDS``'s order ("A": an ASCII
capital letter, which month names and code kinds open with; "": none)."""
_NEEDED = "/@\\-年#"
_FIRSTS = (
    "h",
    r"\w.+\-",
    "~./",
    "A-Za-z",
    r"\w\-",
    r"\d",
    r"\d",
    "A-Z",
    r"\d",
    "#",
    "A-Z",
    r"A-Z\d",
    "0-9a-f",
    r"$€£¥\d",
)
"""What each kind's match opens with, in ``_KINDS``'s order (a character class's
inside): a position no included kind can open at is passed by one test.
"""
_CAPITAL = re.compile("[A-Z]")


@functools.lru_cache(maxsize=128)  # every subset of _NEEDED and "A" fits
def _identifiers(present: frozenset[str]) -> re.Pattern[str]:
    """Return the identifier pattern without the kinds ``present`` rules out.

    A kind left out could not match (its required character is absent), and the
    kinds keep their order, so the matches are exactly ``_IDENTIFIER``'s: only the
    work of trying them at every position goes. A lookahead of what the kinds open
    with (``_FIRSTS``) passes every other position at one test.
    """
    kinds, firsts = [], []
    for kind, need, first in zip(_KINDS, _NEEDS, _FIRSTS, strict=True):
        if not need or need in present:
            kinds.append(kind)
            firsts.append(first)
    opens = "".join(dict.fromkeys(firsts))
    return re.compile(f"(?=[{opens}])(?:" + "|".join(f"(?:{k})" for k in kinds) + ")")


def _pattern_for(piece: str) -> re.Pattern[str]:
    present = [c for c in _NEEDED if c in piece]
    if _CAPITAL.search(piece) is not None:
        present.append("A")
    return _identifiers(frozenset(present))


_TRIGGER = re.compile(r"[\d@/\\#$€£¥]")
"""Every identifier kind holds one of these: text without them is skipped cheaply."""
_ASCII_MARKS = bytes(
    0 if chr(b) in "0123456789@/\\#$" else 1 if b == 0 else b for b in range(256)
)
"""For ASCII text: its trigger characters (``_TRIGGER``'s, as ASCII has no other
digits) become NUL, a NUL becomes 1, every other byte stays."""


def _has_trigger(line: str) -> bool:
    """Tell whether ``line`` holds a trigger character (ASCII: two passes of C)."""
    if line.isascii():
        return 0 in line.encode("ascii").translate(_ASCII_MARKS)
    return _TRIGGER.search(line) is not None


def scan_pieces(line: str) -> list[str]:
    """Return the pieces of ``line`` the identifier pattern scans, in order.

    Each whitespace-separated word with a trigger character is kept with its
    neighbours ("12 kg", "March 3, 2026"); runs of kept words become pieces of at
    most ``MAX_SCAN_CHARS`` characters, a word longer than ``MAX_WORD_CHARS`` gives
    its head only. Work on a line is therefore linear in its length.
    """
    return list(iter_pieces(line))


def iter_pieces(line: str) -> Iterator[str]:
    """Yield ``scan_pieces(line)`` one by one, each as soon as it is complete.

    A reader that stops early (a tool result gives one pin) leaves the rest of the
    line's words unvisited.
    """
    if not _has_trigger(line):
        return
    yield from _pieces(line)


def _pieces(line: str) -> Iterator[str]:
    """``iter_pieces`` of a line known to hold a trigger character."""
    words = line.split()
    run: list[str] = []
    size = 0
    previous = -2
    for index in _kept_words(words):
        head = words[index][:MAX_WORD_CHARS]
        if run and (index != previous + 1 or size + len(head) > MAX_SCAN_CHARS):
            yield " ".join(run)
            run, size = [], 0
        run.append(head)
        size += len(head) + 1
        previous = index
    if run:
        yield " ".join(run)


def _kept_words(words: Sequence[str]) -> Iterator[int]:
    """Yield the indexes of the words to scan, ascending, each once it is final.

    A word with a trigger character keeps itself and its neighbours, so a hit keeps
    none before its left neighbour: the kept words before that are final. A word of
    letters only (``str.isalpha``: no digit, no symbol) holds no trigger character
    and needs no search.
    """
    search = _TRIGGER.search
    last = len(words) - 1
    kept: list[int] = []  # ascending
    given = 0  # kept[:given] were yielded
    for index, word in enumerate(words):
        if word.isalpha() or search(word, 0, MAX_WORD_CHARS) is None:
            continue
        while given < len(kept) and kept[given] < index - 1:
            yield kept[given]
            given += 1
        if kept and kept[-1] >= index - 1:  # the previous word is kept already
            if kept[-1] == index - 1:
                kept.append(index)
        else:
            if index:
                kept.append(index - 1)
            kept.append(index)
        if index < last:
            kept.append(index + 1)
    yield from kept[given:]


# (words that must occur in the line, the pattern): the words are a cheap filter.
_INTRODUCED_NAMES: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (
        ("name", "call"),
        re.compile(rf"\b(?i:my name is|call me|I'm called|named) ({_NAME})"),
    ),
    (
        ("叫", "名字", "我是"),
        re.compile(r"(?:我叫|我的名字是|名字叫|我是)([\u4e00-\u9fff]{2,4})"),
    ),
)
_USER_LINE = re.compile(r"^(?:User|用户)[:：] ?")
# "User: [8 May 2023] ...": a message's opening date dates it; it is no fact of it.
_DATED_ENTRY = re.compile(
    r"^((?:User|Assistant|System|用户|助手|系统)[:：] ?)\[[^\[\]\n]{4,40}\]"
)
_TOOL_RESULT_LINE = re.compile(r"^(?:Tool result|工具结果)\(")
_NOT_NAMES = frozenset({"I", "The", "This", "That", "It", "We", "Not", "Just", "Sorry"})


_NAME_WORDS = re.compile(r"(?i:name|call)|叫|名字|我是")
"""Any of the introduced-name filters' words: a user line without them has no name."""


def _may_name(line: str) -> bool:
    """Tell whether ``line`` may introduce a name: ``_NAME_WORDS``, 5x faster.

    Substring searches, no case-insensitive pattern tried at every position. A rare
    extra "yes" (a casefold that expands, as U+0149 does) only lets the names'
    patterns, which decide, read the line.
    """
    if "叫" in line or "名字" in line or "我是" in line:
        return True
    folded = line.casefold()
    return "name" in folded or "call" in folded


def _clean(pin: str) -> str:
    return pin.strip().lstrip("-").rstrip(".,;:!?)]}'\"，。；：！？")


@attrs.frozen
class PinScan:
    """What a pass over transcript lines found, so a later pass need not repeat it.

    ``lines``: how many leading lines were scanned; ``pins``: what they gave, in order
    (``extract_pins``'s answer for them). A compression that scans a chunk's lines
    keeps its ``PinScan``; a retry, a halved chunk or the next commit over the same
    leading lines passes it as ``scanned`` and only the lines after it are read.
    """

    lines: int = 0
    pins: tuple[str, ...] = ()


def scan_pins(lines: Sequence[str], scanned: PinScan | None = None) -> PinScan:
    """Return the ``PinScan`` of ``lines``, reading only those after ``scanned``.

    ``scanned`` must come from the same leading lines (a prefix of ``lines``).

    >>> first = scan_pins(["User: order ORD-2041"])
    >>> scan_pins(["User: order ORD-2041", "User: 12 kg"], first).pins
    ('ORD-2041', '12 kg')
    """
    done = scanned or PinScan()
    if done.lines >= len(lines):
        return done
    found = {pin.casefold(): pin for pin in done.pins}
    _scan_into(found, lines[done.lines :])
    return PinScan(len(lines), tuple(list(found.values())[:MAX_PINS]))


def extract_pins(lines: Iterable[str]) -> list[str]:
    """Return the identifiers in ``lines`` (rendered transcript entries), in order.

    Each pin once (the first spelling), at most ``MAX_PINS``; names only from what the
    user said about themselves or others ("my name is Ada Lovelace", "我叫李雷"). A
    bracketed date that opens a message (``User: [8 May 2023] …``) dates the message
    and is not pinned. A line with none of the identifiers' characters (digits,
    ``@ / # $ € £ ¥``, a backslash) and no name phrase costs one scan of a small
    character class: nothing else reads it.

    >>> extract_pins(["User: my name is Ada Lovelace; order ORD-2041 ships 12 kg."])
    ['ORD-2041', '12 kg', 'Ada Lovelace']
    """
    found: dict[str, str] = {}
    _scan_into(found, lines)
    return list(found.values())[:MAX_PINS]


def _scan_into(found: dict[str, str], lines: Iterable[str]) -> None:
    """Add the pins of ``lines`` to ``found`` (casefolded -> first spelling)."""
    for line in lines:
        if len(found) >= MAX_PINS:
            break
        named = _USER_LINE.match(line) is not None and _may_name(line)
        triggered = _has_trigger(line)
        if not triggered and not named:
            continue  # the pre-filter: no candidate character, no name phrase
        dated = _DATED_ENTRY.match(line)
        if dated is not None:  # the opening date goes, the role stays
            line = dated.group(1) + line[dated.end() :]
            triggered = _has_trigger(line)
            named = named and _may_name(line)
        most = MAX_PER_TOOL_RESULT if _TOOL_RESULT_LINE.match(line) else MAX_PER_LINE
        taken = 0
        for piece in _pieces(line) if triggered else ():
            for match in _pattern_for(piece).finditer(piece):
                _add(found, _clean(match.group()))
                taken += 1
                if taken >= most:
                    break
            if taken >= most:
                break
        if named:
            folded = line.casefold()
            for words, pattern in _INTRODUCED_NAMES:
                if not any(word in folded for word in words):
                    continue
                for match in pattern.finditer(line):
                    name = _clean(match.group(1))
                    if name.split(" ")[0] not in _NOT_NAMES:
                        _add(found, name)


def _add(found: dict[str, str], pin: str) -> None:
    if 2 <= len(pin) <= MAX_PIN_CHARS:
        found.setdefault(pin.casefold(), pin)


def pinned_section(text: str, locale: Locale) -> tuple[str, list[str]]:
    """Split ``text`` into its body and the pins of its pinned section, if any."""
    header = PIN_HEADERS[locale].strip()
    lines = text.split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(header):
            listed = lines[index][len(header) :].strip()
            pins = [
                p.strip() for p in listed.split(PIN_SEPARATORS[locale].strip()) if p
            ]
            body = "\n".join(lines[:index] + lines[index + 1 :]).rstrip()
            return body, [p for p in pins if p]
    return text, []


def pins_line(text: str, locale: Locale) -> str:
    r"""Return the pinned facts section of ``text`` as one line ("" when it has none).

    >>> pins_line("Body.\nPinned facts: ORD-1; /a.py", "en")
    'Pinned facts: ORD-1; /a.py'
    """
    pins = pinned_section(text, locale)[1]
    return PIN_HEADERS[locale] + PIN_SEPARATORS[locale].join(pins) if pins else ""


def with_pins(
    summary: str,
    *,
    transcript: Sequence[str],
    previous: str | None,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    locale: Locale,
    scanned: PinScan | None = None,
) -> str:
    """Return ``summary`` with the pins it lost re-attached, within ``budget_tokens``.

    The pins are those of ``previous`` (its pinned section) then those of
    ``transcript``, oldest first. The summary body keeps at least
    ``1 - MAX_PIN_SHARE`` of the budget; within what is left, the newest lost pins are
    kept and the oldest give way. ``scanned``: a ``PinScan`` of the transcript's
    leading lines from an earlier pass (a retry, a halved chunk): those lines are
    not read again. The body is counted at most twice (before and after a cut).
    """
    body, carried = pinned_section(summary, locale)
    if previous:
        carried = [*pinned_section(previous, locale)[1], *carried]
    found = scan_pins(transcript, scanned).pins
    candidates = list(dict.fromkeys([*carried, *found]))
    folded = body.casefold()
    lost = [pin for pin in candidates if pin_value(pin).casefold() not in folded]
    if not lost:
        return body
    carried_set = set(carried)  # written with their context already
    lost = [pin if pin in carried_set else in_context(pin, transcript) for pin in lost]
    lost = list(dict.fromkeys(pin for pin in lost if pin))
    if not lost:
        return body
    header, separator = PIN_HEADERS[locale], PIN_SEPARATORS[locale]
    body_tokens = count_tokens(body)
    room = budget_tokens - body_tokens - 1  # the newline before the section
    allowed = max(room, int(budget_tokens * MAX_PIN_SHARE))
    # Each pin is counted once; a section's count is about the sum of its parts,
    # checked exactly once below (and trimmed, oldest first, in the rare miss).
    used = _pin_tokens(count_tokens, header)
    kept: list[str] = []
    for pin in reversed(lost[-MAX_KEPT:]):  # the newest first: the oldest give way
        cost = _pin_tokens(count_tokens, pin + separator)
        if used + cost > allowed:
            break
        used += cost
        kept.insert(0, pin)
    section = header + separator.join(kept)
    while kept and count_tokens(section) > allowed:
        kept.pop(0)
        section = header + separator.join(kept)
    if not kept:
        return body
    limit = budget_tokens - count_tokens(section) - 1
    if body_tokens > limit:
        body = _cut(body, limit, count_tokens)
    return f"{body}\n{section}" if body else section


_QUANTITY = re.compile(_QUANTITY_KIND)
_QUANTITY_END = re.compile(f"(?:{_QUANTITY_KIND})$")
_ENTRY_LABEL = re.compile(
    r"^(?:(?:User|Assistant|System|用户|助手|系统)[:：] ?"
    r"|(?:Tool result|工具结果)\([^()\n]*\)[:：] ?|(?:Call|调用) [^()\n]*\()"
)
_CLAUSE_TAIL = re.compile(
    r"(?:[^,;!?()\[\]{}|\n\u2013\u2014，。；！？、：.]|\.(?!\s)|：)*$"
)
"""The end of a text since its clause began (a colon stays: "Lisbon: 20°C")."""
CONTEXT_WORDS = 2
"""A quantity is pinned with at most this many words said before it in its clause."""
_NO_CONTEXT = frozenset(
    """the and for from with are was were has have had its his her our their this
    that these those about around than then per also just only each every into over
    after before ago until you your they them what which""".split()  # noqa: SIM905
)
_LETTERS = re.compile(r"[A-Za-z]{3,}|[\u4e00-\u9fff]{2,}")


def pin_value(pin: str) -> str:
    """Return what a pin must find in the summary: a quantity without its context.

    >>> pin_value("budget is 1,200 EUR"), pin_value("ORD-1"), pin_value("12 kg")
    ('1,200 EUR', 'ORD-1', '12 kg')
    """
    match = _QUANTITY_END.search(pin)
    return match.group().strip() if match and match.start() else pin


def in_context(pin: str, lines: Sequence[str]) -> str:
    """Return a quantity pin with what its line says it measures, or "" when nothing.

    "20°C" alone tells a reader nothing; "Lisbon: 20°C" does. The context is the
    last ``CONTEXT_WORDS`` words before the quantity's first occurrence in
    ``lines``, within its clause and without the entry's label, up to a word
    with a digit (another value); it needs a word of three letters or more that
    is not a function word (two CJK characters). A quantity with none (a search
    hit's "12 days ago") is no fact worth a pin. Other pins come back unchanged.

    >>> in_context("20°C", ["Tool result(get_weather): Lisbon: 20°C, rain"])
    'Lisbon: 20°C'
    >>> in_context("12 days", ["Tool result(web_search): 1. a forum, 12 days ago"])
    ''
    >>> in_context("ORD-1", []), in_context("5000元", ["用户：预算5000元"])
    ('ORD-1', '预算5000元')
    """
    if _QUANTITY.fullmatch(pin) is None:
        return pin
    for line in lines:
        at = line.find(pin)
        if at < 0:
            continue
        head = line[:at]
        label = _ENTRY_LABEL.match(head)
        tail = _CLAUSE_TAIL.search(head, label.end() if label else 0)
        words = (tail.group() if tail else "").replace('"', "").split()
        kept: list[str] = []
        for word in reversed(words):
            if len(kept) == CONTEXT_WORDS or any(c.isdigit() for c in word):
                break
            kept.insert(0, word[-8:] if not word.isascii() else word)
        if not any(
            letters.lower() not in _NO_CONTEXT
            for word in kept
            for letters in _LETTERS.findall(word)
        ):
            return ""
        joined = " ".join(kept).lstrip(" '`:")
        attached = not head[-1:].isascii() and not head[-1:].isspace()  # 预算5000元
        return f"{joined}{'' if attached else ' '}{pin}"
    return pin


def _pin_tokens(count_tokens: Callable[[str], int], text: str) -> int:
    """Return ``count_tokens(text)`` for a pin or the header.

    Not remembered across calls: a cache keyed by the counter would keep every
    engine's counter (and what it remembers) alive; the engine's counters remember
    long texts themselves.
    """
    return count_tokens(text)


def _cut(text: str, limit: int, count_tokens: Callable[[str], int]) -> str:
    return truncate_to_tokens(text, limit, count_tokens, " […]").rstrip()
