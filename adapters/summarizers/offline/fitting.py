"""Merging facts and fitting them into the budget (extractive summarizer).

See ``extractive`` for the rules (merge by fact, budget, output); ``salience`` scores.
About 470 lines: merging, scoring and rendering read the same ``Fact``.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Literal

import attrs

from memory_summary.domain import cut_chars
from memory_summary.domain.clause_fold import clause_shape
from memory_summary.domain.config import Locale

from .dialogue import written_day
from .pacing import Pace, never
from .salience import IDENTIFYING, Kind, Role, Salience, score

Section = Literal["goals", "facts", "decisions", "tasks"]

HIGH_SCORE = 8
LOW_SHARE = 0.7  # past this share of the budget, only salient facts are added
HEADERS: dict[Locale, dict[Section, str]] = {
    "en": {
        "goals": "Goals:",
        "decisions": "Decisions:",
        "facts": "Facts:",
        "tasks": "Open tasks:",
    },
    "zh": {
        "goals": "目标：",
        "decisions": "决定：",
        "facts": "事实：",
        "tasks": "待办：",
    },
}
SPEAKERS: dict[Locale, dict[Role, str]] = {
    "en": {
        "user": "user",
        "assistant": "assistant",
        "system": "system",
        "call": "call",
        "tool": "tool",
    },
    "zh": {
        "user": "用户",
        "assistant": "助手",
        "system": "系统",
        "call": "调用",
        "tool": "工具",
    },
}
COLONS: dict[Locale, str] = {"en": ": ", "zh": "："}
SEPARATORS: dict[Locale, str] = {"en": "; ", "zh": "；"}
"""Between facts of one speaker that share a bullet."""
DAY_SEPARATOR = " | "
"""Between the speakers of one day's line."""
GROUP_CHARS = 320
"""The longest bullet that still takes another fact of its speaker."""
FACT_OVERHEAD_TOKENS = 2
"""A fact's estimated share of its bullet: the separator or the speaker's label."""
FILL_SCORE = 6
NOVEL_SHARE = 0.5
NOVEL_PENALTY = 2
"""A fact with less than ``NOVEL_SHARE`` of its content words new (not in an earlier
fact) restates what is kept: it scores ``NOVEL_PENALTY`` less (never below 1)."""
"""Past ``LOW_SHARE`` of the budget, only facts scoring at least this are added."""

VIEW_KINDS: frozenset[Kind] = frozenset({"personal", "plain", "goal", "question"})
"""A dated fact of only these kinds that tells no event is a view or a feeling ("love
how art heals"): it ranks ``VIEW_PENALTY`` lower (never below 1)."""
VIEW_PENALTY = 1
TALK_KINDS: frozenset[Kind] = VIEW_KINDS | {"task"}
ADDRESS_PENALTY = 3
"""A dated fact of only ``TALK_KINDS`` that speaks to the other ("your faith in me
means a lot", "you can't deny the view") or promises within the talk ("I'll send
you the video", "let's make tomorrow unforgettable") ranks this much lower, not
``VIEW_PENALTY`` (never below 1): between people, what one says of the other or of
the talk itself seldom holds what is later asked of it."""
_ADDRESSED = re.compile(r"\byou(?:r|rs|rself|'re|'ve|'ll|'d)?\b")
CONTENT = re.compile(r"[a-z][a-z']+|[\u4e00-\u9fff]")
VALUE = re.compile(r"\d[\d,.:/-]{0,30}\d|\d")
STOP = frozenset(
    """a an the is are was were be been am to of in on at for and or but it its this
    that with as by my our your i we you me us do does did have has had so now
    actually instead changed change rather no longer anymore 的 了 是 我 你 们 在
    把 也 就 都 其 实 改 成 为 不 再""".split()  # noqa: SIM905
)
CORRECTION = re.compile(
    r"\b(?:actually|instead|changed?|rather|correction|no longer|anymore|update)\b"
    r"|其实|改成|改为|改到|更正|不再|换成"
)


@attrs.frozen
class Fact:
    """One kept fragment, who said it, and where it goes."""

    text: str
    role: Role | None
    tool: str
    section: Section
    salience: Salience
    words: frozenset[str] = attrs.field(eq=False)  # content words, for supersession
    measures: tuple[str, ...] = attrs.field(eq=False)  # its quantities and dates
    numbers: tuple[str, ...] = attrs.field(eq=False)  # its other numbers
    date: str = attrs.field(default="", eq=False)  # the day it was said, if known
    event: bool = attrs.field(default=False, eq=False)  # salience.is_event
    shape: str = attrs.field(default="", eq=False)  # its clause_shape, spaces joined
    own: frozenset[str] = attrs.field(default=frozenset(), eq=False)  # identifiers
    named: frozenset[str] = attrs.field(default=frozenset(), eq=False)  # no measures


