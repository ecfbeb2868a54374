"""An offline, deterministic summarizer that extracts instead of writing: not an LLM.

It is the embedded default when no endpoint is configured, so the library works with no
key and no network. It reads the tagged request ``memory_summary.domain.prompt`` builds
and keeps *facts*: short fragments quoted from the messages, each ranked by salience.

- Salience (``salience``): a fragment scores its strongest kind (``WEIGHTS``:
  identifiers, contacts and paths 8; dates, names, decisions and constraints 7;
  quantities, errors and proper nouns (and quoted titles) 6; stated goals and
  personal statements (what someone did, has, likes or plans) 5; open tasks 4; bare
  numbers and tool outcomes 3; questions and requests 2; anything else 1), plus one
  per further kind (at most 3), plus the speaker's (user +2, assistant, system and a
  tool's result +1, a personal statement +2 from either side, tool calls -3). A tool
  result gives its first line, its outcome, and later lines that are no list items; a
  first line that is one item of a list (search hits) scores 1. Advice ("don't give
  up") is no constraint. Chatter alone (greetings, thanks, filler) scores 0.
- Dialogue (``dialogue``): what a person says is read sentence by sentence; chatter
  (greetings, thanks, praise, questions to the other, the assistant's questions) is
  no fact, a kept sentence is compacted to its content words, and a message's
  opening ``[date]`` dates the facts that follow it.
- Host instructions (the request's ``host_instructions`` section): a fact naming one
  of their terms scores ``INSTRUCTED_BONUS`` more.
- Merge by fact (``fitting``): the previous summary is parsed back into facts (its own
  sections, date lines and bullets, or a foreign summary's sentences; the engine's
  pinned section is the engine's). A new fact already contained in a kept one is
  dropped, one that contains a kept one replaces it in place, and one that restates
  a kept fact with one value changed ("budget is 800 EUR" after "budget is 500 EUR")
  supersedes it. Older facts stay otherwise.
- Budget: over ``max_tokens`` (counted exactly with ``count_tokens``), the lowest
  score goes first; a fact whose identifiers an earlier fact already carries scores
  as if it had none. Among equal scores, facts below ``HIGH_SCORE`` drop oldest
  first and salient ones newest first: first come, first kept. Chatter goes whenever
  anything else is left, and past ``LOW_SHARE`` of the budget only facts scoring
  ``FILL_SCORE`` or more stay, so a summary is no longer than what it holds is worth.
- Output: short sections in the session's locale (its transcript labels, else its
  previous summary, else its system prompt): ``Goals:``/``Decisions:``/``Facts:``/
  ``Open tasks:``, ``目标：``/``决定：``/``事实：``/``待办：``, only the non-empty
  ones; in each, a ``[date]`` line per day when known, then bullets
  ``- <speaker>: <fact>; <fact>`` (consecutive facts of one speaker share one).
  Summarizing its own summary with nothing new returns it unchanged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence

import attrs

from memory_summary.domain import Message, cut_chars, normalize_text, pinned_section
from memory_summary.domain.config import Locale
from memory_summary.domain.injection import TRUNCATION_SUFFIXES
from memory_summary.domain.prompt import (
    CONVERSATION_TAG,
    FENCE_TAGS,
    INSTRUCTIONS_TAG,
    NEUTRAL_OPEN,
    PREVIOUS_TAG,
    TASK_STATE_TAG,
)
from memory_summary.domain.render import ENTRY_LABEL, LABEL_ROLES

from .dialogue import compacted, is_chatter, session_date
from .fitting import CONTENT as _CONTENT
from .fitting import CORRECTION as _CORRECTION
from .fitting import (
    HEADERS,
    HIGH_SCORE,
    SEPARATORS,
    Fact,
    Section,
    fitted_text,
    merged_facts,
)
from .fitting import STOP as _STOP
from .fitting import VALUE as _VALUE
from .salience import (
    LIST_ITEM,
    SPANS,
    WEIGHTS,
    Role,
    Salience,
    salience_of,
)
from .salience import SENTENCE_END as _SENTENCE_END

__all__ = [
    "HIGH_SCORE",
    "ExtractiveSummarizer",
    "fitted_text",
    "merged_facts",
    "salience_of",
    "utf8_bytes",
]

LABEL = "extractive (offline, not an LLM)"
LINE_CHARS = 160
SAID_CHARS = 80  # a compacted sentence: its content words, around what matters
COUNT_CACHE_SIZE = 8192
FACT_CACHE_SIZE = 8192
INSTRUCTED_BONUS = HIGH_SCORE
"""What naming a term of the host's instructions adds to a fact's score."""
ENTRY_CHARS = 65_536  # read of one message: about the 16k-token context it reports
SCAN_CHARS = 262_144  # read of one whole request
MAX_FACTS_PER_ENTRY = 16
MAX_TOOL_LINES = 8  # a tool result's lines read: its outcome and what follows it


def utf8_bytes(text: str) -> int:
    """Return the UTF-8 length: never less than the token count, so a safe default."""
    return len(text.encode("utf-8"))


def _section_of(salience: Salience) -> Section:
    if "decision" in salience.kinds:
        return "decisions"
    if salience.kinds & {"goal", "question"}:
        return "goals"
    if "task" in salience.kinds:
        return "tasks"
    return "facts"


@functools.lru_cache(maxsize=FACT_CACHE_SIZE)
def _fact(
    text: str,
    role: Role | None,
    tool: str,
    section: Section | None,
    date: str = "",
) -> Fact:
    """Return the fact of one fragment; its salience is read from the fragment alone.

    Remembered: a summary's facts come back at every compression of its session.
    """
    text = text.rstrip(" .\u3002")  # a fact's closing stop: bullets need none
    salience = salience_of(text, role)
    lowered = text.lower()
    words = frozenset(_CONTENT.findall(_CORRECTION.sub(" ", lowered))) - _STOP
    measures = tuple(
        value for kind, value in salience.identifiers if kind in ("quantity", "date")
    )
    rest = text
    for measure in measures:
        rest = rest.replace(measure, " ")
    return Fact(
        text,
        role,
        tool,
        section or _section_of(salience),
        salience,
        words,
        measures,
        tuple(_VALUE.findall(rest)),
        date,
    )


_FENCE_ONLY = re.compile(
    rf"^{NEUTRAL_OPEN}\s*/?\s*(?:{'|'.join(FENCE_TAGS)})\s*>$", re.IGNORECASE
)


def _fragment(sentence: str, limit: int = LINE_CHARS) -> str:
    """Return ``sentence`` as one line of at most ``limit`` chars, around what matters.

    A longer sentence is cut to a window that starts shortly before its first match
    of the weightiest kind it holds.
    """
    text = " ".join(sentence.split())
    if _FENCE_ONLY.match(text):  # a disarmed fence tag quoted in a message: no fact
        return ""
    if len(text) <= limit:
        return text
    found = ((WEIGHTS[kind], pattern.search(text)) for kind, pattern in SPANS)
    spans = [(-weight, match.start()) for weight, match in found if match]
    at = min(spans, default=(0, 0))[1]
    start = max(at - 30, 0)
    if start == 0:
        return cut_chars(text, limit)
    space = text.find(" ", start, at)
    start = space + 1 if space >= 0 else start
    return "\u2026" + cut_chars(text[start:], limit - 1)


def _sentences(body: str) -> list[str]:
    return [
        piece
        for line in body.splitlines()
        for piece in _SENTENCE_END.split(line)
        if piece.strip()
    ]


def _sections_of(request: str) -> tuple[str, str]:
    """Return the previous summary and the conversation of a request.

    The first ``<previous_summary>`` opening the request and the last
    ``</conversation>`` close them: tags quoted inside messages stay message text.
    """
    previous, rest = "", request
    opening = f"<{PREVIOUS_TAG}>\n"
    closing = f"\n</{PREVIOUS_TAG}>\n\n<{CONVERSATION_TAG}>\n"
    if request.startswith(opening) and closing in request:
        previous, _, rest = request[len(opening) :].partition(closing)
        rest = f"<{CONVERSATION_TAG}>\n" + rest
    opening, closing = f"<{CONVERSATION_TAG}>\n", f"\n</{CONVERSATION_TAG}>"
    if not rest.startswith(opening) or closing not in rest:
        return previous, rest  # not our request format: extract from all of it
    body = rest[len(opening) :]
    state = f"{closing}\n\n<{TASK_STATE_TAG}>\n"
    end = body.rfind(state) if state in body else body.rfind(closing)
    return previous, body[:end]


def _entries(
    conversation: str,
) -> Iterator[tuple[Role | None, str, str, Locale | None]]:
    """Yield each transcript entry: role, tool name, body, and its labels' locale."""
    role: Role | None = None
    locale: Locale | None = None
    tool, lines = "", list[str]()
    for raw in conversation.splitlines():
        match = ENTRY_LABEL.match(raw)
        if match is None:
            lines.append(raw)
            continue
        if lines:
            yield role, tool, "\n".join(lines), locale
        label = match.group("speaker") or match.group("call") or match.group("result")
        locale = "en" if label.isascii() else "zh"
        body = raw[match.end() :]
        if match.group("speaker"):
            role, tool = LABEL_ROLES[label], ""
        elif match.group("call"):
            role, tool = "call", match.group("name")
            body = body[:-1] if body.endswith(")") else body
        else:
            role, tool = "tool", match.group("tool")
        lines = [body]
    if lines:
        yield role, tool, "\n".join(lines), locale


