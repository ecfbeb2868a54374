"""Responses API items as stored messages and back.

Used by ``openai_agents.SummarySession``, ``Conversation.prepare(format=
"responses")`` and ``Conversation.record`` (a ``Response``'s output, ``read_response``).
The mapping is the one ``openai_agents``' module docstring describes: a ``message``
item becomes a message of its role, a tool call and its output an assistant call and
a tool answer, any other item a ``system`` message of kind ``ITEM_KIND``
(``domain.provider_items``: left out of chat-completions and Anthropic requests); each
item is kept verbatim in its message's metadata. Nothing here imports the Agents SDK:
items are plain mappings (or the SDK's models, dumped).

(About 485 lines: one mapping, both ways, with every item type's field rules.)
"""

from __future__ import annotations

import copy
import functools
import json
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

import attrs

from memory_summary.domain import (
    ITEM_KIND,
    MASKED_KIND,
    MODEL_RESPONSE,
    Message,
    MessageError,
)
from memory_summary.domain.replies import ReadReply, is_empty_reply, read_usage_tokens

__all__ = [
    "ITEM_KIND",
    "batch_messages",
    "host_items",
    "item_message",
    "items_of",
    "read_response",
    "summary_item",
]

_ITEM = "openai_agents_item"  # metadata: the SDK item as given (minus its text field)
_TEXT_FIELD = "openai_agents_text"  # metadata: the item field held in `content`
_MESSAGE_ROLES = frozenset({"system", "developer", "user", "assistant"})
_CALL_FIELDS = frozenset({"type", "id", "call_id", "status", "name", "arguments"})
_TEXT_PARTS = {"input_text": "text", "output_text": "text", "refusal": "refusal"}

Item = dict[str, Any]


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


def read_response(reply: object) -> ReadReply | None:
    """Return what a Responses API ``Response`` stores; None when it is none.

    ``reply`` is the SDK's ``Response`` (``client.responses.create``) or its dict
    (``object`` ``"response"``). Its ``output`` items are stored as
    ``batch_messages`` stores them (each kept verbatim, so ``prepare(format=
    "responses")`` sends them back as the API returned them): a ``message`` item
    as the assistant's text and refusal parts (one of no content parts, which says
    nothing, is left out), a ``function_call`` (any ``*_call``
    with a ``call_id``) as an assistant message calling that tool, ``reasoning`` and
    the other items as ``ITEM_KIND`` messages, all of one model response.
    ``ReadReply.message`` is the first output message holding text or a refusal,
    else the first calling a tool. The usage's ``input_tokens`` are the request's
    tokens (cached ones are part of them); a usage of another shape is no usage.

    Raises:
        MessageError: ``output`` is not a list of items, or no item holds text, a
            refusal or a tool call (reasoning alone, an incomplete response).
    """
    if isinstance(reply, Mapping):
        if reply.get("object") != "response":
            return None
        output, model, usage = (reply.get(k) for k in ("output", "model", "usage"))
    elif getattr(reply, "object", None) == "response" and callable(
        getattr(reply, "model_dump", None)
    ):
        output = getattr(reply, "output", None)
        model, usage = getattr(reply, "model", None), getattr(reply, "usage", None)
    else:
        return None
    if not isinstance(output, Sequence) or isinstance(output, str):
        raise MessageError("output", "a Response's output must be a list of items")
    for at, item in enumerate(output):
        if not (isinstance(item, Mapping) or callable(getattr(item, "model_dump", 0))):
            raise MessageError(
                f"output[{at}]", f"an item is a mapping, got {type(item).__name__}"
            )
    wire = [_wire(item) for item in output]
    try:  # a message item of no content says nothing: left out (the API refuses it)
        messages = batch_messages([item for item in wire if not _says_nothing(item)])
    except MessageError as exc:
        raise MessageError(f"output.{exc.field}", exc.problem) from exc
    said = [m for m in messages if m.role == "assistant" and not is_empty_reply(m)]
    if not said:
        raise MessageError(
            "output",
            "the response is empty (no text, refusal or tool call; reasoning at "
            "most): nothing to store",
        )
    main = next((m for m in said if not m.tool_calls), said[0])
    try:
        tokens = None if usage is None else read_usage_tokens(usage)
    except MessageError:  # a shape no provider documents: no usage, the reply kept
        tokens = None
    named = model if isinstance(model, str) and model else None
    return ReadReply(main, named, tokens, output=tuple(messages))


def _says_nothing(item: Item) -> bool:
    """Tell whether ``item`` is a message item without content (no part at all)."""
    return _item_type(item) == "message" and not item.get("content")


def _is_model_output(raw: Mapping[str, Any], kind: str) -> bool:
    """Tell whether an item is one a model response produces (not an input)."""
    if kind == "message":
        return raw.get("role") == "assistant"
    return kind.endswith("_call") or kind == "reasoning"


def _raw(item: Any) -> Mapping[str, Any]:
    """Return an item as a mapping of the API's field names (an SDK model dumped)."""
    if isinstance(item, Mapping):
        return item
    return item.model_dump(by_alias=True, exclude_unset=True)


_ALIASES = {"async_": "async"}
"""The SDK's field names for API fields named by a Python keyword."""


