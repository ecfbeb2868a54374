"""The OpenAI Agents SDK's ``Session`` over a ``SummaryEngine`` (extra openai-agents).

``SummarySession`` keeps a run's items in the engine's store, one stored ``Message``
per SDK item, so the engine folds old items into its summary like any chat history:

- a ``message`` item becomes a message of its role (``input_text``/``output_text``
  parts read as text, images and files as parts the summarizer sees as placeholders);
- a tool call (``function_call``, and every other ``*_call`` item with a ``call_id``)
  becomes an assistant message calling that tool, and its output (``*_call_output``)
  a tool message answering it, so a compression never separates a call from its
  output;
- any other item (``reasoning``, hosted tool calls such as ``web_search_call``,
  ``item_reference``...) becomes a ``system`` message of kind ``openai-agents-item``:
  the summarizer never reads it, and a compression archives it with the turns
  around it.

A ``reasoning`` item and the output items after it come from one model response:
they are one group for a compression (``MODEL_RESPONSE``), folded or kept together,
so ``get_items`` never returns a function call without its reasoning item. A batch
of items is saved all or nothing (``add_items``).

Every item is also kept verbatim in its message's metadata, so ``get_items`` returns
what ``add_items`` got (a message's text is kept once, in ``content``, normalized like
every message text: no NUL, no lone surrogates). A
message the host saved in OpenAI chat format (``Message.from_openai``) reads back as
the equivalent items.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast
from uuid import uuid4

try:
    from agents import FunctionTool
    from agents.memory import SessionSettings
    from agents.tool_context import ToolContext
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.integrations.openai_agents needs the OpenAI Agents SDK; "
        "install it with: pip install 'memory-summary[openai-agents]'"
    ) from exc

import attrs

from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain import (
    MASKED_KIND,
    MODEL_RESPONSE,
    Message,
    PoppingStore,
    ToolCall,
    mask_tool_results,
)
from memory_summary.engine import SummaryEngine

from .batch import save_batch

if TYPE_CHECKING:
    from agents import TResponseInputItem

__all__ = ["ITEM_KIND", "SummarySession", "recall_function_tools"]

ITEM_KIND = "openai-agents-item"
"""``Message.kind`` of an SDK item that is neither a message nor a tool call/output."""

_ITEM = "openai_agents_item"  # metadata: the SDK item as given (minus its text field)
_TEXT_FIELD = "openai_agents_text"  # metadata: the item field held in `content`
_MESSAGE_ROLES = frozenset({"system", "developer", "user", "assistant"})
_CALL_FIELDS = frozenset({"type", "id", "call_id", "status", "name", "arguments"})
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}

Item = dict[str, Any]


class SummarySession:
    """An Agents SDK session whose history a ``SummaryEngine`` keeps in its window.

    Pass it to ``Runner.run(agent, input, session=SummarySession(sid, engine))``.
    ``get_items()`` returns the injected summary (a ``system`` message item) and then
    the active items; ``add_items`` stores items and reports the turn
    (``engine.turn_after``), which compresses in the background once the session
    reaches the threshold; ``pop_item`` takes back the newest active item;
    ``clear_session`` forgets the session (``engine.forget``: items, archive and
    summary). Store calls run in a worker thread, never on the event loop.

    With ``mask_tool_results_after`` set, ``get_items()`` returns old tool outputs as
    the stubs ``assemble`` sends (the store keeps them), counting the run's coming
    input as a user turn (the SDK reads the session before adding it);
    ``recall_tools()`` gives the agent the tools to read them back.

    ``get_items(limit=n)`` returns the newest ``n`` stored items without the summary:
    the SDK reads a session's tail this way to check its own writes. Leave
    ``session_settings.limit`` unset: the engine bounds the history, and a limit
    would drop the summary from the model's input.

    Args:
        session_id: the engine's session id.
        engine: a ``SummaryEngine`` or ``AsyncSummaryEngine``; its store must offer
            ``pop_message`` (every store this library ships does).
        session_settings: the SDK's settings (``limit``; see above).

    Raises:
        TypeError: the engine's store has no ``pop_message``.

    Example:
        >>> from memory_summary import SummaryEngine
        >>> from memory_summary.adapters import InMemoryStore
        >>> with SummaryEngine(InMemoryStore()) as engine:
        ...     session = SummarySession("alice", engine)
        ...     asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
        ...     asyncio.run(session.get_items())
        [{'role': 'user', 'content': 'hi'}]
    """

    def __init__(
        self,
        session_id: str,
        engine: SummaryEngine | AsyncSummaryEngine,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.engine = (
            engine.engine if isinstance(engine, AsyncSummaryEngine) else engine
        )
        self.session_settings = session_settings
        store = self.engine.memory
        if not callable(getattr(store, "pop_message", None)):
            raise TypeError(
                f"memory store {type(store).__name__} lacks pop_message, which "
                "SummarySession.pop_item needs (see PoppingStore)"
            )
        self._store = cast(PoppingStore, store)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Return the summary item and the active items; see the class docstring."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None:
            if limit <= 0:
                return []
            tail = await asyncio.to_thread(
                self._store.get_history, self.session_id, limit
            )
            return cast("list[TResponseInputItem]", items_of(tail)[-limit:])
        history, prompt = await asyncio.to_thread(self._read)
        head: list[Item] = [] if prompt is None else [summary_item(prompt)]
        config = self.engine.config
        if config.mask_tool_results_after is not None:  # as ``assemble`` sends them
            # The SDK reads the session before it adds the run's input: that input
            # is the next user turn (the empty user message below stands for it).
            history = mask_tool_results(
                [*history, Message("user", "")],
                config.mask_tool_results_after,
                locale=config.locale,
            )[:-1]
        return cast("list[TResponseInputItem]", head + items_of(history))

    def _read(self) -> tuple[list[Message], str | None]:
        return (
            self._store.get_history(self.session_id),
            self.engine.build_prompt(self.session_id),
        )

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` in order, all or nothing, then report the turn.

        The batch is saved at once (``save_batch``): an item the store refuses
        raises and leaves none of them saved, and two calls at once never
        interleave their items. The turn may compress in the background.
        """
        messages = batch_messages(items)  # all checked before any save
        await asyncio.to_thread(save_batch, self._store, self.session_id, messages)
        self.engine.turn_after(self.session_id)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest active item and return it; None when none is active.

        Items already folded into the summary cannot be taken back. A message the
        host saved in chat format that reads as several items (an assistant text
        with tool calls) is removed whole; its last item is returned.
        """
        message = await asyncio.to_thread(self._store.pop_message, self.session_id)
        if message is None:
            return None
        return cast("TResponseInputItem", items_of([message])[-1])

    async def clear_session(self) -> None:
        """Forget the session: its items, archive and summary (``engine.forget``)."""
        await asyncio.to_thread(self.engine.forget, self.session_id)

    def recall_tools(self) -> list[FunctionTool]:
        """Return the recall tools bound to this session (``recall_function_tools``)."""
        return recall_function_tools(self.session_id, self.engine)


def recall_function_tools(
    session_id: str, engine: SummaryEngine | AsyncSummaryEngine
) -> list[FunctionTool]:
    """Return the engine's recall tools as the SDK's ``FunctionTool``s, for a session.

    Give them to the agent (``Agent(..., tools=[*yours, *session.recall_tools()])``).
    Each call runs ``engine.call_recall_tool`` in a worker thread; a bad argument
    comes back to the model as the tool's output saying what was wrong.
    """
    sync = engine.engine if isinstance(engine, AsyncSummaryEngine) else engine

    def invoker(name: str) -> Any:
        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            call_id = getattr(context, "tool_call_id", None) or "agents"
            call = ToolCall(call_id, name, arguments)
            message = await asyncio.to_thread(sync.call_recall_tool, session_id, call)
            return message.text

        return invoke

    tools = []
    for definition in sync.recall_tools():
        function = cast("dict[str, Any]", definition["function"])
        tools.append(
            FunctionTool(
                name=function["name"],
                description=function["description"],
                params_json_schema=function["parameters"],
                on_invoke_tool=invoker(function["name"]),
                strict_json_schema=False,  # optional arguments have defaults
            )
        )
    return tools


def batch_messages(items: Sequence[Any]) -> list[Message]:
    """Return the messages storing ``items``, a model response's items grouped.

    A ``reasoning`` item and the output items that follow it (assistant messages,
    tool calls, more reasoning) came from one model response, which the Responses
    API takes only whole: they share ``metadata[MODEL_RESPONSE]``, so a compression
    folds or keeps them together (``domain.cut``). Any input item (a user message, a
    tool output) ends the response.
    """
    messages: list[Message] = []
    response: str | None = None
    for item in items:
        message = item_message(item)
        raw = _raw(item)
        kind = _item_type(raw)
        if kind == "reasoning":
            if response is None:
                known = raw.get("id")
                response = known if isinstance(known, str) and known else uuid4().hex
        elif not _is_model_output(raw, kind):
            response = None
        if response is not None:
            metadata = {**message.metadata, MODEL_RESPONSE: response}
            message = attrs.evolve(message, metadata=metadata)
        messages.append(message)
    return messages


def _is_model_output(raw: Mapping[str, Any], kind: str) -> bool:
    """Tell whether an item is one a model response produces (not an input)."""
    if kind == "message":
        return raw.get("role") == "assistant"
    return kind.endswith("_call") or kind == "reasoning"


def _raw(item: Any) -> Mapping[str, Any]:
    return item if isinstance(item, Mapping) else item.model_dump(exclude_unset=True)


def summary_item(prompt: str) -> Item:
    """Return the injected summary text as an input item."""
    return {"role": "system", "content": prompt}


def _item_type(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"  # the SDK's easy input message has no type
    return str(kind)


def _call_id(item: Mapping[str, Any], kind: str) -> str | None:
    """Return the call id a tool-call item opens, or None."""
    call_id = item.get("call_id")
    return call_id if kind.endswith("_call") and isinstance(call_id, str) else None


def _answered_id(item: Mapping[str, Any], kind: str) -> str | None:
    """Return the call id a tool-output item answers, or None."""
    if not kind.endswith("_output"):
        return None
    # A local shell output names its call by `id`; every other output by `call_id`.
    answered = item.get("id" if kind == "local_shell_call_output" else "call_id")
    return answered if isinstance(answered, str) else None


def _chat_parts(content: Sequence[Any]) -> list[dict[str, Any]]:
    """Return Responses content parts as chat parts (what a ``Message`` reads)."""
    parts: list[dict[str, Any]] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _TEXT_PARTS:
            field = _TEXT_PARTS[kind]
            parts.append({"type": field, field: str(part.get(field, ""))})
        elif kind == "input_image":
            url = part.get("image_url") or part.get("file_id") or ""
            image = {"url": str(url), "detail": part.get("detail") or "auto"}
            parts.append({"type": "image_url", "image_url": image})
        elif kind == "input_file":
            fields = ("file_id", "file_data", "filename")
            file = {k: part[k] for k in fields if isinstance(part.get(k), str)}
            parts.append({"type": "file", "file": file})
        else:
            parts.append({"type": "text", "text": f"[{kind}]"})
    return parts


def _tool_output(output: Any) -> str | list[dict[str, Any]]:
    """Return a message's content or a tool's output as chat content."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, Sequence):
        return _chat_parts(output) or ""
    return json.dumps(output, ensure_ascii=False, default=str)