def _tool_name(name: str) -> str:
    return re.sub(r"[^\w.-]", "", name)[:40] or "?"


def _new_facts(
    conversation: str, date: str = ""
) -> tuple[list[Fact], dict[Locale, int]]:
    """Return the facts of the transcript, and how many entries each locale labels.

    ``date``: the day the transcript starts on, until a message names another.
    """
    facts: list[Fact] = []
    fallback: Fact | None = None
    labelled: dict[Locale, int] = {"en": 0, "zh": 0}
    for role, tool, body, locale in _entries(conversation[:SCAN_CHARS]):
        if locale is not None:
            labelled[locale] += 1
        candidates: list[Fact] = []
        body = body[:ENTRY_CHARS]
        said = role in ("user", "assistant", "system")
        if said:
            day, body = session_date(body)
            date = day or date
        sentences = _sentences(body)
        if role == "tool":  # a result's first line is its outcome; the rest, detail
            lines = [x for x in body.splitlines() if x.strip()]
            sentences = (
                lines[:1]
                + [  # and a later line that names something
                    x for x in lines[1:MAX_TOOL_LINES] if not LIST_ITEM.match(x.strip())
                ]
            )
        plain_taken = False
        for sentence in sentences:
            chatter = said and (
                is_chatter(sentence)
                or (role == "assistant" and sentence.rstrip().endswith("?"))
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
            fact = _fact(text, role, _tool_name(tool) if tool else "", None, date)
            if chatter:  # no fact; a transcript of chatter only keeps its first
                fallback = fallback or fact
            elif not plain_taken or fact.salience.kinds - {"plain", "outcome"}:
                candidates.append(fact)  # the first fact, then telling ones
                plain_taken = True
        best = sorted(
            range(len(candidates)), key=lambda i: (-candidates[i].salience.score, i)
        )[:MAX_FACTS_PER_ENTRY]
        facts.extend(candidates[i] for i in sorted(best))
    if not facts and fallback is not None:
        facts.append(fallback)
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


def _previous_facts(previous: str) -> tuple[list[Fact], Locale | None]:
    """Return the facts of a previous summary (ours or not), and its headers' locale."""
    body = pinned_section(pinned_section(previous, "en")[0], "zh")[0]  # the engine's
    facts: list[Fact] = []
    section: Section = "facts"
    locale: Locale | None = None
    date = ""
    for raw in body[:SCAN_CHARS].splitlines():
        line = raw.strip()
        if not line or line in _SUFFIX_LINES:
            continue
        if line in _HEADER_SECTIONS:
            section = _HEADER_SECTIONS[line]
            locale = "en" if line.isascii() else "zh"
            date = ""
            continue
        day, rest = session_date(line)
        if day and not rest:  # a date line: the day of the facts below it
            date = day
            continue
        if line[:2] in ("- ", "* ", "\u2022 "):
            text = line[2:].strip()
            match = _SPEAKER.match(text)
            role: Role | None = None
            tool = ""
            if match:
                role = _PARSED_ROLES[
                    (match.group("role") or match.group("kind")).lower()
                ]
                tool = match.group("tool") or ""
                text = text[match.end() :]
            facts.extend(
                _fact(_fragment(piece), role, tool, section, date)
                for piece in _SHARED_BULLET.split(text)
            )
            continue
        facts.extend(  # a foreign summary: its sentences
            _fact(_fragment(sentence), None, "", section)
            for sentence in _sentences(line)
        )
    return [fact for fact in facts if fact.text], locale


# -- merging and fitting -------------------------------------------------------------


_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")
_INSTRUCTIONS_OPEN = f"\n\n<{INSTRUCTIONS_TAG}>\n"
_INSTRUCTIONS_CLOSE = f"\n</{INSTRUCTIONS_TAG}>"
_TERM = re.compile(r"[^\W\d_]{3,}|\d[\w.-]*|[\u4e00-\u9fff]{2,}")
_NOT_TERMS = frozenset(
    """keep keeps every all any each focus focused focusing include mention mentions
    summary summaries summarize make sure please always never the and for with about
    only retain preserve remember note track list everything important details detail
    information info especially anything things stuff what that this those these
    from into when where which who how not don't should must also more most""".split()  # noqa: SIM905
)
_ZH_NOT_TERMS = re.compile(
    r"保留|所有|全部|每个|重点|关注|记住|摘要|总结|请|务必|一定|的|和|与"
)


def instructions_of(request: str) -> tuple[str, str]:
    """Return the request without its host instructions section, and the instructions.

    ``summary_request`` puts the section last; a section quoted anywhere else is
    text (its tags were disarmed).
    """
    if not request.endswith(_INSTRUCTIONS_CLOSE) or _INSTRUCTIONS_OPEN not in request:
        return request, ""
    at = request.rfind(_INSTRUCTIONS_OPEN)
    body = request[at + len(_INSTRUCTIONS_OPEN) : -len(_INSTRUCTIONS_CLOSE)]
    return request[:at], body


def instruction_terms(instructions: str) -> frozenset[str]:
    """Return the terms of the host's instructions a fact can name (case-folded).

    >>> sorted(instruction_terms("Keep every order number and the Berlin office."))
    ['berlin', 'number', 'office', 'order']
    """
    text = _ZH_NOT_TERMS.sub(" ", instructions.casefold())
    return frozenset(t for t in _TERM.findall(text) if t not in _NOT_TERMS)


def instructed(facts: Sequence[Fact], instructions: str) -> list[Fact]:
    """Return ``facts``, those naming a term of the instructions ranked higher.

    A fact names a Latin term when one of its words starts with it ("order" in
    "orders"); a Chinese term anywhere in it.
    """
    terms = instruction_terms(instructions)
    if not terms:
        return list(facts)
    latin = [t for t in terms if not _CJK.match(t)]
    cjk = [t for t in terms if _CJK.match(t)]
    pattern = re.compile(
        "|".join([*(rf"(?<!\w){re.escape(t)}" for t in latin), *map(re.escape, cjk)])
    )
    return [
        attrs.evolve(
            fact,
            salience=attrs.evolve(
                fact.salience, score=fact.salience.score + INSTRUCTED_BONUS
            ),
        )
        if pattern.search(fact.text.casefold())
        else fact
        for fact in facts
    ]


def _locale_of(
    labelled: dict[Locale, int], previous: Locale | None, system: str
) -> Locale:
    """Return the session's locale: its transcript labels, then its summary, prompt."""
    if labelled["zh"] != labelled["en"]:
        return "zh" if labelled["zh"] > labelled["en"] else "en"
    if previous is not None:
        return previous
    head = system[:4000]
    return "zh" if len(_CJK.findall(head)) * 4 > len(_LATIN.findall(head)) else "en"


class ExtractiveSummarizer:
    r"""A summarizer that keeps the most salient fragments, within ``max_tokens``.

    Args:
        count_tokens: the counter ``max_tokens`` is measured with; the default, UTF-8
            length, is an upper bound of every tokenizer's count.
        context_tokens: the input size it reports as its context length.

    >>> summarizer = ExtractiveSummarizer()
    >>> text = "<conversation>\\nUser: I live in Oslo. Hi!\\n</conversation>"
    >>> summarizer.complete([Message("user", text)], max_tokens=100)
    'Facts:\n- user: I live in Oslo.'
    """

    label = LABEL

    def __init__(
        self,
        count_tokens: Callable[[str], int] = utf8_bytes,
        *,
        context_tokens: int = 16384,
    ) -> None:
        self._count_tokens = count_tokens
        self._context_tokens = context_tokens
        self._counts: dict[str, int] = {}

    def context_length(self, model: str | None = None) -> int | None:
        return self._context_tokens

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> str:
        request = next((m.text for m in reversed(messages) if m.role == "user"), "")
        system = next((m.text for m in messages if m.role == "system"), "")
        request, instructions = instructions_of(normalize_text(request))
        previous, conversation = _sections_of(request)
        older, summary_locale = _previous_facts(previous)
        last_day = next((f.date for f in reversed(older) if f.date), "")
        newer, labelled = _new_facts(conversation, last_day)
        locale = _locale_of(labelled, summary_locale, normalize_text(system))
        facts = instructed(merged_facts(older, newer), instructions)
        return fitted_text(facts, locale, max_tokens, self._count)

    def _count(self, text: str) -> int:
        """Return ``count_tokens(text)``, remembered: most facts come back each call."""
        counts = self._counts
        found = counts.get(text)
        if found is None:
            if len(counts) >= COUNT_CACHE_SIZE:
                counts.clear()
            found = counts[text] = self._count_tokens(text)
        return found