def _wire(item: Any) -> Item:
    """Return a ``Response``'s output item as the API's JSON, to store and send back.

    An SDK model is dumped by the API's field names (``async``, not ``async_``) with
    the fields the API returned, null ones included. A dict (``response.model_dump()``,
    or the JSON itself) gets the API's names for the SDK's (``async_`` becomes
    ``async``), and its top-level None fields are left out unless the API requires
    them as input (``outputs`` of a ``code_interpreter_call``, ``result`` of an
    ``image_generation_call``: the openai package's input types say which), and so
    are a message's content parts' (none is required): a dumped model holds every
    field the SDK knows as None, which the API reads as absent. The item is
    otherwise verbatim.
    """
    if isinstance(item, Mapping):
        required = _required_fields().get(str(item.get("type")))
        wire: Item = {}
        for key, field in item.items():
            alias = _ALIASES.get(key)
            name = alias if alias and alias not in item else key
            if field is None and required is not None and name not in required:
                continue
            wire[name] = field
        if wire.get("type") == "message" and isinstance(wire.get("content"), list):
            wire["content"] = [  # a dumped part's None fields (logprobs): none required
                {k: v for k, v in part.items() if v is not None}
                if isinstance(part, Mapping)
                else part
                for part in wire["content"]
            ]
        return wire
    dumped: Item = item.model_dump(by_alias=True, exclude_unset=True)
    return dumped


_REQUIRED = re.compile(r"^Required\[")
_TYPE = re.compile(r"""Literal\[\s*["']([A-Za-z0-9_.]+)["']""")


@functools.cache
def _required_fields() -> dict[str, frozenset[str]]:
    """Return, per input item type, the fields the Responses API requires.

    Read from the openai package's input item types (empty without the package:
    a dict item then keeps its None fields, as given).
    """
    try:
        from openai.types.responses import response_input_item_param
    except ImportError:  # the openai extra is not installed
        return {}
    fields: dict[str, frozenset[str]] = {}
    for kind in typing.get_args(response_input_item_param.ResponseInputItemParam):
        shown = {
            key: getattr(hint, "__forward_arg__", str(hint))
            for key, hint in getattr(kind, "__annotations__", {}).items()
        }
        named = _TYPE.search(shown.get("type", ""))
        if named is not None:
            required = {key for key, hint in shown.items() if _REQUIRED.match(hint)}
            fields.setdefault(named.group(1), frozenset(required))
    return fields


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
        name, arguments = str(raw.get("name") or kind), _call_arguments(raw)
        if kind == "custom_tool_call":  # free-form input: OpenAI's custom call
            custom = {"name": name, "input": arguments}
            call: Item = {"id": call_id, "type": "custom", "custom": custom}
        else:
            function = {"name": name, "arguments": arguments}
            call = {"id": call_id, "type": "function", "function": function}
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


def host_items(messages: Sequence[object]) -> list[object]:
    """Return ``messages`` with each Responses API item as the message storing it.

    An item is a mapping (or an SDK model) with a ``type`` and no ``role``: a tool
    output (``function_call_output``, ``custom_tool_call_output``,
    ``local_shell_call_output``, ...) is stored as the tool's answer and goes back
    verbatim in ``prepare(format="responses")``; anything else is left for
    ``host_messages``.

    Raises:
        MessageError: an item is malformed, or an output names no call; the field
            names its index.
    """
    result: list[object] = []
    for index, value in enumerate(messages):
        item = value if isinstance(value, Mapping) else None
        if item is None and callable(getattr(value, "model_dump", None)):
            item = _raw(value)
        kind = item.get("type") if item is not None else None
        if item is None or "role" in item or not isinstance(kind, str):
            result.append(value)
            continue
        if kind.endswith("_output") and _answered_id(item, kind) is None:
            field = "id" if kind == "local_shell_call_output" else "call_id"
            raise MessageError(
                f"messages[{index}].{field}", f"a {kind} item names the call it answers"
            )
        try:
            result.append(item_message(item))
        except MessageError as exc:
            raise MessageError(f"messages[{index}].{exc.field}", exc.problem) from exc
    return result


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


def _refusal_item(content: Any, refusal: object) -> Item | None:
    """Return an assistant's text and refusals as an output message; None: no refusal.

    The Responses API reads an assistant's refusal as a ``refusal`` content item of
    an output message (as it returned it): a ``refusal`` part and the ``refusal``
    field each become one, in order after the text, the field left out when a part
    already says it. The item has no ``id``, as the Agents SDK sends a message it did
    not get from the Responses API.
    """
    parts: list[Item] = []
    refused: set[str] = set()
    for part in [content] if isinstance(content, str) else content or ():
        if isinstance(part, str):
            text: object = part
        elif part.get("type") == "refusal":
            said = part.get("refusal")
            if isinstance(said, str) and said:
                parts.append({"type": "refusal", "refusal": said})
                refused.add(said.strip())
            continue
        else:
            text = part.get("text")
        if isinstance(text, str) and text:
            parts.append({"type": "output_text", "text": text, "annotations": []})
    if isinstance(refusal, str) and refusal and refusal.strip() not in refused:
        parts.append({"type": "refusal", "refusal": refusal})
        refused.add(refusal.strip())
    if not refused:
        return None
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": parts,
    }


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
    refused = (
        _refusal_item(content, chat.get("refusal")) if role == "assistant" else None
    )
    if role == "assistant" and not isinstance(content, str) and content:
        content = "\n".join(
            str(p.get("text") or p.get("refusal") or "") for p in content
        )
    if refused is not None:
        items.append(refused)
    elif isinstance(content, str) and (content or not chat.get("tool_calls")):
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
