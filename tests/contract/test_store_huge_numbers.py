"""Numbers JSON text cannot hold (over Python's 4,300-digit limit): refused alike."""

from __future__ import annotations

import pytest

from memory_summary import Message, MessageError, StoreError
from memory_summary.domain.content import content_parts

HUGE = 10**5000  # more digits than int-to-text conversion allows


def test_a_part_holding_a_huge_int_is_refused_when_the_message_is_built():
    with pytest.raises(MessageError, match=r"content\[0\]\.n"):
        Message("user", [{"type": "data", "n": HUGE}])


def test_a_nested_huge_int_is_refused_too():
    with pytest.raises(MessageError, match="digits"):
        content_parts([{"type": "data", "rows": [{"n": -HUGE}]}])


def test_every_store_refuses_a_trusted_message_holding_one_with_a_store_error(store):
    part = {**content_parts([{"type": "data", "n": 1}])[0], "n": HUGE}
    # from_row trusts its input: a message that skipped validation reaches the store
    message = Message.from_row("user", (part,), (), None, None, None, None, {}, 1)

    with pytest.raises(StoreError, match="not JSON-compatible"):
        store.save_message("s1", message)
    assert store.get_full_history("s1") == []


def test_every_store_refuses_huge_int_metadata_with_a_store_error(store):
    with pytest.raises(StoreError, match="not JSON-compatible"):
        store.save_message("s1", Message("user", "hi", metadata={"n": HUGE}))
    assert store.get_full_history("s1") == []
