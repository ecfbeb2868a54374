"""An assistant's audio or legacy function_call reply (content None) in every store."""

from __future__ import annotations

from openai.types.chat import ChatCompletionMessage

from memory_summary import Message


def test_an_audio_reply_without_content_is_stored_and_read_back(store):
    reply = ChatCompletionMessage(
        role="assistant",
        content=None,
        audio={"id": "au_1", "data": "UklGRg==", "expires_at": 9, "transcript": "Hi"},
    )
    saved = store.save_message("s1", Message.from_openai(reply))

    (read,) = store.get_history("s1")

    assert read == saved
    assert read.content is None
    assert read.to_openai()["audio"] == reply.model_dump()["audio"]