def _call_arguments(item: Mapping[str, Any]) -> str:
    for field in ("arguments", "input"):
        value = item.get(field)
        if isinstance(value, str):
            return value
    rest = {k: v for k, v in item.items() if k not in _CALL_FIELDS}
    return json.dumps(rest, ensure_ascii=False, sort_keys=True, default=str)


def item_message(item: Mapping[str, Any]) -> Message:
    """Return the message that stores one SDK item (see the module docstring).

    Raises:
        MessageError: the item is not JSON-compatible or breaks a ``Message`` rule.
    """
    raw = _raw(item)
    kind = _item_type(raw)
    text_field: str | None = None
    if kind == "message" and raw.get("role") in _MESSAGE_ROLES:
        content = raw.get("content")
        if isinstance(content, str):
            text_field = "content"
        chat = {"role": raw["role"], "content": _tool_output(content)}
        message = Message.from_openai(chat)
    elif (call_id := _call_id(raw, kind)) is not None:
        call = {
            "id": call_id,
            "type": "function",
            "function": {
                "name": str(raw.get("name") or kind),
                "arguments": _call_arguments(raw),
            },
        }
        message = Message.from_openai(
            {"role": "assistant", "content": None, "tool_calls": [call]}
        )
    elif (answered := _answered_id(raw, kind)) is not None:
        output = raw.get("output")
        if isinstance(output, str):
            text_field = "output"
        message = Message.from_openai(
            {"role": "tool", "tool_call_id": answered, "content": _tool_output(output)}
        )
    else:
        message = Message("system", f"[{kind}]", kind=ITEM_KIND)
    kept = {k: v for k, v in raw.items() if k != text_field}
    return attrs.evolve(message, metadata={_ITEM: kept, _TEXT_FIELD: text_field})


