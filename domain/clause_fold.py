"""Near-duplicate clauses folded into one: the range or the set of what differs.

A *clause* is one short statement (a summary's line, or one of its ``; `` items).

- Values: clauses that differ only by one value (a number, a date, an id: a token
  holding a digit) fold into one that holds, at that place, the distinct values in
  order of first appearance, a run of consecutive integers written as a range with an
  en dash (``Step 1\u201334, please keep within budget``). Clauses that differ by two
  values or more are records (``row 3 read at 10:03``) and stay apart.
  So do clauses whose slot's comma is the text's own, not a fold's list: one a fold
  would not have written so (``score 3, 1``; plain integers beside other values,
  ``site25.example, 12 days ago``), or lists of as many values that differ in two
  (``May 3, 2023`` and ``May 9, 2024``).
- Words: clauses that share their opening and their closing and differ only by a
  short middle (at most ``MAX_MEMBER_WORDS`` words or ``MAX_MEMBER_CJK`` Chinese
  characters, holding a content word, no negation, no punctuation) fold into one that
  lists the middles (``help with flights, hotel near Alfama, the tram 28
  schedule?``; ``、`` between Chinese members). The shared part must hold
  ``MIN_ANCHOR_WORDS`` words or ``MIN_ANCHOR_CJK`` Chinese characters, and the
  opening a word of them (what differs at the start is the sentence's head, not an
  item); two lists (or a list and a clause whose middle has a comma) never merge.
  Chinese, which has no spaces, folds only where the shared part is at least half
  as long as the longest member and an opening that runs on into what differs
  keeps ``MIN_CJK_RUN`` characters of that run: "我在准备搬家" and "我们11月8日搬家"
  share "我" and "搬家" and stay apart (no "我在准备、们11月8日搬家"). A closing
  does too, else the members take it whole ("我们准备搬家、回家", not "搬、回家"; a
  final particle such as "吧" stays shared), and no member is one Chinese character
  between Chinese ones ("请看一下一个例子" and "请看一下这个例子" stay apart).

The fold is idempotent and stable across re-folding: a folded clause reads back as
the clauses it stands for (a range as its values, a list as its members), so folding
it again with more clauses only widens its range or its set, and folding its output
changes nothing. It never loses a distinct value: a fold whose clause would be longer
than ``max_chars`` does not happen, and both clauses stay.

A long clause is cut by ``stable_cut``, counting each value as ``SLOT_WIDTH``
characters, so that clauses differing only by their values
("number 9: …", "number 10: …") are cut at the same place and still fold.

Repeated tool calls fold their arguments in ``argument_fold``, with the same slots
(``values_of``, ``rendered_values``).

About 610 lines: tokens, slots, both folds and the cut read the same tokens.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable, Sequence
from itertools import accumulate

from .text import cut_chars, safe_boundary

__all__ = [
    "MAX_CANDIDATES",
    "MAX_MEMBER_CJK",
    "MAX_MEMBER_WORDS",
    "MAX_VALUE_CHARS",
    "MIN_ANCHOR_CJK",
    "MIN_ANCHOR_WORDS",
    "MIN_CJK_RUN",
    "SLOT_WIDTH",
    "clause_shape",
    "fold_clauses",
    "rendered_values",
    "stable_cut",
    "values_of",
]

MAX_MEMBER_WORDS = 4
MAX_MEMBER_CJK = 12
MIN_ANCHOR_WORDS = 2
MIN_ANCHOR_CJK = 3
MIN_CJK_RUN = 2
"""The Chinese characters a fold's shared opening keeps of a run of them that goes
on into what differs (``fold_clauses``)."""
MAX_CANDIDATES = 8
"""The clauses sharing an opening or a closing that a clause is tried against: the
newest few, so that folding ``n`` clauses stays linear in ``n``."""
MAX_RANGE = 1000
"""The widest range read back as its values; a wider one stays one value."""
DASH = "\u2013"
SLOT_WIDTH = 3
"""The characters any value counts for where ``stable_cut`` cuts a clause."""
ELLIPSIS = "\u2026"
"""What ends a cut clause (``text.ELLIPSIS``)."""

MAX_VALUE_CHARS = 127
"""The longest value (``ORD-9``, ``v1.2.3``, ``10:03``): a longer run of letters and
digits is read as words and characters, so tokens are read in linear time."""
_VALUE = (  # bounded runs: no quadratic backtracking on "a1a1…a1_" (no atomic groups)
    r"(?:[A-Za-z_#$\u20ac\u00a3\u00a5][A-Za-z0-9_-]{0,62})?\d"
    r"(?:[A-Za-z0-9_#./:%-]{0,62}[A-Za-z0-9%])?"
)
_SLOT = rf"{_VALUE}(?:(?:{DASH}|, ){_VALUE})*"
_TOKEN = re.compile(
    rf"(?P<slot>(?<![A-Za-z0-9_]){_SLOT}(?![A-Za-z0-9_]))"
    r"|(?P<word>[A-Za-z][A-Za-z'\u2019-]*)"
    r"|(?P<cjk>[\u3400-\u9fff])"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.ASCII | re.DOTALL,
)
_INTEGER = re.compile(r"[1-9]\d{0,5}|0")
_RANGE = re.compile(rf"([1-9]\d{{0,5}}|0){DASH}([1-9]\d{{0,5}}|0)")
_NOT_CONTENT = frozenset(
    """a an the of to in on at by for and or but with from as is are was were be been
    not no never nor can't cannot don't didn't won't isn't wasn't aren't doesn't
    can do does did will would should could may might must very more less""".split()  # noqa: SIM905
)
_NEGATION = frozenset("不没别未非无勿")
_FINAL_PARTICLES = frozenset("吧吗呢啊呀啦嘛")
_MEMBER_SEPARATORS = (", ", "、")
_CONTENT_KINDS = ("word", "slot", "cjk")  # what ``_words`` counts
_KIND = operator.itemgetter(0)
_CJK = re.compile(r"[\u3400-\u9fff]")  # what ``_TOKEN`` reads as a cjk token


_PAIRS: dict[tuple[str, str], tuple[str, str]] = {}
"""One ``(kind, text)`` pair per distinct token, shared by every clause holding it."""
MAX_PAIRS = 65536
"""The distinct tokens ``_PAIRS`` keeps before it starts afresh."""


@functools.lru_cache(maxsize=8192)
def _tokens(clause: str) -> tuple[tuple[str, str], ...]:
    """Return ``(kind, text)`` per token: slot, word, cjk, space or other.

    Each pair is the one ``_PAIRS`` holds for that token: a clause's new pairs would
    otherwise stay in the cache as objects the garbage collector tracks until its
    next pass (a pair of strings is then let go), one per token of every clause
    cached, and a host folding in its own process would run more collections of
    its oldest generation, which stop every thread.
    """
    pairs = _PAIRS
    if len(pairs) > MAX_PAIRS:
        pairs.clear()  # (values, ids: tokens that do not come back)
    shared = pairs.setdefault
    # every match names its group: ``or ""`` only types it, cheaper than ``str()``
    return tuple(
        [
            shared(pair := (m.lastgroup or "", m.group()), pair)
            for m in _TOKEN.finditer(clause)
        ]
    )


def _key(kind: str, text: str) -> str:
    if kind == "slot":
        return "\0"
    if kind == "space":
        return " "
    return text.casefold()


@functools.lru_cache(maxsize=8192)
def _shape(clause: str) -> tuple[str, ...]:
    return tuple(_key(kind, text) for kind, text in _tokens(clause))


@functools.lru_cache(maxsize=8192)
def clause_shape(clause: str) -> str:
    r"""Return ``clause`` with each value (or range, or set of values) as ``\\0``.

    >>> a, b = "Step 12, keep in budget", "step 1\u20133, keep in budget"
    >>> clause_shape(a) == clause_shape(b)
    True
    """
    return "".join(_shape(clause))


def stable_cut(text: str, limit: int) -> str:
    """Return ``text`` cut to about ``limit`` characters, marked with ``…``.

    Each value counts as ``SLOT_WIDTH`` characters, whatever its length, so clauses
    that differ only by their values are cut at the same place of their words and
    keep one shape (they fold); the cut may then be a few characters longer than
    ``limit``, never twice as long. A value is never cut: the cut ends before it. A
    text that fits (so counted) comes back unchanged. A long text is read only up to
    the cut: its tokens are neither copied nor remembered.

    >>> a = stable_cut("s9 says number 9: " + "words " * 12, 40)
    >>> b = stable_cut("s9 says number 10: " + "words " * 12, 40)
    >>> a, clause_shape(a) == clause_shape(b)
    ('s9 says number 9: words words words…', True)
    """
    sizes: Iterable[tuple[str, int]]  # (kind, characters) per token
    if len(text) < 2 * limit:
        tokens = _tokens(text)  # they cover the text: only values count otherwise
        slots = [len(token) for kind, token in tokens if kind == "slot"]
        if len(text) + SLOT_WIDTH * len(slots) - sum(slots) <= limit:
            return text  # it fits
        sizes = ((kind, len(token)) for kind, token in tokens)  # a pair at a time
    else:
        sizes = ((str(m.lastgroup), m.end() - m.start()) for m in _TOKEN.finditer(text))
    used = 0  # characters so counted
    at = 0  # characters of ``text`` kept
    for kind, size in sizes:
        width = SLOT_WIDTH if kind == "slot" else size
        if used + width > limit - 1 or at + size >= 2 * limit:
            if kind != "slot":  # a word's first characters; never a value's
                at += max(0, min(limit - 1 - used, 2 * limit - 1 - at))
            break
        used += width
        at += size
    kept = text[: safe_boundary(text, at)].rstrip()  # never half an emoji
    if not kept.strip():
        return cut_chars(text, limit)
    return kept + ELLIPSIS


def values_of(slot: str) -> list[str]:
    r"""Return the values a slot stands for: a range as its integers, a set as items.

    >>> values_of("1\u20133, 7, ORD-9")
    ['1', '2', '3', '7', 'ORD-9']
    """
    return list(_values(slot))


@functools.lru_cache(maxsize=8192)
def _values(slot: str) -> tuple[str, ...]:
    """Return ``values_of``, remembered: a folded range comes back at every fold."""
    expanded: list[str] = []
    for piece in re.split(r", ", slot):
        ranged = _RANGE.fullmatch(piece)
        if ranged and 0 < int(ranged[2]) - int(ranged[1]) <= MAX_RANGE:
            expanded.extend(str(n) for n in range(int(ranged[1]), int(ranged[2]) + 1))
        else:
            expanded.append(piece)
    return tuple(dict.fromkeys(expanded))


def rendered_values(values: Sequence[str]) -> str:
    """Return distinct values as a slot: integers sorted into ranges, else in order."""
    return _rendered(tuple(values))


@functools.lru_cache(maxsize=8192)
def _rendered(values: tuple[str, ...]) -> str:
    """Return ``rendered_values``, remembered: a range comes back at every fold."""
    if all(_INTEGER.fullmatch(v) for v in values):
        numbers = sorted({int(v) for v in values})
        runs: list[str] = []
        start = previous = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == previous + 1:
                previous = number
                continue
            run = f"{start}{DASH}{previous}"
            runs.append(str(start) if start == previous else run)
            if number is not None:
                start = previous = number
        return ", ".join(runs)
    return ", ".join(dict.fromkeys(values))


def _merged_slots(texts: Sequence[str]) -> str | None:
    """Return the clauses of one shape as one, each slot their values' union.

    None when a slot's comma is the text's own, for a union would garble what it
    says: a slot that would hold plain integers beside other values ("site25.example,
    12 days ago"), one a fold would not have written so ("3, 1", "4, 5"), or two
    lists of as many values that differ in more than one ("May 3, 2023" and "May 9,
    2024": records, as two values apart are).
    """
    token_lists = [_tokens(text) for text in texts]
    first = token_lists[0]
    pieces: list[str] = []
    for index, (kind, text) in enumerate(first):
        if kind != "slot":
            pieces.append(text)
            continue
        if not _foldable([tokens[index][1] for tokens in token_lists]):
            return None
        values: list[str] = []
        for tokens in token_lists:
            values.extend(values_of(tokens[index][1]))
        integers = sum(1 for v in values if _INTEGER.fullmatch(v))
        if 0 < integers < len(values):
            return None  # integers and other values: not one set
        pieces.append(rendered_values(list(dict.fromkeys(values))))
    return "".join(pieces)


def _foldable(slots: Sequence[str]) -> bool:
    """Tell whether the values of ``slots`` (one place of clauses of one shape) fold."""
    lists = [slot.split(", ") for slot in slots if ", " in slot]
    if any(rendered_values(values_of(slot)) != slot for slot in slots if ", " in slot):
        return False  # not as a fold writes its values: the comma is the text's own
    if len(lists) == len(slots) > 1 and len({len(m) for m in lists}) == 1:
        return sum(len(set(c)) > 1 for c in zip(*lists, strict=True)) <= 1
    return True


def _one_value_apart(a: str, b: str) -> bool:
    """Tell whether two clauses of one shape differ by one value at most."""
    ta, tb = _tokens(a), _tokens(b)
    if sum(map(operator.ne, ta, tb)) <= 1:
        return True  # one token apart at most (one shape: a value, or a letter case)
    pairs = zip(ta, tb, strict=True)
    return sum(kind == "slot" and x != y for (kind, x), (_, y) in pairs) <= 1


def _words(tokens: Sequence[tuple[str, str]]) -> tuple[int, int]:
    """Return the words and the Chinese characters among ``tokens``."""
    kinds = list(map(_KIND, tokens))  # counted in C: a Chinese token is a character
    return kinds.count("word") + kinds.count("slot"), kinds.count("cjk")


def _is_member(text: str) -> bool:
    """Tell whether ``text`` may be one item of a folded set (a short content part)."""
    if len(_CJK.findall(text)) > MAX_MEMBER_CJK:  # one cjk token each: no need to read
        return False
    tokens = _tokens(text.strip())
    if not tokens:
        return False
    words, cjk = _words(tokens)
    if words > MAX_MEMBER_WORDS or cjk > MAX_MEMBER_CJK or words + cjk == 0:
        return False
    if any(
        (kind == "cjk" and t in _NEGATION) or (kind == "other" and t not in "'-")
        for kind, t in tokens
    ):
        return False  # a negation, or punctuation: more than a few words
    return any(
        (kind == "word" and t.casefold() not in _NOT_CONTENT and len(t) > 1)
        or kind in ("slot", "cjk")
        for kind, t in tokens
    )


def _members(middle: str) -> list[str]:
    for separator in _MEMBER_SEPARATORS:
        if separator in middle:
            return [m for m in (p.strip() for p in middle.split(separator)) if m]
    return [middle.strip()] if middle.strip() else []


def _open_left(middle: str) -> bool:
    """Tell whether a middle opens with a separator (a member cut)."""
    return middle.strip()[:1] in (",", "\u3001")


def _open_right(middle: str) -> bool:
    """Tell whether a middle closes with a separator (a member cut)."""
    return middle.strip()[-1:] in (",", "\u3001")


@functools.lru_cache(maxsize=8192)
def _offsets(clause: str) -> tuple[int, ...]:
    """Return where each token of ``clause`` starts, and its length: they cover it."""
    return tuple(accumulate((len(t) for _, t in _tokens(clause)), initial=0))


@functools.lru_cache(maxsize=8192)
def _exact_keys(clause: str) -> tuple[str, ...]:
    return tuple(_key(k, t) if k != "slot" else t for k, t in _tokens(clause))


def _cjk_run(tokens: Sequence[tuple[str, str]]) -> int:
    """Return how many Chinese characters open ``tokens`` in a row."""
    run = 0
    for kind, _ in tokens:
        if kind != "cjk":
            break
        run += 1
    return run


def _whole_cjk_cut(
    ta: Sequence[tuple[str, str]], tb: Sequence[tuple[str, str]], start: int
) -> bool:
    """Tell whether an opening cut inside a run of Chinese characters keeps enough.

    Chinese has no spaces: where the shared opening runs into a differing middle
    without punctuation, a space or a value between them, the cut may fall inside
    a word ("我|们"). Such a cut needs ``MIN_CJK_RUN`` shared characters in that run.
    """
    shared = _cjk_run(ta[:start][::-1])
    return not (
        0 < shared < MIN_CJK_RUN
        and (_cjk_run(ta[start:][:1]) or _cjk_run(tb[start:][:1]))
    )


def _cjk_word_cut(
    ta: Sequence[tuple[str, str]], tb: Sequence[tuple[str, str]], start: int, end: int
) -> tuple[int, int] | None:
    """Return the opening and closing characters the middles must take, or None.

    The closing side keeps whole words as the opening does (``_whole_cjk_cut``):
    where a middle runs straight into a shared closing of Chinese characters, that
    closing keeps ``MIN_CJK_RUN`` of them, else the middles take it whole
    ("搬|家": "搬家、回家"; a sentence's final particle, "吧", is a word of its own).
    A member of one Chinese character is a word cut: between Chinese ones, no fold
    ("请看一下一|个例子", "周|一|交付"); beside Chinese on one side, it takes that run.
    """
    tail = ta[len(ta) - end :]
    tail_cjk = _cjk_run(tail)
    lead_cjk = _cjk_run(ta[:start][::-1])
    middles = [tokens[start : len(tokens) - end] for tokens in (ta, tb)]
    pieces = [
        [
            p.strip()
            for p in "".join(
                "\1" if k == "other" and t in "\u3001," else t for k, t in middle
            ).split("\1")
        ]
        for middle in middles
    ]
    for middle, mine, other in zip(middles, pieces, pieces[::-1], strict=True):
        if not middle:
            continue
        if (
            0 < tail_cjk < MIN_CJK_RUN
            and middle[-1][0] == "cjk"
            and not (tail_cjk == 1 and tail[0][1] in _FINAL_PARTICLES)
        ):
            return 0, tail_cjk
        # a one-character member the other middle does not share ("搬" of "搬|家")
        first = _cjk_run(middle) == 1 and len(mine[0]) == 1 and mine[0] not in other
        last = (
            _cjk_run(middle[::-1]) == 1 and len(mine[-1]) == 1 and mine[-1] not in other
        )
        first, last = first and lead_cjk > 0, last and tail_cjk > 0
        if first and (last or len(middle) == 1) and tail_cjk:
            return None  # "周|一|交付": one character between Chinese ones
        if first or last:
            return (lead_cjk if first else 0), (tail_cjk if last else 0)
    return 0, 0


@functools.lru_cache(maxsize=8192)
def _merged_middles(a: str, b: str, max_chars: int) -> str | None:
    """Return ``a`` and ``b`` folded by their differing middle, or None.

    Remembered: the next compression tries the same pairs of kept clauses again.
    """
    if _shape(a) == _shape(b):
        return None  # a record with other values (``_fold_shapes``), not a list
    ta, tb = _tokens(a), _tokens(b)
    ka, kb = _exact_keys(a), _exact_keys(b)
    at_a, at_b = _offsets(a), _offsets(b)
    limit = min(len(ka), len(kb))
    start = 0
    while start < limit and ka[start] == kb[start]:
        start += 1
    end = 0
    while end < limit - start and ka[-1 - end] == kb[-1 - end]:
        end += 1
    # The loop only widens the middle: an anchor too small now stays too small, and
    # an opening without a word (``opening``: the first) never gains one.
    words, cjk = _words([*ta[:start], *ta[len(ta) - end :]])
    if words < MIN_ANCHOR_WORDS and cjk < MIN_ANCHOR_CJK:
        return None
    opening = next((i for i, (k, _) in enumerate(ta) if k in _CONTENT_KINDS), len(ta))
    for _ in range(2 * MAX_MEMBER_WORDS + MAX_MEMBER_CJK):  # whole members only
        if start <= opening:
            return None  # no common opening word: no list (below)
        middle_a = a[at_a[start] : at_a[len(ta) - end]]  # its tokens, joined
        middle_b = b[at_b[start] : at_b[len(tb) - end]]
        left = _open_left(middle_a) or _open_left(middle_b)
        right = _open_right(middle_a) or _open_right(middle_b)
        empty = not middle_a.strip() or not middle_b.strip()
        if left and start:
            start -= 1
        elif right and end:
            end -= 1
        elif empty and start:
            start -= 1
        elif empty and end:
            end -= 1
        elif left or right or empty:
            return None
        elif all(_is_member(m) for m in (*_members(middle_a), *_members(middle_b))):
            if not _whole_cjk_cut(ta, tb, start):
                return None  # a cut one character into a run of Chinese
            taken = _cjk_word_cut(ta, tb, start, end)
            if taken is None:
                return None  # one Chinese character between Chinese ones
            if taken == (0, 0):
                break
            start, end = start - taken[0], end - taken[1]  # "搬|家": whole words
        elif end:  # a member cut short ("the" of "the tram"): widen to its end
            end -= 1
        elif start:
            start -= 1
        else:
            return None
    else:
        return None
    anchor = [*ta[:start], *ta[len(ta) - end :]]
    words, cjk = _words(anchor)
    if (words < MIN_ANCHOR_WORDS and cjk < MIN_ANCHOR_CJK) or not any(
        _words(ta[:start])
    ):
        return None  # too little in common, or no common opening: no list
    separator = "、" if any(k == "cjk" for k, _ in anchor) else ", "
    members_a, members_b = _members(middle_a), _members(middle_b)
    if not members_a or not members_b or min(len(members_a), len(members_b)) > 1:
        return None  # two lists, or a list and a clause with commas: no fold
    if not all(_is_member(m) for m in (*members_a, *members_b)):
        return None
    longest = max(sum(_words(_tokens(m))) for m in (*members_a, *members_b))
    if separator == "、" and 2 * (words + cjk) < longest:
        return None  # Chinese sharing less than half of what differs: no list
    lead = "".join(t for _, t in ta[:start])
    tail = "".join(t for _, t in ta[len(ta) - end :])
    members = list(dict.fromkeys([*members_a, *members_b]))
    padding_a = middle_a[: len(middle_a) - len(middle_a.lstrip())]
    padding_b = middle_a[len(middle_a.rstrip()) :]
    folded = lead + padding_a + separator.join(members) + padding_b + tail
    return folded if len(folded) <= max_chars else None


def _fold_shapes(clauses: list[str], max_chars: int) -> list[str]:
    """Fold the clauses of one shape, in order; a too long fold starts a new one."""
    out: list[str] = []
    at: dict[object, int] = {}
    for clause in clauses:
        shape = _shape(clause)
        if "\0" not in shape:
            key = " ".join("".join(shape).split())
            if key in at:
                continue  # the same clause again
            at[key] = len(out)
            out.append(clause)
            continue
        index = at.get(shape)
        if index is not None and _one_value_apart(out[index], clause):
            merged = _merged_slots([out[index], clause])
            if merged is not None and len(merged) <= max_chars:
                out[index] = merged
                continue
        at[shape] = len(out)
        out.append(clause)
    return out


@functools.lru_cache(maxsize=8192)
def _anchors(clause: str) -> tuple[str, ...]:
    """Return the keys a clause shares with those it may fold with by a middle."""
    keys = [k for k in _shape(clause) if k.strip()]
    if len(keys) < 2:
        return ()
    return (
        "<" + "\1".join(keys[:2]),
        ">" + "\1".join(keys[-2:]),
        "=" + keys[0] + "\1" + keys[-1],
    )


def _fold_middles(clauses: list[str], max_chars: int) -> list[str]:
    """Fold clauses that differ by a short middle, each into the first it fits."""
    out: list[str | None] = []
    buckets: dict[str, list[int]] = {}
    for clause in clauses:
        keys = _anchors(clause)
        candidates = sorted(
            {i for key in keys for i in buckets.get(key, ())[-MAX_CANDIDATES:]}
        )  # the newest few of each bucket: linear work, whatever the clauses
        for index in candidates:
            kept = out[index]
            if kept is None:
                continue
            merged = _merged_middles(kept, clause, max_chars)
            if merged is not None:
                out[index] = merged
                for key in _anchors(merged):
                    buckets.setdefault(key, []).append(index)
                break
        else:
            for key in keys:
                buckets.setdefault(key, []).append(len(out))
            out.append(clause)
    return [clause for clause in out if clause is not None]


def fold_clauses(clauses: Iterable[str], max_chars: int = 320) -> list[str]:
    r"""Return ``clauses`` with near-duplicates folded, each at its first's place.

    Args:
        clauses: the clauses, oldest first.
        max_chars: the longest folded clause; a fold that would be longer does not
            happen (both clauses stay, nothing is lost).

    >>> folded = fold_clauses(["Step 1, keep in budget", "Step 2, keep in budget",
    ...                        "Step 3, keep in budget"])
    >>> folded == ["Step 1\u20133, keep in budget"]
    True
    >>> fold_clauses(["todo list: flights", "todo list: hotel near Alfama",
    ...               "todo list: the tram 28 schedule"])
    ['todo list: flights, hotel near Alfama, the tram 28 schedule']
    >>> fold_clauses(["希望第1步能尽快完成", "希望第2步能尽快完成"])[0][:6]
    '希望第1\u20132'
    """
    return list(_folded(tuple(c for c in clauses if c.strip()), max_chars))


@functools.lru_cache(maxsize=1024)
def _folded(clauses: tuple[str, ...], max_chars: int) -> tuple[str, ...]:
    """Return ``fold_clauses``, remembered: a summary's facts come back each call."""
    current = list(clauses)
    for _ in range(8):  # each pass only merges; a fixed point comes quickly
        folded = _fold_middles(_fold_shapes(current, max_chars), max_chars)
        if folded == current:
            break
        current = folded
    return tuple(current)
