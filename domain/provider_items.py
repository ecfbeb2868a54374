"""Stored items that mean something to one provider's API only.

A Responses API item that is neither a message nor a tool call or output
(``reasoning``, ``web_search_call``, ``file_search_call``, ``image_generation_call``,
``mcp_call``, ...) is stored as a ``system`` message of kind ``ITEM_KIND``, its text
a placeholder (``"[reasoning]"``) and the item itself kept verbatim in its metadata.
The Responses request sends it back as it is; a chat-completions or Anthropic request
leaves it out (``chat_messages``): those APIs have no such item, and its placeholder
would be a system message in mid-history, or text appended to the Anthropic system
prompt every turn (its prompt cache lost). The message stays stored either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Message

__all__ = ["ITEM_KIND", "chat_messages", "is_provider_item"]

ITEM_KIND = "openai-agents-item"
"""``Message.kind`` of a Responses item neither a message nor a tool call/output."""


def is_provider_item(message: Message) -> bool:
    """Tell whether ``message`` stores an item only the Responses API reads."""
    return message.kind == ITEM_KIND


def chat_messages(messages: Iterable[Message]) -> list[Message]:
    """Return ``messages`` without the items only the Responses API reads.

    What a chat-completions or Anthropic request holds; a tool call and its result
    are messages of their own roles and stay, so their pairing is what it was.
    """
    return [message for message in messages if message.kind != ITEM_KIND]
