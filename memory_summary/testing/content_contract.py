"""The store contract for content: parts, None and refusals come back as saved.

``Message.from_openai`` -> ``save_message`` -> ``get_history`` -> ``to_openai`` gives
the input back (its text normalized), on every store, for every kind of part.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_summary import Message, messages_from_openai, messages_to_openai

from .strategies import normalized, openai_messages

PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "What is in this picture? 你好 👩‍👩‍👧"},
    {"type": "image_url", "image_url": {"url": "https://x/cat.png", "detail": "low"}},
    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    {"type": "file", "file": {"filename": "report.pdf", "file_data": "JVBERi0="}},
    {"type": "x-custom", "nested": {"list": [1, 2.5, None, True, "x"]}},
]
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
CUSTOM = {"id": "c2", "type": "custom", "custom": {"name": "grep", "input": "TODO"}}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": PARTS, "name": "ann"},
    {"role": "assistant", "content": None, "tool_calls": [CALL, CUSTOM]},
    {"role": "tool", "content": [{"type": "text", "text": "42"}], "tool_call_id": "c1"},
    {"role": "tool", "content": "main.py:3", "tool_call_id": "c2"},
    {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    {"role": "user", "content": []},
]


class ContentContract:
    """Content given as parts or None, refusals and the developer role round-trip."""

    def test_openai_messages_round_trip_through_the_store(
        self, store: Any, sid: str
    ) -> None:
        for message in messages_from_openai(CONVERSATION):
            store.save_message(sid, message)

        history = store.get_history(sid)

        assert messages_to_openai(history) == CONVERSATION
        assert messages_to_openai(store.get_full_history(sid)) == CONVERSATION
        assert messages_to_openai(store.get_oldest_history(sid, 100)) == CONVERSATION

    def test_saved_parts_come_back_equal_and_frozen(self, store: Any, sid: str) -> None:
        saved = store.save_message(sid, Message("user", PARTS))

        (read,) = store.get_history(sid)

        assert read == saved
        assert isinstance(read.content, tuple)
        assert read.text == saved.text
        assert read.to_openai()["content"] == PARTS

    def test_archived_messages_keep_their_parts(self, store: Any, sid: str) -> None:
        saved = [store.save_message(sid, m) for m in messages_from_openai(CONVERSATION)]
        store.trim_history(sid, 1)

        archived = store.get_archived(
            sid, after_id=None, through_id=saved[-1].id, limit=100
        )

        # the developer message is an instruction: it stays active, never archived
        assert messages_to_openai(archived) == CONVERSATION[1:-1]
        kept = [CONVERSATION[0], CONVERSATION[-1]]
        assert messages_to_openai(store.get_history(sid)) == kept

    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40
    )
    @given(batch=st.lists(openai_messages(), min_size=1, max_size=4))
    def test_generated_openai_messages_round_trip_through_the_store(
        self, store: Any, batch: list[dict[str, Any]]
    ) -> None:
        sid = f"s-{uuid4().hex[:8]}"  # one per example: the fixture's lives longer

        for message in messages_from_openai(batch):
            store.save_message(sid, message)

        assert messages_to_openai(store.get_history(sid)) == normalized(batch)
