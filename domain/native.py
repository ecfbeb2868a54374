"""A provider's own summary, kept with a summary record: its native artifact.

Anthropic's on-demand compaction answers with one ``compaction`` block: readable
``content`` (the record's text, checked, pinned and budgeted as any summary) and
fields only the provider reads (``signature``, ``encrypted_content``,
``tool_changes``, any it adds later), which go back unchanged. ``NativeArtifact``
keeps the whole block, with the provider and model that wrote it; the record stores
it under ``"native"``, as part of its JSON, in every store. What the record's text
adds to the block (its pinned facts section) is kept beside it, as ``beside``: a
request that carries the block carries that text too (in ``system``).

OpenAI's ``/responses/compact`` answers with a ``compaction`` item whose
``encrypted_content`` nobody but OpenAI reads (``native_item``): the record's text
comes from a text summarizer beside it, and the item is kept the same way, with
provider ``"openai"``; a Responses API request carries it in place of the text.

The artifact is a cache and the record's text the source of truth: ``read_native``
never raises, and a stored value that is not a usable block (missing, not JSON, no
readable ``content``: a failed compaction) reads as None, so the record stays
readable and requests carry the text.

``strip_leading_blocks`` takes compaction blocks off the start of a host's request:
a request built earlier (``assemble_anthropic``) had the library's block first, and
the next one puts the current block (or the text) in their place; ``host_system``
takes a merged summary off a host's ``system``, so a compaction never sends a stale
one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import attrs

from .anthropic_format import AnthropicSystem, messages_from_anthropic
from .anthropic_pairing import CONTINUED
from .anthropic_turns import messages_to_anthropic
from .injection import assemble_messages
from .model import Message
from .text import normalize_text

ANTHROPIC_PROVIDER = "anthropic"
OPENAI_PROVIDER = "openai"
PROVIDERS = (ANTHROPIC_PROVIDER, OPENAI_PROVIDER)
COMPACTION_TYPE = "compaction"


@attrs.frozen
class NativeArtifact:
    """A provider's compaction block (OpenAI: item), verbatim, and who wrote it.

    Attributes:
        provider: the provider that wrote it (``"anthropic"``, ``"openai"``).
        model: the model that wrote it, None when unknown.
        block: the block as the provider returned it (plain JSON; extra fields kept).
        beside: what the record's text adds to the block (its pinned facts), sent
            beside it; None when not recorded (an artifact stored before it was).
        lead: items the provider returned to go before the block (OpenAI's compact:
            the user messages of what it summarized), sent with it; () for none.
    """

    provider: str
    model: str | None
    block: Mapping[str, object] = attrs.field(hash=False)
    beside: str | None = None
    lead: tuple[Mapping[str, object], ...] = attrs.field(default=(), hash=False)

    @property
    def items(self) -> list[dict[str, object]]:
        """The lead and the block, in the order a request carries them (copies).

        >>> NativeArtifact("openai", None, {"type": "compaction"}).items
        [{'type': 'compaction'}]
        """
        return [*(dict(item) for item in self.lead), dict(self.block)]

    def serves(self, provider: str, model: str | None) -> bool:
        """Tell whether a request to ``provider``'s ``model`` may carry the block.

        Only the provider that wrote a block reads it; a model named on both sides
        must be the same one (an unnamed side cannot tell, and gets the block).

        >>> NativeArtifact("anthropic", "m1", {}).serves("anthropic", "m2")
        False
        """
        return provider == self.provider and (
            model is None or self.model is None or model == self.model
        )

    def to_mapping(self) -> dict[str, object]:
        """Return the artifact as JSON-compatible metadata."""
        mapping: dict[str, object] = {
            "provider": self.provider,
            "model": self.model,
            "block": self.block,
        }
        if self.beside is not None:
            mapping["beside"] = self.beside
        if self.lead:
            mapping["lead"] = [dict(item) for item in self.lead]
        return mapping


def native_block(data: object) -> dict[str, object] | None:
    """Return ``data`` as a plain JSON compaction block, or None if it is no usable one.

    Usable: a mapping with text keys, ``type`` ``"compaction"`` and non-empty text
    ``content`` (null content is a failed compaction), every value JSON that every
    store keeps (no lone surrogate).

    >>> native_block({"type": "compaction", "content": "Likes tea.", "x": [1]})
    {'type': 'compaction', 'content': 'Likes tea.', 'x': [1]}
    >>> native_block({"type": "compaction", "content": None}) is None
    True
    """
    return _compaction(data, "content")


def native_item(data: object) -> dict[str, object] | None:
    """Return ``data`` as a plain JSON OpenAI compaction item, or None if it is none.

    Usable: a mapping with text keys, ``type`` ``"compaction"`` and non-empty text
    ``encrypted_content``, every value JSON that every store keeps.

    >>> native_item({"type": "compaction", "id": "cmp_1", "encrypted_content": "x"})
    {'type': 'compaction', 'id': 'cmp_1', 'encrypted_content': 'x'}
    >>> native_item({"type": "compaction", "encrypted_content": ""}) is None
    True
    """
    return _compaction(data, "encrypted_content")


def _compaction(data: object, text_key: str) -> dict[str, object] | None:
    """Return ``data`` as plain JSON if it is a compaction with text ``text_key``.

    A mapping with text keys, ``type`` ``"compaction"``, non-empty text under
    ``text_key``, every value JSON that every store keeps; else None.
    """
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        return None
    content = data.get(text_key)
    if data.get("type") != COMPACTION_TYPE or not isinstance(content, str):
        return None
    if not content.strip():
        return None
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate: no store keeps it
        copied: object = json.loads(text)
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return None
    return copied if isinstance(copied, dict) else None


def read_native(data: object) -> NativeArtifact | None:
    """Return the artifact stored as ``data``; None for anything else, never raise.

    >>> read_native({"provider": "anthropic", "model": None, "block": "x"}) is None
    True
    """
    try:
        return _read_native(data)
    except RecursionError:  # a block nested deeper than JSON encoding goes
        return None


def _read_native(data: object) -> NativeArtifact | None:
    if not isinstance(data, Mapping):
        return None
    provider, model = data.get("provider"), data.get("model")
    usable = native_item if provider == OPENAI_PROVIDER else native_block
    block = usable(data.get("block"))
    if provider not in PROVIDERS or block is None:
        return None
    if model is not None and not isinstance(model, str):
        return None
    beside = data.get("beside")
    lead = _lead_items(data.get("lead", ()))
    if lead is None or (lead and provider != OPENAI_PROVIDER):
        return None  # a lead that is not ours: the block alone would mislead
    return NativeArtifact(
        str(provider),
        # normalized as the record's texts: a lone surrogate no store could write back
        None if model is None else normalize_text(model),
        block,
        normalize_text(beside) if isinstance(beside, str) else None,
        lead,
    )


def _lead_items(data: object) -> tuple[dict[str, object], ...] | None:
    """Return the stored lead as plain JSON message items; None if it is none."""
    if not isinstance(data, (list, tuple)):
        return None
    items = [lead_item(item) for item in data]
    if any(item is None for item in items):
        return None
    return tuple(item for item in items if item is not None)


def lead_item(data: object) -> dict[str, object] | None:
    """Return ``data`` as a plain JSON user message item to lead a block; else None.

    Usable: a mapping of ``type`` ``"message"`` and ``role`` ``"user"`` whose
    ``content`` is text or a list of parts (mappings), every value JSON that every
    store keeps (no lone surrogate). Anything else would make each request carrying
    it fail, or the commit keeping it.

    >>> lead_item({"type": "message", "role": "user", "content": "hi"})
    {'type': 'message', 'role': 'user', 'content': 'hi'}
    >>> lead_item({"type": "message", "role": "user", "content": 5}) is None
    True
    """
    if not isinstance(data, Mapping) or data.get("type") != "message":
        return None
    content = data.get("content")
    if data.get("role") != "user" or not (
        isinstance(content, str)
        or (
            isinstance(content, list)
            and all(isinstance(part, Mapping) for part in content)
        )
    ):
        return None
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # no lone surrogate: every store keeps it
        copied: object = json.loads(text)
    except (TypeError, ValueError):
        return None
    return copied if isinstance(copied, dict) else None


@attrs.frozen
class NativeRequest:
    """What a native summarizer folds: the range itself, not a rendered prompt.

    Attributes:
        history: the messages to fold, as stored (tool calls and blocks included).
        prompt: the rendered text request, for the text path when the native one
            fails (``Summarizer.complete`` takes it).
        previous: the record's artifact, sent first in place of what it summarizes.
        previous_text: the record's text when no artifact is sent ("": none).
        system: the host's system prompt for the session, when known.
        tools: the host's tool definitions for the session, when known.
    """

    history: tuple[Message, ...]
    prompt: tuple[Message, ...]
    previous: NativeArtifact | None = None
    previous_text: str = ""
    system: AnthropicSystem = attrs.field(default=None, hash=False)
    tools: tuple[Mapping[str, object], ...] = attrs.field(default=(), hash=False)


def with_block_first(
    block: Mapping[str, object], turns: Sequence[dict[str, object]]
) -> list[dict[str, object]]:
    """Return Anthropic ``turns`` with ``block`` first, in place of what it summarizes.

    The block opens an assistant turn: the first turn's content when that one is
    the assistant's (after dropping the placeholder user turn the pairing rules put
    before it), else a turn of its own.

    >>> with_block_first({"type": "compaction", "content": "s"},
    ...     [{"role": "user", "content": "hi"}])[0]["content"][0]["type"]
    'compaction'
    """
    rest = list(turns)  # the turns are shared (a transcript's): copy what changes
    if rest and rest[0].get("role") == "user" and rest[0].get("content") == CONTINUED:
        rest = rest[1:]
    if rest and rest[0].get("role") == "assistant":
        content = rest[0].get("content")
        blocks = (
            [{"type": "text", "text": content}]
            if isinstance(content, str) and content
            else list(content)
            if isinstance(content, list)
            else []
        )
        return [{**rest[0], "content": [dict(block), *blocks]}, *rest[1:]]
    return [{"role": "assistant", "content": [dict(block)]}, *rest]


def strip_leading_blocks(
    turns: Sequence[Mapping[str, object] | object],
) -> list[Mapping[str, object] | object]:
    """Return ``turns`` without the compaction blocks that open the first turn.

    The library puts its block first (``with_block_first``); a host that sends back
    a request built earlier sends that block (or one the record no longer has)
    again. Every ``compaction`` block at the start of the first turn's content is
    taken as the library's own and removed (the turn too, when nothing else is
    left); blocks anywhere else are the host's and kept.

    >>> strip_leading_blocks([{"role": "assistant", "content": [
    ...     {"type": "compaction", "content": "s"}, {"type": "text", "text": "ok"}]}])
    [{'role': 'assistant', 'content': [{'type': 'text', 'text': 'ok'}]}]
    """
    if not turns or not isinstance(turns[0], Mapping):
        return list(turns)
    first = turns[0]
    content = first.get("content")
    if not isinstance(content, list):
        return list(turns)
    skip = 0
    while (
        skip < len(content)
        and isinstance(content[skip], Mapping)
        and content[skip].get("type") == COMPACTION_TYPE
    ):
        skip += 1
    if not skip:
        return list(turns)
    rest = content[skip:]
    if not rest:
        return list(turns[1:])
    return [{**first, "content": rest}, *turns[1:]]


def host_system(system: AnthropicSystem) -> AnthropicSystem:
    r"""Return the host's ``system`` without a summary merged into it earlier.

    A host that sends back what ``assemble_anthropic`` gave it sends the summary of
    that time too; a compaction sends the system without it (the record's own
    summary goes as the block, or merged anew).

    >>> host_system("Be brief.\n\nSummary of the earlier conversation (older "
    ...     "messages were archived):\nold")
    'Be brief.'
    """
    if system is None:
        return None
    head = messages_from_anthropic(system, [])
    if not head:
        return system
    kept = assemble_messages(head, None, "merge")  # a merged or a whole summary
    if kept == head:
        return system
    return messages_to_anthropic(kept)[0]