def items_of(messages: Sequence[Message]) -> list[Item]:
    """Return the SDK items stored in ``messages``, oldest first."""
    items: list[Item] = []
    for message in messages:
        kept = message.metadata.get(_ITEM)
        if not isinstance(kept, Mapping):
            items.extend(_chat_items(message.to_openai()))
            continue
        item = copy.deepcopy(dict(kept))  # the SDK may mutate what it gets
        field = message.metadata.get(_TEXT_FIELD)
        if isinstance(field, str):
            item[field] = message.content if isinstance(message.content, str) else ""
        elif message.kind == MASKED_KIND and "output" in item:
            item["output"] = message.text  # an output of parts, masked
        items.append(item)
    return items


def _input_parts(content: Sequence[Mapping[str, Any]]) -> list[Item]:
    parts: list[Item] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url":
            image = part.get("image_url") or {}
            parts.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url", ""),
                    "detail": image.get("detail") or "auto",
                }
            )
        elif kind == "file":
            parts.append({"type": "input_file", **dict(part.get("file") or {})})
        else:  # audio, refusal and unknown parts: as the summarizer reads them
            text = part.get(str(kind)) if kind == "refusal" else f"[{kind}]"
            parts.append({"type": "input_text", "text": str(text)})
    return parts


def _chat_items(chat: Mapping[str, Any]) -> list[Item]:
    """Return the items equivalent to one OpenAI chat message the host saved."""
    role = chat["role"]
    content = chat.get("content")
    if role == "tool":
        output = content if isinstance(content, str) else _input_parts(content or [])
        return [
            {
                "type": "function_call_output",
                "call_id": chat["tool_call_id"],
                "output": output,
            }
        ]
    items: list[Item] = []
    if role == "assistant" and not isinstance(content, str) and content:
        content = "\n".join(
            str(p.get("text") or p.get("refusal") or "") for p in content
        )
    if isinstance(content, str) and (content or not chat.get("tool_calls")):
        items.append({"role": role, "content": content})
    elif content:
        items.append({"role": role, "content": _input_parts(content)})
    items.extend(
        {
            "type": "function_call",
            "call_id": call["id"],
            "name": call["function"]["name"],
            "arguments": call["function"]["arguments"],
        }
        for call in chat.get("tool_calls") or ()
    )
    return items
