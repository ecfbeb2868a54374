"""The facts of a request: fragments of the new transcript and of the previous summary.

A fragment is a sentence (a tool result's first line, its outcome), cut to one line
around what matters; a fact is a fragment with its speaker, section and salience.
About 455 lines: a transcript and a summary read back share fragments and facts,
and their caches (a summary's lines come back at every compression).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from memory_summary.domain import pinned_section
from memory_summary.domain.argument_fold import fold_arguments
from memory_summary.domain.clause_fold import fold_clauses, stable_cut
from memory_summary.domain.config import Locale
from memory_summary.domain.injection import TRUNCATION_SUFFIXES
from memory_summary.domain.prompt import FENCE_TAGS, NEUTRAL_OPEN
from memory_summary.domain.render import LABEL_ROLES
from memory_summary.domain.text import INVISIBLE

from .dialogue import compacted, is_chatter, read_day, session_date
from .fitting import (
    CONTENT,
    CORRECTION,
    DAY_SEPARATOR,
    HEADERS,
    SEPARATORS,
    STOP,
    VALUE,
    Fact,
    Section,
    fact_of,
)
from .pacing import Pace, never
from .salience import (
    LIST_ITEM,
    SENTENCE_END,
    WEIGHTS,
    Role,
    Salience,
    is_event,
    salience_of,
    spans_for,
)
from .transcript import entries

_CAPTION = re.compile(
    r"\s*\[(?P<what>[^\[\]:\n]{0,40}?\b(?P<media>photo(?:graph)?s?|photography|"
    r"images?|pictures?|pics?|videos?)\b[^\[\]:\n]{0,20}):\s*"
    r"(?P<caption>[^\[\]\n]{1,400})\]\s*$",
    re.IGNORECASE,
)
"""A caption closing a message: ``[shares a photo: a dog]``, ``[image: …]``."""
_CAPTION_OPENING = re.compile(
    r"^(?:an? )?(?:photo(?:graph)?|photography|picture|image|pic|video|screenshot)s?"
    r" (?:of )?",
    re.IGNORECASE,
)
LINE_CHARS = 160
SAID_CHARS = 80  # a compacted sentence: its content words, around what matters
FACT_CACHE_SIZE = 8192
CACHED_SENTENCE_CHARS = 4096  # longer sentences are cut afresh, not kept as keys
ENTRY_CHARS = 65_536  # read of one message: about the 16k-token context it reports
SCAN_CHARS = 262_144  # read of one whole request
MAX_FACTS_PER_ENTRY = 16
MAX_TOOL_LINES = 8  # a tool result's lines read: its outcome and what follows it


def _section_of(salience: Salience) -> Section:
    if "decision" in salience.kinds:
        return "decisions"
    if salience.kinds & {"goal", "question"}:
        return "goals"
    if "task" in salience.kinds:
        return "tasks"
    return "facts"


FactParts = tuple[Any, ...]
"""A ``Fact`` as tuples and strings (``_parts``), which the collector stops tracking."""


def _parts(fact: Fact) -> FactParts:
    """Return what ``_built`` makes ``fact`` again from, every set as a tuple.

    The caches below keep these, not ``Fact`` objects: a fact holds five objects
    the garbage collector tracks (itself, its salience, three sets) and tuples of
    strings none, so a cache of facts made every young object a long-lived one to
    scan, and in a server that folds new text each turn, a full collection (every
    thread stopped for tens of milliseconds) came twice as often.
    """
    salience = fact.salience
    return (
        fact.text, fact.role, fact.tool, fact.section, salience.score,
        tuple(salience.kinds), salience.identifiers, tuple(fact.words),
        fact.measures, fact.numbers, fact.date, fact.event, fact.shape,
        tuple(fact.own), tuple(fact.named),
    )  # fmt: skip


def _built(parts: FactParts) -> Fact:
    """Return the ``Fact`` that ``_parts`` gave ``parts`` for (an equal one)."""
    (text, role, tool, section, score, kinds, identifiers, words, measures,
     numbers, date, event, shape, own, named) = parts  # fmt: skip
    return Fact(
        text, role, tool, section, Salience(score, frozenset(kinds), identifiers),
        frozenset(words), measures, numbers, date, event, shape, frozenset(own),
        frozenset(named),
    )  # fmt: skip


def _fact(
    text: str,
    role: Role | None,
    tool: str,
    section: Section | None,
    date: str = "",
) -> Fact:
    """Return the fact of one fragment; its salience is read from the fragment alone.

    ``section``: None for a new fact, whose kinds choose it; a dated one (a diary of
    sessions) goes under facts, its day's date line written once. A dated fact is
    one person's line in a conversation between people: no wish of it is a goal
    (``salience_of``'s ``dialogue``).
    Remembered (``_fact_parts``): a summary's facts come back at every compression
    of its session.
    """
    return _built(_fact_parts(text, role, tool, section, date))


@functools.lru_cache(maxsize=FACT_CACHE_SIZE)
def _fact_parts(
    text: str, role: Role | None, tool: str, section: Section | None, date: str
) -> FactParts:
    return _parts(_read_fact(text, role, tool, section, date))


def _read_fact(
    text: str, role: Role | None, tool: str, section: Section | None, date: str
) -> Fact:
    text = text.rstrip(" .\u3002")  # a fact's closing stop: bullets need none
    salience = salience_of(text, role, dialogue=bool(date))  # dated: between people
    lowered = text.lower()
    words = frozenset(CONTENT.findall(CORRECTION.sub(" ", lowered))) - STOP
    measures = tuple(
        value for kind, value in salience.identifiers if kind in ("quantity", "date")
    )
    rest = text
    for measure in measures:
        rest = rest.replace(measure, " ")
    return fact_of(
        text,
        role,
        tool,
        section or ("facts" if date else _section_of(salience)),
        salience,
        words,
        measures,
        tuple(VALUE.findall(rest)),
        date,
        is_event(text),
    )


_FENCE_ONLY = re.compile(
    rf"^{NEUTRAL_OPEN}\s*/?\s*(?:{'|'.join(FENCE_TAGS)})\s*>$", re.IGNORECASE
)
_HIDDEN = re.compile(f"[{INVISIBLE}]+")


def _fragment(sentence: str, limit: int = LINE_CHARS) -> str:
    """Return ``sentence`` as one line of at most ``limit`` chars, around what matters.

    A longer sentence is cut to a window that starts shortly before its first match
    of the weightiest kind it holds. Remembered up to ``CACHED_SENTENCE_CHARS``: a
    summary's lines come back at every compression, a megabyte sentence would stay.
    """
    if len(sentence) > CACHED_SENTENCE_CHARS:
        return _cut_fragment(sentence, limit)
    return _remembered_fragment(sentence, limit)


def _cut_fragment(sentence: str, limit: int) -> str:
    text = " ".join(sentence.split())
    if _FENCE_ONLY.match(_HIDDEN.sub("", text)):  # a disarmed fence tag: no fact
        return ""
    cut = stable_cut(text, limit)
    if cut == text:
        return text
    found = ((WEIGHTS[kind], pattern.search(text)) for kind, pattern in spans_for(text))
    spans = [(-weight, match.start()) for weight, match in found if match]
    at = min(spans, default=(0, 0))[1]
    start = max(at - 30, 0)
    if start == 0:
        return cut
    space = text.find(" ", start, at)
    start = space + 1 if space >= 0 else start
    return "\u2026" + stable_cut(text[start:], limit - 1)


_remembered_fragment = functools.lru_cache(maxsize=FACT_CACHE_SIZE)(_cut_fragment)


def _caption_of(body: str) -> tuple[str, str]:
    """Return a message without the caption of what it shares, and that caption.

    A bracketed note closing the message that names a photo, picture, image or
    video (``[shares a photo: a photo of a cup with a dog face]``) describes what
    the speaker shows: one fragment, ``photo: cup with a dog face``, whatever
    stops it holds, never a sentence of the message (its bracket and its opening
    words said nothing).

    >>> _caption_of("They made this! [shares a photo: a photo of a cup. with a dog]")
    ('They made this!', 'photo: a cup. with a dog')
    >>> _caption_of("No caption [here]")
    ('No caption [here]', '')
    """
    shown = _CAPTION.search(body) if body.endswith("]") else None
    if shown is None:
        return body, ""
    caption = _CAPTION_OPENING.sub("", shown.group("caption").strip()).strip()
    if not caption:
        return body, ""
    label = "video" if shown.group("media").lower().startswith("video") else "photo"
    return body[: shown.start()].rstrip(), f"{label}: {caption}"


def _sentences(body: str) -> list[str]:
    return [
        piece
        for line in body.splitlines()
        for piece in SENTENCE_END.split(line)
        if piece.strip()
    ]


def _tool_name(name: str) -> str:
    return re.sub(r"[^\w.-]", "", name)[:40] or "?"


def new_facts(
    conversation: str, date: str = "", pace: Pace = never
) -> tuple[list[Fact], dict[Locale, int]]:
    """Return the facts of the transcript, and how many entries each locale labels.

    ``date``: the day the transcript starts on, until a message names another.
    ``pace``: called at every entry and sentence (``pacing``).
    """
    facts: list[Fact] = []
    fallback: tuple[str, Role | None, str, str] | None = None
    labelled: dict[Locale, int] = {"en": 0, "zh": 0}
    for role, tool, body, locale in entries(conversation[:SCAN_CHARS]):
        pace()
        if locale is not None:
            labelled[locale] += 1
        candidates: list[Fact] = []
        body = body[:ENTRY_CHARS]
        said = role in ("user", "assistant", "system")
        caption = ""
        if said:
            day, body = session_date(body)
            date = day or date
            body, caption = _caption_of(body)
        sentences = _sentences(body) + ([caption] if caption else [])
        if role == "tool":  # a result's first line is its outcome; the rest, detail
            lines = [x for x in body.splitlines() if x.strip()]
            sentences = (
                lines[:1]
                + [  # and a later line that names something
                    x for x in lines[1:MAX_TOOL_LINES] if not LIST_ITEM.match(x.strip())
                ]
            )
        if role == "call":  # its arguments, each key's distinct values
            sentences = fold_arguments([body], LINE_CHARS) or sentences
        plain_taken = False
        for sentence in sentences:
            pace()
            chatter = said and (
                is_chatter(sentence)
                or (role == "assistant" and sentence.rstrip().endswith(("?", "\uff1f")))
            )  # the assistant's questions: the answer holds what matters
            text = (
                _fragment(compacted(sentence), SAID_CHARS)
                if said and not chatter
                else _fragment(sentence)
            )
            if not text:
                continue
            if said:
                text = text.replace(SEPARATORS["en"], ", ").replace(
                    SEPARATORS["zh"], "\uff0c"
                )
            text = text.replace(DAY_SEPARATOR, ", ")  # it parts a day's speakers
            name = _tool_name(tool) if tool else ""
            if chatter:  # no fact; a transcript of chatter only keeps its first
                fallback = fallback or (text, role, name, date)
                continue  # read only if it is needed: salience is the costly part
            fact = _fact(text, role, name, None, date)
            if not plain_taken or fact.salience.kinds - {"plain", "outcome"}:
                candidates.append(fact)  # the first fact, then telling ones
                plain_taken = True
        if len(candidates) > MAX_FACTS_PER_ENTRY:  # the most salient, in order
            best = sorted(
                range(len(candidates)), key=lambda i: (-candidates[i].salience.score, i)
            )[:MAX_FACTS_PER_ENTRY]
            candidates = [candidates[i] for i in sorted(best)]
        facts.extend(candidates)
    if not facts and fallback is not None:
        text, role, name, date = fallback
        facts.append(_fact(text, role, name, None, date))
    return facts, labelled


_SHARED_BULLET = re.compile(
    f"{re.escape(SEPARATORS['en'])}|{re.escape(SEPARATORS['zh'])}"
)


_HEADER_SECTIONS = {
    header: section
    for headers in HEADERS.values()
    for section, header in headers.items()
}


_SUFFIX_LINES = frozenset(suffix.strip() for suffix in TRUNCATION_SUFFIXES.values())


_SPEAKER = re.compile(
    r"^(?:(?P<role>user|assistant|system|User|Assistant|System|用户|助手|系统)"
    r"|(?P<kind>call|tool|调用|工具) (?P<tool>[\w.-]{1,40}))(?:: |：)"
)


_PARSED_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "call": "call",
    "tool": "tool",
    **{name.lower(): role for name, role in LABEL_ROLES.items()},
    "调用": "call",
    "工具": "tool",
}


def _said_facts(text: str, section: Section, date: str) -> tuple[Fact, ...]:
    """Return the facts of one speaker's part of a summary: ``speaker: a; b``.

    Remembered up to ``CACHED_SENTENCE_CHARS``: most lines come back unchanged.
    """
    if len(text) > CACHED_SENTENCE_CHARS:
        return _read_said_facts(text, section, date)
    return tuple(map(_built, _remembered_said_facts(text, section, date)))


def _read_said_facts(text: str, section: Section, date: str) -> tuple[Fact, ...]:
    match = _SPEAKER.match(text)
    role: Role | None = None
    tool = ""
    if match:
        role = _PARSED_ROLES[(match.group("role") or match.group("kind")).lower()]
        tool = match.group("tool") or ""
        text = text[match.end() :]
    return tuple(
        _fact(_fragment(piece), role, tool, section, date)
        for piece in _SHARED_BULLET.split(text)
    )


@functools.lru_cache(maxsize=FACT_CACHE_SIZE)
def _remembered_said_facts(
    text: str, section: Section, date: str
) -> tuple[FactParts, ...]:
    return tuple(map(_parts, _read_said_facts(text, section, date)))


def previous_facts(
    previous: str, pace: Pace = never
) -> tuple[list[Fact], Locale | None]:
    """Return the facts of a previous summary (ours or not), and its headers' locale.

    ``pace``: called at every line (``pacing``).
    """
    body = pinned_section(pinned_section(previous, "en")[0], "zh")[0]  # the engine's
    facts: list[Fact] = []
    section: Section = "facts"
    locale: Locale | None = None
    date = year = ""
    for raw in body[:SCAN_CHARS].splitlines():
        pace()
        line = raw.strip()
        if not line or line in _SUFFIX_LINES:
            continue
        if line in _HEADER_SECTIONS:
            section = _HEADER_SECTIONS[line]
            locale = "en" if line.isascii() else "zh"
            date = year = ""
            continue
        day, rest = session_date(line)
        if day:  # a day's line: its facts, or the day of the bullets below it
            date, year = read_day(day, year)
            for said in rest.split(DAY_SEPARATOR) if rest.strip() else ():
                facts.extend(_said_facts(said.strip(), section, date))
            continue
        if line[:2] in ("- ", "* ", "\u2022 "):
            facts.extend(_said_facts(line[2:].strip(), section, date))
            continue
        facts.extend(  # a foreign summary: its sentences
            _fact(_fragment(sentence), None, "", section)
            for sentence in _sentences(line)
        )
    return [fact for fact in facts if fact.text], locale


def folded_facts(facts: Sequence[Fact], pace: Pace = never) -> list[Fact]:
    """Return ``facts`` with near-duplicates folded (``domain.clause_fold``).

    ``pace``: called at every group of facts that may fold (``pacing``).

    Facts fold with those of the same speaker, tool, section and day; a tool's calls
    fold their arguments into each key's distinct values. A folded fact takes the
    place of its group's first fact that it does not repeat verbatim.
    """
    groups: dict[tuple[Role | None, str, Section, str], list[int]] = {}
    for index, fact in enumerate(facts):
        groups.setdefault((fact.role, fact.tool, fact.section, fact.date), []).append(
            index
        )
    placed: dict[int, Fact] = {}
    for (role, tool, section, date), members in groups.items():
        pace()
        texts = [facts[i].text for i in members]
        if len(texts) == 1:
            placed[members[0]] = facts[members[0]]
            continue
        folded = (fold_arguments(texts, LINE_CHARS) if role == "call" else None) or (
            fold_clauses(texts, LINE_CHARS)
        )
        free = list(members)
        by_text = {facts[i].text: i for i in reversed(members)}
        for text in folded:
            same = by_text.get(text)
            if same is not None and same in free:
                free.remove(same)
                placed[same] = facts[same]
        for text in folded:
            same = by_text.get(text)
            if same is not None and placed.get(same) is facts[same]:
                continue
            at = free.pop(0)
            placed[at] = _fact(text, role, tool, section, date)
    return [placed[i] for i in sorted(placed)]