def fact_of(
    text: str,
    role: Role | None,
    tool: str,
    section: Section,
    salience: Salience,
    words: frozenset[str],
    measures: tuple[str, ...],
    numbers: tuple[str, ...],
    date: str,
    event: bool,
) -> Fact:
    """Return a ``Fact`` with what ``_effective_scores`` reads of it, read once."""
    identifiers = salience.identifiers
    return Fact(
        text,
        role,
        tool,
        section,
        salience,
        words,
        measures,
        numbers,
        date,
        event,
        " ".join(clause_shape(text).split()),
        frozenset(value.casefold() for _, value in identifiers),
        frozenset(
            value.casefold()
            for kind, value in identifiers
            if kind not in ("date", "quantity")
        ),
    )


@functools.lru_cache(maxsize=8192)
def _key(text: str) -> str:
    return " ".join(text.casefold().split()).rstrip(".,;:!?\u3002\uff01\uff1f\u2026")


def _is_addressed(text: str) -> bool:
    """Tell whether ``text`` speaks to the other (``ADDRESS_PENALTY``).

    Most facts hold no "you" in any case: a search in C tells, before the pattern.
    """
    lowered = text.lower()
    return "you" in lowered and _ADDRESSED.search(lowered) is not None


def _supersedes(new: Fact, old: Fact) -> bool:
    """Tell whether ``new`` restates ``old`` with one quantity or date changed.

    Other numbers must match: "Question 2" after "Question 1" is another question.
    """
    if new.role != old.role or not new.words or new.numbers != old.numbers:
        return False
    if len(new.measures) != len(old.measures):
        return False
    if sum(a != b for a, b in zip(new.measures, old.measures, strict=True)) != 1:
        return False
    subjects = {v for k, v in new.salience.identifiers if k in ("identifier", "name")}
    if subjects != {
        v for k, v in old.salience.identifiers if k in ("identifier", "name")
    }:
        return False
    overlap = len(new.words & old.words) / len(new.words | old.words)
    return overlap >= (0.5 if CORRECTION.search(new.text.lower()) else 0.75)


