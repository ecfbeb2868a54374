"""Running a recall tool call for the model: one tool call in, one tool message out.

``SummaryEngine.recall_tools()`` offers the definitions (``domain.recall_tools``);
``SummaryEngine.call_recall_tool(session_id, tool_call)`` runs one call through this
module. Whatever the model sent (bad JSON, wrong types, an unknown tool, an id of
another conversation), the answer is a tool message that says what was wrong: the
agent loop never sees an exception for it. Only a call the host built without an id
(nothing could answer it) raises ``MessageError``.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

from memory_summary.domain import (
    MemoryStore,
    MemorySummaryError,
    Message,
    MessageError,
    Outcome,
    RecallUnsupported,
    StoreError,
    SummaryConfig,
    ToolCall,
)
from memory_summary.domain.recall_tools import (
    READ_TOOL,
    CompactRequest,
    Entry,
    Hit,
    ReadRequest,
    SearchRequest,
    ToolError,
    compact_result_text,
    parse_recall_call,
    read_result_text,
    search_result_text,
    short_text,
    tool_text,
)

log = logging.getLogger(__name__)

__all__ = ["HeldCompactions", "RecallSource", "recall_tool_call", "recall_tool_message"]


class RecallSource(Protocol):
    """What the recall tools read: a ``SummaryEngine`` offers all of it."""

    @property
    def config(self) -> SummaryConfig: ...

    @property
    def memory(self) -> MemoryStore: ...

    def search_history(
        self, session_id: str, query: str, *, limit: int, archived_only: bool
    ) -> Sequence[Hit]: ...

    def read_history(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> Sequence[Entry]: ...

    def compress(
        self, session_id: str, reason: str = ..., *, instructions: str | None = ...
    ) -> Future[Outcome]: ...


def recall_tool_call(tool_call: object) -> tuple[str, str | ToolCall]:
    """Return the call's id and the call, or the id and what is wrong with it.

    Takes a ``ToolCall``, an OpenAI tool-call dict (``{id, type, function: {name,
    arguments}}``, or flat ``{id, name, arguments}``), a Responses API
    ``function_call`` item (``{type, call_id, name, arguments}``), or the SDK's
    pydantic forms of either.
    Arguments given as an object instead of JSON text are accepted.

    Raises:
        MessageError: the call has no id: no tool message could answer it.
    """
    if isinstance(tool_call, ToolCall):
        return tool_call.id, tool_call
    dump = getattr(tool_call, "model_dump", None)
    data = dump() if callable(dump) else tool_call
    if not isinstance(data, Mapping):
        raise MessageError(
            "tool_call",
            "must be a ToolCall or an OpenAI tool-call dict, "
            f"not {type(data).__name__}",
        )
    # A Responses API item names its call by call_id (its id is the item's own).
    responses = data.get("type") == "function_call" and "call_id" in data
    call_id = data.get("call_id" if responses else "id")
    if not isinstance(call_id, str) or not call_id:
        raise MessageError("tool_call.id", "a tool call needs an id to be answered")
    function = data.get("function")
    fields = function if isinstance(function, Mapping) else data
    arguments = fields.get("arguments", "")
    if isinstance(arguments, Mapping):
        text = json.dumps(arguments, ensure_ascii=False, default=str)
        fields = {**fields, "arguments": text}
    try:
        return call_id, ToolCall.from_mapping({**fields, "id": call_id})
    except MessageError as exc:
        return call_id, f"Error: the tool call is malformed ({exc})."


def recall_tool_message(
    engine: RecallSource,
    session_id: str,
    tool_call: object,
    count_tokens: Callable[[str], int],
) -> Message:
    """Run one recall tool call for ``session_id``; return the tool message.

    Its text, an error's as much as a result's, is within
    ``recall_result_max_tokens``, whatever the model sent (an id, a name, a query).
    """
    cap = engine.config.recall_result_max_tokens
    call_id, call = recall_tool_call(tool_call)
    if isinstance(call, str):
        return Message("tool", tool_text(call, cap, count_tokens), tool_call_id=call_id)
    text = tool_text(_answer(engine, session_id, call, count_tokens), cap, count_tokens)
    return Message("tool", text, tool_call_id=call.id, name=call.name)


def _answer(
    engine: RecallSource,
    session_id: str,
    call: ToolCall,
    count_tokens: Callable[[str], int],
) -> str:
    parsed = parse_recall_call(call.name, call.arguments)
    if isinstance(parsed, ToolError):
        return parsed.text
    cap = engine.config.recall_result_max_tokens
    locale = engine.config.locale
    if isinstance(parsed, CompactRequest):
        return _compact(engine, session_id, parsed)
    try:
        if isinstance(parsed, SearchRequest):
            hits = engine.search_history(
                session_id,
                parsed.query,
                limit=parsed.limit,
                archived_only=parsed.archived_only,
            )
            return search_result_text(
                parsed.query,
                hits,
                cap_tokens=cap,
                count_tokens=count_tokens,
                locale=locale,
            )
        around = _around_id(engine, session_id, parsed)
        if around is None:
            return (
                f"Error: {READ_TOOL}: no tool result of this conversation answers "
                f"tool_call_id {short_text(parsed.tool_call_id or '')!r}."
            )
        # One more before: the call that names a first tool result, not shown.
        read = engine.read_history(
            session_id, around, before=parsed.before + 1, after=parsed.after
        )
        at = next((i for i, e in enumerate(read) if e.message.id == around), 0)
        entries = read[max(at - parsed.before, 0) :]
        return read_result_text(
            entries,
            cap_tokens=cap,
            count_tokens=count_tokens,
            locale=locale,
            context=[e.message for e in read],
            around_id=around,
        )
    except RecallUnsupported:
        return f"Error: {call.name}: this history cannot be searched."
    except StoreError as exc:
        log.warning("session %s: %s failed: %s", session_id, call.name, exc)
        return f"Error: {call.name}: the history cannot be read right now; try later."
    except ValueError as exc:  # a query the index refuses, an id not of this session
        return f"Error: {call.name}: {exc}"


def _compact(engine: RecallSource, session_id: str, request: CompactRequest) -> str:
    """Ask for a compression of ``session_id`` in the background; never wait for it.

    The focus goes to the summarizer as the host's instructions do
    (``SummaryEngine.compress(..., instructions=)``). The fold it causes never
    separates this call from its result: a tool call whose result is not saved yet
    at the end of the history is kept (``domain.window.pending_group_start``).
    """
    future = engine.compress(session_id, "manual", instructions=request.focus or None)
    future.add_done_callback(lambda done: _log_failure(session_id, done))
    return compact_result_text(request.focus, locale=engine.config.locale)


def _log_failure(session_id: str, future: Future[Outcome]) -> None:
    error = None if future.cancelled() else future.exception()  # stop() cancels
    if error is not None:
        log.warning("session %s: compact_context failed: %s", session_id, error)


def _around_id(
    engine: RecallSource, session_id: str, request: ReadRequest
) -> int | None:
    """Return the id to read around: given, or the tool result a stub named."""
    if request.around_id is not None:
        return request.around_id
    wanted = request.tool_call_id
    for read in (engine.memory.get_history, engine.memory.get_full_history):
        for message in reversed(read(session_id)):
            if message.role == "tool" and message.tool_call_id == wanted:
                return message.id
    return None


class HeldCompactions:
    """The engine as the recall tools see it, with ``compact_context`` held back.

    ``record`` answers the model's recall calls before it saves the reply, so the
    reply and its answers are saved in one batch; the compaction a call asks for
    starts only once that batch is stored (``release``): a failed save starts none.
    """

    def __init__(self, engine: RecallSource) -> None:
        self._engine = engine
        self._held: list[tuple[str, str, str | None, Future[Outcome]]] = []

    @property
    def config(self) -> SummaryConfig:
        return self._engine.config

    @property
    def memory(self) -> MemoryStore:
        return self._engine.memory

    def search_history(
        self, session_id: str, query: str, *, limit: int, archived_only: bool
    ) -> Sequence[Hit]:
        return self._engine.search_history(
            session_id, query, limit=limit, archived_only=archived_only
        )

    def read_history(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> Sequence[Entry]:
        return self._engine.read_history(
            session_id, around_id, before=before, after=after
        )

    def compress(
        self,
        session_id: str,
        reason: str = "manual",
        *,
        instructions: str | None = None,
    ) -> Future[Outcome]:
        held: Future[Outcome] = Future()
        self._held.append((session_id, reason, instructions, held))
        return held

    def release(self) -> None:
        """Ask for the held compactions, each future following the engine's."""
        for session_id, reason, instructions, held in self._held:
            try:
                real = self._engine.compress(
                    session_id, reason, instructions=instructions
                )
            except (MemorySummaryError, ValueError, TypeError) as error:  # stop()
                held.set_exception(error)
                continue
            real.add_done_callback(functools.partial(_follow, held))
        self._held.clear()


def _follow(held: Future[Outcome], done: Future[Outcome]) -> None:
    if done.cancelled():
        held.cancel()
        held.set_running_or_notify_cancel()
    elif done.exception() is not None:
        held.set_exception(done.exception())
    else:
        held.set_result(done.result())
