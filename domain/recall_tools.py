"""The recall tools the model can call: their definitions, arguments and results.

Two tools, offered in OpenAI's function-tool format (``tool_definitions``):
``search_history`` (full-text search over the whole stored history, archived turns
included) and ``read_history`` (the turns around one message, by its id or by the
``tool_call_id`` a masked tool result names). Arguments come from a model: every
mistake (bad JSON, wrong types, unknown keys, an unknown tool) becomes a ``ToolError``
value whose text tells the model what to send instead, never an exception. Results
are rendered as text within a token cap (``recall_result_max_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import attrs

from .config import Locale
from .model import Message
from .render import render_message, result_names, tool_names_by_call_id
from .truncate import truncate_to_tokens

SEARCH_TOOL = "search_history"
READ_TOOL = "read_history"
TOOL_NAMES = (SEARCH_TOOL, READ_TOOL)
MAX_QUERY_CHARS = 1000
MAX_LIMIT = 20
DEFAULT_LIMIT = 5
MAX_AROUND = 20
DEFAULT_AROUND = 3
MIN_ENTRY_TOKENS = 40
"""Each hit or turn of a result gets at least this many tokens of the cap."""

JsonSchema = dict[str, object]


def tool_definitions() -> list[JsonSchema]:
    """Return the recall tools as OpenAI function-tool definitions (JSON schema).

    >>> [d["function"]["name"] for d in tool_definitions()]
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
    return [
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


RecallRequest = SearchRequest | ReadRequest


def parse_recall_call(name: str, arguments: str) -> RecallRequest | ToolError:
    """Return the request a model's tool call asks for, or what is wrong with it.

    >>> parse_recall_call("search_history", '{"query": "Paris", "limit": 3}')
    SearchRequest(query='Paris', limit=3, archived_only=False)
    >>> parse_recall_call("read_history", '{"around_id": "7"}').text
    'Error: read_history: around_id must be an integer (a JSON number), not "7".'
    """
    if name not in TOOL_NAMES:
        return ToolError(
            f"Error: unknown tool {_short(name)!r}; the recall tools are "
            f"{SEARCH_TOOL} and {READ_TOOL}."
        )
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError as exc:
        return ToolError(f"Error: {name}: the arguments are not valid JSON ({exc}).")
    if not isinstance(data, dict):
        return ToolError(f"Error: {name}: the arguments must be a JSON object.")
    try:
        return _search(data) if name == SEARCH_TOOL else _read(data)
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


def _no_unknown_keys(data: Mapping[str, object], known: Sequence[str]) -> None:
    unknown = sorted(_short(str(key)) for key in data if key not in known)
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
        given = _short(json.dumps(value, ensure_ascii=False))
        raise _BadArgument(f"{key} must be an integer (a JSON number), not {given}.")
    if not low <= value <= high:
        raise _BadArgument(f"{key} must be between {low} and {high}, not {value}.")
    return value


def _short(text: str, chars: int = 60) -> str:
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


def _shares(costs: Sequence[int], available: int) -> list[int]:
    """Return each entry's share of ``available`` tokens (water-filling).

    Entries smaller than an even split get what they cost; the rest split what is
    left evenly, so one huge entry cannot crowd out the others.
    """
    shares = [0] * len(costs)
    left = available
    order = sorted(range(len(costs)), key=costs.__getitem__)
    for rank, index in enumerate(order):
        fair = left // (len(costs) - rank)
        shares[index] = max(min(costs[index], fair), MIN_ENTRY_TOKENS)
        left -= shares[index]
    return shares


def _entries_text(
    heads: Sequence[str],
    bodies: Sequence[str],
    title: str,
    cap_tokens: int,
    count_tokens: Callable[[str], int],
) -> str:
    """Return ``title`` and one line per entry within ``cap_tokens``.

    Entries that fit their share stay whole; longer ones are cut to it (at least
    ``MIN_ENTRY_TOKENS``); entries that no longer fit are counted in a last line.
    """
    lines = [f"{head} {body}" for head, body in zip(heads, bodies, strict=True)]
    used = count_tokens(title)
    costs = [count_tokens(line) + 1 for line in lines]  # + its newline
    shares = _shares(costs, cap_tokens - used)
    out = [title]
    for index, line in enumerate(lines):
        if costs[index] > shares[index]:
            line = truncate_to_tokens(line, shares[index] - 1, count_tokens, " […]")
        cost = count_tokens("\n" + line)
        left = len(lines) - index
        if used + cost + count_tokens(f"\n[{left} more cut to fit]") > cap_tokens:
            out.append(f"[{left} more cut to fit]")
            break
        out.append(line)
        used += cost
    return truncate_to_tokens("\n".join(out), cap_tokens, count_tokens, " […]")


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
            return f"本对话中没有消息匹配 {_short(query)!r}。"
        return f"No message of this conversation matches {_short(query)!r}."
    names = result_names([hit.message for hit in hits])
    title = (
        f"{len(hits)} 条消息匹配 {_short(query)!r}，按相关度排序；"
        f"{READ_TOOL}(around_id=...) 可查看其前后的对话。"
        if locale == "zh"
        else f"{len(hits)} message(s) match {_short(query)!r}, best first. "
        f"{READ_TOOL}(around_id=...) shows the turns around one."
    )
    heads = [
        f"[id {hit.message.id}, {_where(hit)}, score {hit.score:.2f}]" for hit in hits
    ]
    bodies = [
        render_message(hit.message, names[i], locale=locale, cut=2000)
        for i, hit in enumerate(hits)
    ]
    return _entries_text(heads, bodies, title, cap_tokens, count_tokens)


def read_result_text(
    entries: Sequence[Entry],
    *,
    cap_tokens: int,
    count_tokens: Callable[[str], int],
    locale: Locale = "en",
    context: Sequence[Message] = (),
) -> str:
    """Return what ``read_history`` tells the model: the turns in order, in the cap.

    ``context`` holds messages read around the entries (not shown) whose tool
    calls name the results among the entries.
    """
    if not entries:
        return "那里没有消息。" if locale == "zh" else "No messages there."
    messages = [entry.message for entry in entries]
    calls = tool_names_by_call_id(context)
    names = [{**calls, **found} for found in result_names(messages)]
    first, last = messages[0].id, messages[-1].id
    title = (
        f"本对话中 id 为 {first} 至 {last} 的消息，按顺序："
        if locale == "zh"
        else f"Messages {first} to {last} of this conversation, in order:"
    )
    heads = [f"[id {e.message.id}, {_where(e)}]" for e in entries]
    bodies = [
        render_message(m, names[i], locale=locale, cut=4000)
        for i, m in enumerate(messages)
    ]
    return _entries_text(heads, bodies, title, cap_tokens, count_tokens)
