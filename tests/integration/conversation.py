"""Conversations of the engine tests: fill a store, read a request's transcript."""

from __future__ import annotations

from memory_summary import Message
from memory_summary.adapters import InMemoryStore


def fill(
    store: InMemoryStore, session_id: str, count: int, start: int = 0
) -> list[Message]:
    """Save ``count`` alternating user/assistant messages; return them as stored."""
    return [
        store.save_message(
            session_id,
            Message(
                "user" if i % 2 == 0 else "assistant", f"message {i} of {session_id}."
            ),
        )
        for i in range(start, start + count)
    ]


def transcript_of(request) -> str:
    """Return the conversation section a summarizer request carried."""
    user = request[-1].content
    return user.split("<conversation>\n", 1)[1].split("\n</conversation>", 1)[0]
