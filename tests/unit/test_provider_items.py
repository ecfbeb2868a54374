"""``chat_messages``: what a chat-completions or Anthropic request holds."""

from __future__ import annotations

from memory_summary.domain import ITEM_KIND, Message, chat_messages, is_provider_item


def test_items_only_the_responses_api_reads_are_left_out_and_the_rest_kept():
    item = Message("system", "[reasoning]", kind=ITEM_KIND)
    host = Message("system", "[reasoning]")  # the host's own text: kept
    user = Message("user", "hi")

    assert chat_messages([host, item, user]) == [host, user]
    assert is_provider_item(item)
    assert not is_provider_item(host)
