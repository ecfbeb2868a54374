"""``chat_messages``: what a chat-completions or Anthropic request holds."""

from __future__ import annotations

import pytest

from memory_summary.domain import (
    ITEM_KIND,
    Message,
    NativeRequest,
    chat_messages,
    is_provider_item,
)


def test_items_only_the_responses_api_reads_are_left_out_and_the_rest_kept():
    item = Message("system", "[reasoning]", kind=ITEM_KIND)
    host = Message("system", "[reasoning]")  # the host's own text: kept
    user = Message("user", "hi")

    assert chat_messages([host, item, user]) == [host, user]
    assert is_provider_item(item)
    assert not is_provider_item(host)


def test_native_compactions_get_no_placeholder_of_an_item():
    pytest.importorskip("anthropic")
    from memory_summary.adapters.summarizers.anthropic.native import (
        compaction_payload,
    )
    from memory_summary.adapters.summarizers.openai.native import input_items

    history = (
        Message("user", "hi"),
        Message("system", "[reasoning]", kind=ITEM_KIND),
        Message("assistant", "hello"),
    )
    request = NativeRequest(history, (), system="Be brief.")

    system, turns = compaction_payload(request, block=None)

    assert system == "Be brief."
    assert "[reasoning]" not in str(turns)
    assert [item["role"] for item in input_items(history)] == ["user", "assistant"]
