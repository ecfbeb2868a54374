"""The recall tools the model can call: their definitions, arguments and results.

Three tools, offered in OpenAI's function-tool format (``tool_definitions``):
``search_history`` (full-text search over the whole stored history, archived turns
included), ``read_history`` (the turns around one message, by its id or by the
``tool_call_id`` a masked tool result names) and ``compact_context`` (the model asks
for a fold now, with an optional focus the summarizer reads as host instructions).
Arguments come from a model: every
mistake (bad JSON, wrong types, unknown keys, an unknown tool) becomes a ``ToolError``
value whose text tells the model what to send instead, never an exception. Results
are rendered as text within a token cap (``recall_result_max_tokens``).

Why about 540 lines: one concept, the tools' contract with a model; the definitions,
the argument checks and the rendering of results change together when a tool does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import attrs

from .config import MAX_INSTRUCTIONS_CHARS, Locale
from .model import Message
from .render import render_message, result_names, tool_names_by_call_id
from .text import cut_chars
from .truncate import PROBE_CHARS_PER_TOKEN, truncate_to_tokens

SEARCH_TOOL = "search_history"
READ_TOOL = "read_history"
COMPACT_TOOL = "compact_context"
TOOL_NAMES = (SEARCH_TOOL, READ_TOOL, COMPACT_TOOL)
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 20
DEFAULT_LIMIT = 5
MAX_AROUND = 20
DEFAULT_AROUND = 3
MIN_ENTRY_TOKENS = 40
"""Each hit or turn of a result gets at least this many tokens of the cap."""
CUT_MARK = " […]"
"""Ends a line or a tool message cut to fit the cap."""
_FIT_TRIES = 4
"""Layouts tried before the last resort (a plain cut of the whole text)."""

JsonSchema = dict[str, object]


def tool_definitions(*, compaction: bool = True) -> list[JsonSchema]:
    """Return the recall tools as OpenAI function-tool definitions (JSON schema).

    ``compaction``: offer ``compact_context`` too (False: the two reading tools).

    >>> [d["function"]["name"] for d in tool_definitions()]
    ['search_history', 'read_history', 'compact_context']
    >>> [d["function"]["name"] for d in tool_definitions(compaction=False)]
    ['search_history', 'read_history']
    """
    search: JsonSchema = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "Words to look for (names, ids, topics); any language.",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
                "description": "How many hits to return, best first.",
            },
            "archived_only": {
                "type": "boolean",
                "default": False,
                "description": "Only turns that were folded into the summary.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    around = {"type": "integer", "minimum": 0, "maximum": MAX_AROUND}
    read: JsonSchema = {
        "type": "object",
        "properties": {
            "around_id": {
                "type": "integer",
                "minimum": 1,
                "description": "The id of a message (from a search hit or a stub).",
            },
            "tool_call_id": {
                "type": "string",
                "minLength": 1,
                "description": "Instead of around_id: the tool call a stub names.",
            },
            "before": {**around, "default": DEFAULT_AROUND},
            "after": {**around, "default": DEFAULT_AROUND},
        },
        "additionalProperties": False,
    }
    compact: JsonSchema = {
        "type": "object",
        "properties": {
            "focus": {
                "type": "string",
                "maxLength": MAX_INSTRUCTIONS_CHARS,
                "description": "What the summary must keep for the task ahead "
                "(names, ids, decisions); optional.",
            },
        },
        "additionalProperties": False,
    }
    reading = [
        _function(
            SEARCH_TOOL,
            "Search the whole conversation history, including older turns that "
            "were archived and are only summarized, for a name, id, number or topic. "
            "Returns matching messages with their ids, best first.",
            search,
        ),
        _function(
            READ_TOOL,
            "Read the messages around one message of the history (give around_id, "
            "or the tool_call_id a masked tool result names), in order.",
            read,
        ),
    ]
    if not compaction:
        return reading
    return [
        *reading,
        _function(
            COMPACT_TOOL,
            "Fold the older turns of this conversation into its summary now, to "
            "make room before a long task; the recent turns stay as they are. Give "
            "a focus to say what the summary must keep. Runs in the background.",
            compact,
        ),
    ]


def _function(name: str, description: str, parameters: JsonSchema) -> JsonSchema:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
        },
    }


@attrs.frozen
class SearchRequest:
    """A valid ``search_history`` call."""

    query: str
    limit: int = DEFAULT_LIMIT
    archived_only: bool = False


@attrs.frozen
class ReadRequest:
    """A valid ``read_history`` call: ``around_id`` or ``tool_call_id``, not both."""

    around_id: int | None = None
    tool_call_id: str | None = None
    before: int = DEFAULT_AROUND
    after: int = DEFAULT_AROUND


@attrs.frozen
class ToolError:
    """A call the model got wrong; ``text`` tells it what to send instead."""

    text: str


@attrs.frozen
class CompactRequest:
    """A valid ``compact_context`` call; ``focus`` is "" when none was given."""

    focus: str = ""


RecallRequest = SearchRequest | ReadRequest | CompactRequest


def parse_recall_call(name: str, arguments: str) -> RecallRequest | ToolError:
    """Return the request a model's tool call asks for, or what is wrong with it.

    >>> parse_recall_call("search_history", '{"query": "Paris", "limit": 3}')
    SearchRequest(query='Paris', limit=3, archived_only=False)
    >>> parse_recall_call("read_history", '{"around_id": "7"}').text
    'Error: read_history: around_id must be an integer (a JSON number), not "7".'
    """
    if name not in TOOL_NAMES:
        return ToolError(
            f"Error: unknown tool {short_text(name)!r}; the recall tools are "
            f"{SEARCH_TOOL}, {READ_TOOL} and {COMPACT_TOOL}."
        )
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        return ToolError(f"Error: {name}: the arguments are not valid JSON ({exc}).")
    if not isinstance(data, dict):
        return ToolError(f"Error: {name}: the arguments must be a JSON object.")
    try:
        return _PARSERS[name](data)
    except _BadArgument as exc:
        return ToolError(f"Error: {name}: {exc}")


class _BadArgument(ValueError):
    """One argument is wrong; the message says which and what is allowed."""


def _search(data: Mapping[str, object]) -> SearchRequest:
    _no_unknown_keys(data, ("query", "limit", "archived_only"))
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _BadArgument('"query" is required: non-empty text to search for.')
    if len(query) > MAX_QUERY_CHARS:
        raise _BadArgument(f'"query" must be at most {MAX_QUERY_CHARS} characters.')
    archived_only = data.get("archived_only", False)
    if not isinstance(archived_only, bool):
        raise _BadArgument('"archived_only" must be true or false.')
    limit = _integer(data, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    return SearchRequest(query, limit, archived_only)


def _read(data: Mapping[str, object]) -> ReadRequest:
    _no_unknown_keys(data, ("around_id", "tool_call_id", "before", "after"))
    has_id, has_call = "around_id" in data, "tool_call_id" in data
    if has_id == has_call:
        raise _BadArgument('give exactly one of "around_id" and "tool_call_id".')
    before = _integer(data, "before", DEFAULT_AROUND, 0, MAX_AROUND)
    after = _integer(data, "after", DEFAULT_AROUND, 0, MAX_AROUND)
    if has_id:
        around = _integer(data, "around_id", None, 1, 2**63 - 1)
        return ReadRequest(around_id=around, before=before, after=after)
    call_id = data.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _BadArgument('"tool_call_id" must be non-empty text.')
    return ReadRequest(tool_call_id=call_id, before=before, after=after)


def _compact(data: Mapping[str, object]) -> CompactRequest:
    _no_unknown_keys(data, ("focus",))
    focus = data.get("focus", "")
    if focus is None:
        focus = ""
    if not isinstance(focus, str):
        given = short_text(json.dumps(focus, ensure_ascii=False, default=str))
        raise _BadArgument(f'"focus" must be text, not {given}.')
    if len(focus) > MAX_INSTRUCTIONS_CHARS:
        raise _BadArgument(
            f'"focus" must be at most {MAX_INSTRUCTIONS_CHARS} characters, '
            f"not {len(focus)}."
        )
    return CompactRequest(focus.strip())


_PARSERS: dict[str, Callable[[Mapping[str, object]], RecallRequest]] = {
    SEARCH_TOOL: _search,
    READ_TOOL: _read,
    COMPACT_TOOL: _compact,
}


def compact_result_text(focus: str, *, locale: Locale = "en") -> str:
    """Return what ``compact_context`` tells the model: the fold was asked for.

    >>> compact_result_text("order numbers").endswith("focused on 'order numbers'.")
    True
    """
    if locale == "zh":
        head = "已请求压缩：较早的对话将在后台并入摘要"
        return f"{head}，重点保留 {short_text(focus)!r}。" if focus else f"{head}。"
    head = (
        "Compaction requested: older turns will be folded into the summary "
        "in the background"
    )
    return f"{head}, focused on {short_text(focus)!r}." if focus else f"{head}."


def _no_unknown_keys(data: Mapping[str, object], known: Sequence[str]) -> None:
    unknown = sorted(short_text(str(key)) for key in data if key not in known)
    if unknown:
        raise _BadArgument(
            f"unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(known)}."
        )


def _integer(
    data: Mapping[str, object], key: str, default: int | None, low: int, high: int
) -> int:
    value = data.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON schema's integer: 3.0 is one
    if isinstance(value, bool) or not isinstance(value, int):
        given = short_text(json.dumps(value, ensure_ascii=False))
        raise _BadArgument(f"{key} must be an integer (a JSON number), not {given}.")
    if not low <= value <= high:
        raise _BadArgument(f"{key} must be between {low} and {high}, not {value}.")
    return value


def short_text(text: str, chars: int = 60) -> str:
    """Return ``text`` cut to ``chars`` characters, marked: for echoing model input."""
    return text if len(text) <= chars else text[:chars] + "…"


class Entry(Protocol):
    """What an entry of the history offers (``HistoryEntry``)."""

    @property
    def message(self) -> Message: ...
    @property
    def archived(self) -> bool: ...
    @property
    def summary_version(self) -> int | None: ...


class Hit(Entry, Protocol):
    """What a search hit offers (``SearchHit``): an entry and its score."""

    @property
    def score(self) -> float: ...


def _where(entry: Entry) -> str:
    if not entry.archived:
        return "active"
    version = entry.summary_version
    return "archived" if version is None else f"archived, summary v{version}"


def tool_text(text: str, cap_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """Return ``text`` within ``cap_tokens``, cut with a visible mark when it is not.

    Every tool message goes through here, an error as much as a result. The text is
    first cut to what the cap could show at all (``cap_tokens`` x
    ``PROBE_CHARS_PER_TOKEN`` characters), so the tokenizer never reads more than
    that however long the text a model or a store gave.

    >>> tool_text("abcdefghij", 8, len)
    'abcd […]'
    """
    return truncate_to_tokens(
        _within_sight(text, cap_tokens), cap_tokens, count_tokens, CUT_MARK
    )


def _within_sight(text: str, cap_tokens: int) -> str:
    """Return ``text`` cut to ``cap_tokens`` x ``PROBE_CHARS_PER_TOKEN`` characters.

    No token spans that many characters, so a longer text could not be shown whole
    within the cap anyway; a cut one is marked (``cut_chars``).
    """
    return cut_chars(text, max(cap_tokens, 1) * PROBE_CHARS_PER_TOKEN)


def _shares(costs: Sequence[int], available: int) -> list[int]:
    """Return each entry's share of ``available`` tokens (water-filling).

    Entries smaller than an even split get what they cost; the rest split what is
    left evenly, so one huge entry cannot crowd out the others. Each gets at least
    ``MIN_ENTRY_TOKENS`` when ``available`` holds that many for all (the shares then
    sum to at most ``available``), else an even split of it.
    """
    floor = min(MIN_ENTRY_TOKENS, available // max(len(costs), 1))
    shares = [0] * len(costs)
    left = available
    order = sorted(range(len(costs)), key=costs.__getitem__)
    for rank, index in enumerate(order):
        fair = left // (len(costs) - rank)
        shares[index] = max(min(costs[index], fair), floor)
        left -= shares[index]
    return shares


def _shown(count: int, anchor: int, kept: int) -> tuple[int, int]:
    """Return the ``kept`` nearest ``anchor``, ``[start, stop)`` of ``count``."""
    start = min(max(anchor - (kept - 1) // 2, 0), count - kept)
    return start, start + kept


def _notes(earlier: int, later: int) -> tuple[list[str], list[str]]:
    """Return the lines that count the entries left out before and after the shown."""
    return (
        [f"[{earlier} earlier cut to fit]"] if earlier else [],
        [f"[{later} more cut to fit]"] if later else [],
    )


def _layout(
    lines: Sequence[str],
    costs: Sequence[int],
    title: Callable[[int, int], str],
    room_tokens: int,
    count_tokens: Callable[[str], int],
    anchor: int,
) -> str:
    """Return the title, the entries nearest ``anchor`` and notes, in ``room_tokens``.

    As many entries are shown as can each have ``MIN_ENTRY_TOKENS`` beside the title
    and the notes that count the others (the anchor at least); each is cut to its
    share of the rest.
    """
    count = len(lines)
    for kept in range(count, 0, -1):
        start, stop = _shown(count, anchor, kept)
        before, after = _notes(start, count - stop)
        notes = sum(count_tokens(note) + 1 for note in (*before, *after))
        head = title(start, stop)
        if count_tokens(head) + notes + kept * MIN_ENTRY_TOKENS <= room_tokens:
            break
    else:  # even the anchor alone is short of room: the title gives way
        head = truncate_to_tokens(
            head, room_tokens - notes - MIN_ENTRY_TOKENS, count_tokens, CUT_MARK
        )
    reserve = count_tokens(head) + notes
    shares = _shares(costs[start:stop], room_tokens - reserve)
    shown = [
        line
        if cost <= share
        else truncate_to_tokens(line, share - 1, count_tokens, CUT_MARK)
        for line, cost, share in zip(
            lines[start:stop], costs[start:stop], shares, strict=True
        )
    ]
    return "\n".join([head, *before, *shown, *after])


def _entries_text(
    heads: Sequence[str],
    bodies: Sequence[str],
    title: Callable[[int, int], str],
    cap_tokens: int,
    count_tokens: Callable[[str], int],
    anchor: int = 0,
) -> str:
    """Return a title and one line per entry within ``cap_tokens``.

    ``title(start, stop)`` names the entries shown. The entry at ``anchor`` (the one
    asked for) is always shown; when not every entry can have ``MIN_ENTRY_TOKENS``,
    those farthest from it are left out and counted in a note (``[2 earlier cut to
    fit]`` after the title, ``[3 more cut to fit]`` at the end). Entries that fit
    their share stay whole; longer ones are cut to it. The tokenizer reads at most
    ``cap_tokens`` x ``PROBE_CHARS_PER_TOKEN`` characters of an entry, however long
    its message: the cost is bounded by what can be shown.
    """
    lines = [
        _within_sight(f"{head} {body}", cap_tokens)
        for head, body in zip(heads, bodies, strict=True)
    ]
    costs = [count_tokens(line) + 1 for line in lines]  # + its newline
    room = cap_tokens
    for _ in range(_FIT_TRIES):
        text = _layout(lines, costs, title, room, count_tokens, anchor)
        over = count_tokens(text) - cap_tokens
        if over <= 0:
            return text
        room -= over  # tokens merged across a line break: give up as many
    return truncate_to_tokens(text, cap_tokens, count_tokens, CUT_MARK)


def search_result_text(
    query: str,
    hits: Sequence[Hit],
    *,
    cap_tokens: int,
    count_tokens: Callable[[str], int],
    locale: Locale = "en",
) -> str:
    """Return what ``search_history`` tells the model: hits, best first, in the cap."""
    if not hits:
        if locale == "zh":
            return f"本对话中没有消息匹配 {short_text(query)!r}。"
        return f"No message of this conversation matches {short_text(query)!r}."
    names = result_names([hit.message for hit in hits])
    title = (
        f"{len(hits)} 条消息匹配 {short_text(query)!r}，按相关度排序；"
        f"{READ_TOOL}(around_id=...) 可查看其前后的对话。"
        if locale == "zh"
        else f"{len(hits)} message(s) match {short_text(query)!r}, best first. "
        f"{READ_TOOL}(around_id=...) shows the turns around one."
    )
    heads = [
        f"[id {hit.message.id}, {_where(hit)}, score {hit.score:.2f}]" for hit in hits
    ]
    bodies = [
        render_message(hit.message, names[i], locale=locale, cut=2000)
        for i, hit in enumerate(hits)
    ]
    return _entries_text(
        heads, bodies, lambda _start, _stop: title, cap_tokens, count_tokens
    )


def read_result_text(
    entries: Sequence[Entry],
    *,
    cap_tokens: int,
    count_tokens: Callable[[str], int],
    locale: Locale = "en",
    context: Sequence[Message] = (),
    around_id: int | None = None,
) -> str:
    """Return what ``read_history`` tells the model: the turns in order, in the cap.

    ``context`` holds messages read around the entries (not shown) whose tool
    calls name the results among the entries. The entry of ``around_id`` (the one
    asked for; the first when None or not among them) is always shown: when the cap
    cannot hold every turn, those farthest from it are left out and counted.
    """
    if not entries:
        return "那里没有消息。" if locale == "zh" else "No messages there."
    messages = [entry.message for entry in entries]
    calls = tool_names_by_call_id(context)
    names = [{**calls, **found} for found in result_names(messages)]
    anchor = next((i for i, m in enumerate(messages) if m.id == around_id), 0)

    def title(start: int, stop: int) -> str:
        first, last = messages[start].id, messages[stop - 1].id
        if locale == "zh":
            return f"本对话中 id 为 {first} 至 {last} 的消息，按顺序："
        return f"Messages {first} to {last} of this conversation, in order:"

    heads = [f"[id {e.message.id}, {_where(e)}]" for e in entries]
    bodies = [
        render_message(m, names[i], locale=locale, cut=4000)
        for i, m in enumerate(messages)
    ]
    return _entries_text(heads, bodies, title, cap_tokens, count_tokens, anchor)