def _containment(
    keys: Sequence[str], pace: Pace = never
) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Return, by key, the other keys inside it and the other keys holding it.

    A key that holds (or is inside) no other has no entry: most keys have none.

    ``keys`` are distinct: with N copies of one key the relation alone would hold N²
    pairs (gigabytes for a summary that repeats one sentence). Each key is searched
    once in the keys at least as long, joined longest first (keys hold no line
    break): a few searches in C, not a comparison per pair.
    """
    order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
    joined = "\n".join(keys[i] for i in order)
    starts = list(accumulate((len(keys[i]) + 1 for i in order), initial=0))
    inside: dict[int, set[int]] = {}
    holding: dict[int, set[int]] = {}
    shorter = 0  # the place in ``order`` of the first key shorter than the key
    for rank in range(len(order)):  # longest first: ``shorter`` only moves on
        pace()
        i = order[rank]
        key = keys[i]
        while shorter < len(order) and len(keys[order[shorter]]) >= len(key):
            shorter += 1
        if not key:
            continue
        at = joined.find(key, 0, starts[shorter])
        while at >= 0:
            place = bisect_right(starts, at) - 1
            j = order[place]
            if j != i:
                inside.setdefault(j, set()).add(i)
                holding.setdefault(i, set()).add(j)
            at = joined.find(key, starts[place + 1], starts[shorter])
    return inside, holding


_NONE: frozenset[int] = frozenset()


def merged_facts(
    older: Sequence[Fact], newer: Sequence[Fact], pace: Pace = never
) -> list[Fact]:
    """Return ``older`` then ``newer``, each fact once (module docstring: merge).

    Facts with one key share one place in the containment relation: memory and time
    grow with the distinct keys, however often a fact repeats. ``pace``: called at
    every fact (``pacing``).
    """
    every = [*older, *newer]
    keys = [_key(fact.text) for fact in every]
    ids = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    inside_of, holding_of = _containment(list(ids), pace)
    facts: list[Fact] = []
    origins: list[int] = []  # the key id of each kept fact
    kept: set[int] = set()  # the same ids: one kept fact per key at most
    for fact, key in zip(every, keys, strict=True):
        pace()
        key_id = ids[key]
        inside = inside_of.get(key_id, _NONE)
        holding = holding_of.get(key_id, _NONE)
        if not key or key_id in kept or not holding.isdisjoint(kept):
            continue  # said already by a kept fact
        if not inside.isdisjoint(kept):
            # it says more than kept facts: it takes the first one's place
            grown = [at for at, kept_id in enumerate(origins) if kept_id in inside]
            facts[grown[0]], origins[grown[0]] = fact, key_id
            for at in reversed(grown[1:]):
                del facts[at], origins[at]
            kept -= inside
            kept.add(key_id)
            continue
        stale = (  # only a fact with a quantity or a date can restate another's
            [at for at, old in enumerate(facts) if _supersedes(fact, old)]
            if fact.measures
            else []
        )
        for at in reversed(stale):
            kept.discard(origins[at])
            del facts[at], origins[at]
        facts.append(fact)
        origins.append(key_id)
        kept.add(key_id)
    return facts


def _effective_scores(
    facts: Sequence[Fact], pace: Pace = never
) -> tuple[list[int], list[int], list[int]]:
    """Return each fact's score, its rank, and its news: 0 repeat, 1 restated, 2 new.

    Identifiers are credited only to their first carrier. A fact of the same shape
    as an earlier one of its speaker (``clause_shape``: the same words, other values,
    not folded into it) that brings no identifier of its own repeats it: it scores
    at most 1; a repeated hit of a tool's list scores 0, as chatter does. A fact
    most of whose content words an earlier fact already says (``NOVEL_SHARE``)
    restates it: it ranks as if it scored ``NOVEL_PENALTY`` less (its score, what the
    ``LOW_SHARE`` fill rule reads, stays). A dated fact that tells no event and
    names nothing (``VIEW_KINDS``: a view or a feeling, "love how art heals") ranks
    ``VIEW_PENALTY`` lower, ``ADDRESS_PENALTY`` lower when it is said to the other or
    promises within the talk. Among equal ranks a repeat goes first,
    then a restatement, then the rest: topics before repetitions.
    """
    seen: set[str] = set()
    shapes: set[tuple[Role | None, str, str]] = set()
    said: set[str] = set()
    scores: list[int] = []
    ranks: list[int] = []
    news: list[int] = []
    for fact in facts:
        pace()
        own, named = fact.own, fact.named
        shape = (fact.role, fact.tool, fact.shape)
        listing = "listing" in fact.salience.kinds  # one hit of many: never news
        repeat = shape in shapes and (named <= seen or listing)
        if own and own <= seen:
            kinds = fact.salience.kinds - IDENTIFYING or frozenset({"plain"})
            value = score(kinds, fact.role)
        else:
            value = fact.salience.score
        if repeat:
            value = 0 if listing else min(value, 1)
        rank, new = value, 0 if repeat else 2
        told = fact.salience.kinds
        if fact.date and not repeat and told <= TALK_KINDS:  # talk alone, dated
            if "task" in told or _is_addressed(fact.text):
                rank = max(rank - ADDRESS_PENALTY, min(value, 1))  # said to the other
            elif not fact.event and told <= VIEW_KINDS:
                rank = max(rank - VIEW_PENALTY, min(value, 1))  # a view, not a fact
        if not repeat and fact.words:
            fresh = len(fact.words - said) / len(fact.words)
            if fresh < NOVEL_SHARE:  # a restatement
                rank, new = max(value - NOVEL_PENALTY, min(value, 1)), 1
        scores.append(value)
        ranks.append(rank)
        news.append(new)
        said |= fact.words
        seen |= own
        shapes.add(shape)
    return scores, ranks, news


def _line(fact: Fact, locale: Locale) -> str:
    if fact.role is None:
        return f"- {fact.text}"
    speaker = SPEAKERS[locale][fact.role]
    if fact.role in ("call", "tool"):
        speaker = f"{speaker} {fact.tool or '?'}"
    return f"- {speaker}{COLONS[locale]}{fact.text}"


def _section_lines(
    facts: Sequence[Fact], locale: Locale, pace: Pace = never
) -> list[str]:
    """Return one section's lines: a line per day, then bullets of undated facts.

    The facts of one day come together, the days in the order they first appear,
    and in a day each speaker's facts, the speakers in the order they first
    speak. A day is one line: its date, then each speaker's facts
    (``speaker: a; b``, ``DAY_SEPARATOR`` between speakers); it leaves out the
    year of the line above (``dialogue.written_day``). Undated facts are bullets:
    one speaker's facts share one (``SEPARATORS`` between them) while it stays
    within ``GROUP_CHARS``; a label costs more than a separator.
    """
    lines: list[str] = []
    year = ""
    speaker: tuple[Role | None, str] | None = None
    separator = SEPARATORS[locale]
    days: dict[str, dict[tuple[Role | None, str], list[Fact]]] = {}
    for fact in facts:  # each day once, each speaker once in it: first place
        days.setdefault(fact.date, {}).setdefault((fact.role, fact.tool), []).append(
            fact
        )
    for date, same_day in days.items():
        pace()
        if date:
            written, year = written_day(date, year)
            said = (
                _line(group[0], locale)[2:]
                + "".join(separator + fact.text for fact in group[1:])
                for group in same_day.values()
            )
            lines.append(f"[{written}] " + DAY_SEPARATOR.join(said))
            continue
        for fact in (fact for group in same_day.values() for fact in group):
            who = (fact.role, fact.tool)
            if who == speaker and len(lines[-1]) + len(fact.text) < GROUP_CHARS:
                lines[-1] += separator + fact.text
            else:
                lines.append(_line(fact, locale))
                speaker = who
    return lines


def _render(
    facts: Sequence[Fact], alive: Sequence[bool], locale: Locale, pace: Pace
) -> str:
    blocks = []
    for section, header in HEADERS[locale].items():
        pace()
        kept = [
            fact
            for fact, keep in zip(facts, alive, strict=True)
            if keep and fact.section == section
        ]
        if kept:
            blocks.append("\n".join([header, *_section_lines(kept, locale, pace)]))
    return "\n".join(blocks)


def fitted_text(
    facts: Sequence[Fact],
    locale: Locale,
    max_tokens: int,
    count_tokens: Callable[[str], int],
    pace: Pace = never,
) -> str:
    """Return the sections of ``facts``, dropping the least salient over ``max_tokens``.

    Among equal ranks a repeat goes first, then a restatement, then a fact that
    tells no event (``Fact.event``); then a fact below ``HIGH_SCORE`` goes oldest
    first, a salient one newest first (module docstring: budget). The result counts
    at most ``max_tokens``. ``pace``: called between steps (``pacing``).
    """
    if max_tokens <= 0 or not facts:
        return ""
    scores, ranks, news = _effective_scores(facts, pace)
    pace()
    order = sorted(
        range(len(facts)),
        key=lambda i: (
            ranks[i],
            news[i],
            facts[i].event,
            i if ranks[i] < HIGH_SCORE else -i,
        ),
    )
    costs = [count_tokens(fact.text) + FACT_OVERHEAD_TOKENS for fact in facts]
    pace()
    header_costs = {s: count_tokens(h + "\n") for s, h in HEADERS[locale].items()}
    in_section = dict.fromkeys(header_costs, 0)
    for fact in facts:
        in_section[fact.section] += 1
    total = sum(costs) + sum(header_costs[s] for s, n in in_section.items() if n)
    alive = [True] * len(facts)
    dropped = 0

    def drop_next() -> None:
        nonlocal total, dropped
        index = order[dropped]
        dropped += 1
        alive[index] = False
        section = facts[index].section
        in_section[section] -= 1
        total -= costs[index] + (0 if in_section[section] else header_costs[section])

    while total > max_tokens and dropped < len(facts):
        drop_next()
    salient = any(scores[i] > 0 for i in order[dropped:])
    while dropped < len(facts) - 1 and (  # the last fact stays while it fits
        (salient and scores[order[dropped]] == 0)  # chatter, when anything else is left
        or (total > max_tokens * LOW_SHARE and scores[order[dropped]] < FILL_SCORE)
    ):
        drop_next()
    text = _render(facts, alive, locale, pace)
    while text:  # speakers, dates and joins are only known once rendered
        pace()
        over = count_tokens(text) - max_tokens
        if over <= 0:
            break
        freed = 0
        while freed < over and dropped < len(facts):
            freed += costs[order[dropped]]
            drop_next()
        text = _render(facts, alive, locale, pace)
    return text or _squeezed(_line(facts[order[-1]], locale), max_tokens, count_tokens)


def _squeezed(line: str, max_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Return the longest cut of ``line`` within ``max_tokens``, or ``""``."""
    low, high = 0, len(line)
    while low < high:  # the longest prefix length whose cut fits
        middle = (low + high + 1) // 2
        if count_tokens(cut_chars(line, middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    text = cut_chars(line, low)
    return text if len(text) > 3 and count_tokens(text) <= max_tokens else ""
