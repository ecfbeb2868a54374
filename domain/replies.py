"""A chat model's reply as a host holds it, read into a stored message and its usage.

``Conversation.record`` takes what the host's SDK returned: an OpenAI
``ChatCompletion`` or its message, an Anthropic ``Message``, either as a dict, or a
``Message`` (``memory_summary.response_items`` reads a Responses API ``Response``,
its items stored as the Agents SDK session stores them, every one in
``ReadReply.output``). This module reads the others, without importing any SDK
(pydantic objects are read through ``model_dump``), into the assistant ``Message`` to
store, the model that wrote it and the tokens the request held, which the engine turns
into the session's context ratio:

- OpenAI: ``usage.prompt_tokens`` (cached tokens are part of it).
- Anthropic: ``input_tokens`` plus ``cache_creation_input_tokens`` and
  ``cache_read_input_tokens``; with ``usage.iterations`` (server-side compaction),
  the last sampling iteration's, never their sum (the earlier ones read the context
  before it was compacted) nor a ``compaction`` entry's (it measures the compaction).
  The ``compaction`` entries' tokens are the summarizer's work done by the server:
  ``compaction_usage`` reads them, and the engine adds them to the session's
  summarizer usage.

A reply with neither text nor a tool call is refused (``MessageError``): storing it
would give the model an empty turn to read back. Thinking alone is no reply either.
The usage a reply carries is read leniently: a shape neither provider documents (as
some compatible servers send) counts as no usage, never as a reason to lose the reply;
a usage the host passes itself (``read_usage_tokens``) is held to the documented shapes.

Why about 560 lines: each of the host's shapes (replies, usages, the user's and the
host's messages) is read here, and the common reply, a ChatCompletion of text (a dict or
the SDK's object), is also read on a shortcut that reads it as the general path does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from .anthropic_format import AnthropicSystem, messages_from_anthropic
from .content import Content, content_text
from .errors import MessageError
from .injection import InjectedTest, holds_injection, opens_with_header
from .model import SUMMARY_KIND, Message
from .openai_format import openai_mapping
from .thinking import THINKING_TYPES
from .usage import TokenUsage

__all__ = [
    "ReadReply",
    "compaction_usage",
    "host_messages",
    "host_system",
    "is_empty_reply",
    "read_reply",
    "read_usage_tokens",
    "system_message",
    "unsaved",
    "user_message",
]


@attrs.frozen
class ReadReply:
    """What ``read_reply`` found in a reply.

    Attributes:
        message: the assistant message to store (no id yet).
        model: the model the reply names, or None.
        context_tokens: the tokens the request held, as the provider reported them,
            or None when the reply carries no usage.
        compaction: the tokens of the server-side compactions the reply's usage
            lists (``compaction_usage``), None when there were none.
        output: every message the reply stores, in order: ``message`` alone, or a
            Responses API reply's output items, one message each (``message`` is
            the one holding its text).
    """

    message: Message
    model: str | None
    context_tokens: int | None
    compaction: TokenUsage | None = None
    output: tuple[Message, ...] = attrs.field(
        default=attrs.Factory(lambda self: (self.message,), takes_self=True)
    )


def _mapping(value: object, where: str) -> Mapping[str, object]:
    try:
        return openai_mapping(value)
    except MessageError:
        raise MessageError(
            where,
            f"cannot read a {type(value).__name__}; allowed: an OpenAI ChatCompletion "
            "or its message, a Responses API Response, an Anthropic Message, any as "
            "a dict, or a Message",
        ) from None


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def _anthropic_tokens(usage: Mapping[str, object]) -> int:
    return (
        _count(usage.get("input_tokens"))
        + _count(usage.get("cache_creation_input_tokens"))
        + _count(usage.get("cache_read_input_tokens"))
    )


def read_usage_tokens(usage: object) -> int | None:
    """Return the tokens a request held from a usage object, or None when unknown.

    ``usage`` is an int (tokens), OpenAI's usage (``prompt_tokens``) or Anthropic's
    (input plus cache tokens; the last of ``iterations`` that is no ``compaction``
    entry, when present), as a dict or an SDK object.

    Raises:
        MessageError: ``usage`` is none of these.

    >>> read_usage_tokens({"prompt_tokens": 1200, "completion_tokens": 80})
    1200
    >>> read_usage_tokens({"input_tokens": 10, "cache_read_input_tokens": 900,
    ...     "iterations": [{"input_tokens": 180000}, {"input_tokens": 30000}]})
    30000
    """
    if usage is None:
        return None
    if isinstance(usage, int) and not isinstance(usage, bool):
        if usage < 0:
            raise MessageError("usage", f"{usage} is negative; allowed: tokens >= 0")
        return usage
    data = _mapping(usage, "usage")
    iterations = data.get("iterations")
    if isinstance(iterations, Sequence) and not isinstance(iterations, str):
        # a compaction entry measures the compaction, never the context
        steps = _iterations(iterations)
        steps = [step for step in steps if step.get("type") != "compaction"]
        if steps:
            return _anthropic_tokens(steps[-1])
    if "prompt_tokens" in data:
        return _count(data.get("prompt_tokens"))
    if "input_tokens" in data:
        return _anthropic_tokens(data)
    raise MessageError(
        "usage",
        "holds neither prompt_tokens (OpenAI) nor input_tokens (Anthropic); allowed: "
        "a provider's usage, an int of tokens or None",
    )


def _iterations(iterations: Sequence[object]) -> list[Mapping[str, object]]:
    """Return the entries of Anthropic's ``usage.iterations`` (None entries skipped).

    Raises:
        MessageError: an entry is no mapping (nor an SDK object).
    """
    steps = []
    for at, step in enumerate(iterations):
        if step is None:
            continue
        try:
            steps.append(openai_mapping(step))
        except MessageError:
            raise MessageError(
                f"usage.iterations[{at}]",
                f"cannot read a {type(step).__name__}; allowed: a usage entry "
                "(input_tokens, output_tokens, type) as a dict or an SDK object",
            ) from None
    return steps


def compaction_usage(usage: object) -> TokenUsage | None:
    """Return the tokens of the ``compaction`` entries of ``usage.iterations``.

    Anthropic's threshold compaction runs an extra sampling step on the server and
    lists it in ``usage.iterations`` with ``type`` ``"compaction"``; the top-level
    usage leaves it out. Input counts the cache tokens too. None when ``usage``
    lists no such entry (or is no usage at all); never raises.

    >>> compaction_usage({"input_tokens": 23000, "output_tokens": 1000, "iterations": [
    ...     {"type": "compaction", "input_tokens": 180000, "output_tokens": 3500},
    ...     {"type": "message", "input_tokens": 23000, "output_tokens": 1000}]})
    TokenUsage(input_tokens=180000, output_tokens=3500, cache_read_tokens=0, \
cache_write_tokens=0)
    """
    try:
        data = openai_mapping(usage) if usage is not None else {}
        iterations = data.get("iterations")
        if not isinstance(iterations, Sequence) or isinstance(iterations, str):
            return None
        steps = [openai_mapping(step) for step in iterations if step is not None]
    except MessageError:
        return None
    steps = [step for step in steps if step.get("type") == "compaction"]
    if not steps:
        return None
    read = sum(_count(step.get("cache_read_input_tokens")) for step in steps)
    write = sum(_count(step.get("cache_creation_input_tokens")) for step in steps)
    return TokenUsage(
        sum(_anthropic_tokens(step) for step in steps),
        sum(_count(step.get("output_tokens")) for step in steps),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _reply_tokens(usage: object) -> int | None:
    """Return the tokens of the usage a reply carries; None when its shape is unknown.

    >>> _reply_tokens({"total_tokens": 5}) is None
    True
    """
    try:
        return read_usage_tokens(usage)
    except MessageError:
        return None


def _model(data: Mapping[str, object]) -> str | None:
    model = data.get("model")
    return model if isinstance(model, str) and model else None


def _openai_reply(data: Mapping[str, object]) -> ReadReply:
    choices = data.get("choices")
    if not isinstance(choices, Sequence) or isinstance(choices, str) or not choices:
        raise MessageError("choices", "a ChatCompletion without a choice")
    choice = _mapping(choices[0], "choices[0]")
    message = _assistant(
        Message.from_openai(_mapping(choice.get("message"), "message"))
    )
    return ReadReply(message, _model(data), _reply_tokens(data.get("usage")))


def _anthropic_reply(data: Mapping[str, object]) -> ReadReply:
    turn = messages_from_anthropic(
        None, [{"role": "assistant", "content": data.get("content")}]
    )
    if len(turn) != 1:
        raise MessageError("content", "an Anthropic reply holds one assistant turn")
    usage = data.get("usage")
    return ReadReply(
        _assistant(turn[0]),
        _model(data),
        _reply_tokens(usage),
        compaction_usage(usage),
    )


def is_empty_reply(message: Message) -> bool:
    """Tell whether an assistant message holds no text, tool call or refusal.

    Thinking alone, blank text and a blank refusal are empty.

    >>> is_empty_reply(Message("assistant", " ")), is_empty_reply(
    ...     Message("assistant", None, refusal="No.", metadata=None))
    (True, False)
    """
    refused = (message.refusal or "").strip()  # a blank refusal says nothing
    return not message.tool_calls and not refused and not _says(message.content)


def _assistant(message: Message) -> Message:
    if message.role != "assistant":
        raise MessageError("role", f"a reply is the assistant's, got {message.role!r}")
    if is_empty_reply(message):
        raise MessageError(
            "content",
            "the reply is empty (no text and no tool call, thinking at most): "
            "nothing to store",
        )
    return message


def _says(content: Content) -> bool:
    """Tell whether ``content`` holds anything but blank text and thinking."""
    if isinstance(content, tuple):
        content = tuple(
            part for part in content if part.get("type") not in THINKING_TYPES
        )
    return bool(content_text(content).strip())


def read_reply(reply: object) -> ReadReply:
    """Return the stored message, model and request tokens of a chat model's reply.

    Raises:
        MessageError: ``reply`` is not a reply this module reads, is not the
            assistant's, or is empty (no text, no tool call, no refusal).

    >>> got = read_reply({"model": "gpt-4o", "choices": [{"message": {
    ...     "role": "assistant", "content": "Hi!"}}], "usage": {"prompt_tokens": 42}})
    >>> got.message.content, got.model, got.context_tokens
    ('Hi!', 'gpt-4o', 42)
    >>> read_reply({"type": "message", "role": "assistant", "model": "claude-x",
    ...     "content": [{"type": "text", "text": "Hello."}],
    ...     "usage": {"input_tokens": 5, "cache_read_input_tokens": 95}}).context_tokens
    100
    """
    if isinstance(reply, Message):
        return ReadReply(_assistant(reply), None, None)
    plain = _plain_completion(reply) or _plain_sdk_completion(reply)
    if plain is not None:
        return plain
    data = _mapping(reply, "reply")
    if "choices" in data:
        return _openai_reply(data)
    if data.get("type") == "message" or (
        data.get("role") == "assistant" and _is_anthropic(data)
    ):
        return _anthropic_reply(data)
    if "role" in data:
        return ReadReply(_assistant(Message.from_openai(data)), _model(data), None)
    raise MessageError(
        "reply",
        "has no choices, no role and is no Anthropic message; allowed: an OpenAI "
        "ChatCompletion or its message, a Responses API Response, an Anthropic "
        "Message, any as a dict, or a Message",
    )


_PLAIN_KEYS = frozenset(
    {
        "role",
        "content",
        "refusal",
        "annotations",
        "tool_calls",
        "audio",
        "function_call",
    }
)
"""The keys of a plain reply message: text, and no call, refusal or audio (None)."""


def _plain_completion(reply: object) -> ReadReply | None:
    """Return what ``read_reply`` reads of a plain ChatCompletion dict; None otherwise.

    The common reply: a dict whose first choice's message is the assistant's text
    alone (``refusal``, ``tool_calls``, ``audio``, ``function_call`` absent or None;
    ``annotations`` ignored). Read as the general path reads it, for less.
    """
    if type(reply) is not dict:
        return None
    choices = reply.get("choices")
    if type(choices) is not list or not choices:
        return None
    choice = choices[0]
    message = choice.get("message") if type(choice) is dict else None
    if type(message) is not dict or message.get("role") != "assistant":
        return None
    content = message.get("content")
    if type(content) is not str or not _PLAIN_KEYS.issuperset(message):
        return None
    for key in ("refusal", "tool_calls", "audio", "function_call"):
        if message.get(key) is not None:
            return None
    said = Message.of_text("assistant", content)
    return ReadReply(_assistant(said), _model(reply), _reply_tokens(reply.get("usage")))


def _dumps(value: object) -> bool:
    return callable(getattr(value, "model_dump", None))


def _plain_sdk_completion(reply: object) -> ReadReply | None:
    """``_plain_completion`` of an SDK ``ChatCompletion`` (a pydantic model).

    Its message read by attribute, not dumped: only when the message's class declares
    no field but those of a plain reply and carries no extra one (``model_extra``).
    """
    choices = getattr(reply, "choices", None)
    if type(choices) is not list or not choices or not _dumps(reply):
        return None
    message = getattr(choices[0], "message", None)
    if not (_dumps(choices[0]) and _dumps(message)) or getattr(
        message, "model_extra", None
    ):
        return None
    fields = getattr(type(message), "model_fields", None)
    if not isinstance(fields, Mapping) or not _PLAIN_KEYS.issuperset(fields):
        return None
    content = getattr(message, "content", None)
    if getattr(message, "role", None) != "assistant" or type(content) is not str:
        return None
    for key in ("refusal", "tool_calls", "audio", "function_call"):
        if getattr(message, key, None) is not None:
            return None
    model = getattr(reply, "model", None)
    return ReadReply(
        _assistant(Message.of_text("assistant", content)),
        model if isinstance(model, str) and model else None,
        _reply_tokens(getattr(reply, "usage", None)),
    )


_ANTHROPIC_ONLY = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "compaction",
        "document",
    }
)
"""Block types only Anthropic's format has: a dict holding one is Anthropic's."""


def _is_anthropic(data: Mapping[str, object]) -> bool:
    content = data.get("content")
    return (
        isinstance(content, Sequence)
        and not isinstance(content, str)
        and any(
            isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_ONLY
            for block in content
        )
    )


def host_messages(items: Sequence[object]) -> list[Message]:
    """Return messages a host produced as ``Message``s, in order.

    Each item is a ``Message``, an OpenAI chat message (dict or pydantic) or an
    Anthropic message dict; a dict is Anthropic's when its content holds a block only
    Anthropic has (``tool_result``, ``tool_use``, ``thinking``, ...), so one Anthropic
    user turn of tool results becomes one ``tool`` message per result.

    Raises:
        MessageError: an item is malformed; the field names its index.

    >>> [(m.role, m.tool_call_id) for m in host_messages([
    ...     {"role": "tool", "tool_call_id": "c1", "content": "42"},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "7"}]}])]
    [('tool', 'c1'), ('tool', 't1')]
    """
    result: list[Message] = []
    for index, item in enumerate(items):
        try:
            if isinstance(item, Message):
                result.append(item)
                continue
            data = _mapping(item, "message")
            if _is_anthropic(data):
                result.extend(messages_from_anthropic(None, [data]))
            else:
                result.append(Message.from_openai(data))
        except MessageError as exc:
            raise MessageError(f"messages[{index}].{exc.field}", exc.problem) from exc
    return result


def user_message(user: object) -> Message:
    """Return the user's new message: text, a ``Message`` or a user message dict.

    Raises:
        MessageError: it is not the user's (an Anthropic user turn holding tool
            results is several messages: ``add`` saves them), or it is empty.
    """
    if isinstance(user, str):
        said = Message.of_text("user", user)  # NUL bytes go: "\x00" alone is empty
        if not content_text(said.content).strip():
            raise MessageError("user", "is empty; allowed: the user's text")
        return said
    read = host_messages([user])
    if len(read) > 1:  # an Anthropic user turn of tool results (and text)
        raise MessageError(
            "user",
            f"holds {len(read)} messages (tool results); allowed: the user's one "
            "message (add() saves tool results)",
        )
    message = read[0] if read else None
    if message is None or message.role != "user":
        role = None if message is None else message.role
        raise MessageError("user", f"must be the user's message, got role {role!r}")
    if not content_text(message.content).strip():
        raise MessageError("user", "is empty; allowed: the user's text or parts")
    return message


def unsaved(
    messages: list[Message],
    where: str,
    injected: InjectedTest = opens_with_header,
) -> list[Message]:
    """Return ``messages``, refusing one that is already stored (it has an id).

    A summary the engine injected is refused too: the engine injects the current
    summary into every request, so a stored copy would send an old summary beside
    it in every request after. It is known by its kind (``SUMMARY_KIND``, as
    ``assemble`` returns it) or, handed back in a format that has no kind (the
    OpenAI dicts, Anthropic system blocks or Responses items ``prepare`` returns),
    by its text (``holds_injection``): a system message whose text is one
    ``injected`` says is the engine's, alone or merged into the host's system
    prompt after a blank line. By default that is any text opening with a locale's
    header; ``Conversation`` passes the session's exact test, so a host's system
    message that merely holds the header is the host's, and stored.
    """
    for message in messages:
        if message.kind == SUMMARY_KIND or holds_injection(message, injected):
            raise MessageError(
                where,
                f"is a summary the engine injected (kind {SUMMARY_KIND!r}, or its "
                "text, alone or merged into a system prompt), which every request "
                "carries anyway; allowed: the conversation's own messages",
            )
        if message.id is not None:
            hint = (
                " (prepare() sends the history again without saving anything)"
                if where == "user"
                else ""
            )
            raise MessageError(
                where,
                f"message {message.id} is already stored; allowed: a new message"
                + hint,
            )
    return messages


def host_system(system: object) -> AnthropicSystem:
    """Return the host's system prompt with its blank text left out.

    Blank text (whitespace alone) says nothing and the Anthropic API refuses it: a
    blank prompt is no prompt (None), and Anthropic system blocks lose their blank
    text blocks (none left: None). Anything else is returned as given.

    >>> host_system("  "), host_system([{"type": "text", "text": " "},
    ...     {"type": "text", "text": "Be brief."}])
    (None, [{'type': 'text', 'text': 'Be brief.'}])
    """
    if isinstance(system, str):
        return system if system.strip() else None
    if isinstance(system, Sequence):
        kept = [block for block in system if not _blank_text_block(block)]
        return kept or None
    return system  # type: ignore[return-value]  # system_message refuses it


def _blank_text_block(block: object) -> bool:
    if not isinstance(block, Mapping) or block.get("type") != "text":
        return False
    text = block.get("text")
    return isinstance(text, str) and not text.strip()


def system_message(system: object) -> Message | None:
    """Return the host's system prompt (text or Anthropic blocks) as a message.

    None or a blank prompt (whitespace alone, ``host_system``) is no message.
    """
    system = host_system(system)
    if system is None:
        return None
    if isinstance(system, str):
        said = Message.of_text("system", system)  # NUL bytes go: "\x00" is blank
        return said if content_text(said.content).strip() else None
    if isinstance(system, Sequence):  # Anthropic's system blocks
        return messages_from_anthropic(system, [])[0]
    raise MessageError(
        "system",
        f"must be text or Anthropic system blocks, got {type(system).__name__}",
    )
