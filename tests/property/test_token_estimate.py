"""``estimate_tokens`` never counts fewer tokens than the exact encodings on real text.

The text is what chats hold: the demo's English and Chinese conversations with their
tool calls and long tool results, cut at spaces, joined, and as JSON (escaped and
not). Random character soup (base64, hashes) is no language and is not covered:
``estimate_tokens`` documents it.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_summary.adapters import TiktokenCounter
from memory_summary.adapters.tokens import ENCODINGS, estimate_tokens
from memory_summary.conversations import session_turns


@cache
def chat_texts() -> tuple[str, ...]:
    texts: list[str] = []
    for session in range(6):
        for turn in session_turns(session, 12, seed=7):
            for message in turn.messages:
                texts.append(message.text)
                texts.extend(call.arguments for call in message.tool_calls)
    return tuple(text for text in texts if text)


@st.composite
def chat_text(draw: st.DrawFn) -> str:
    """Real chat text: runs of stored messages' words, joined, sometimes as JSON."""
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        words = draw(st.sampled_from(chat_texts())).split(" ")
        start = draw(st.integers(0, len(words)))
        end = draw(st.integers(start, len(words)))
        pieces.append(" ".join(words[start:end]))
    joined = draw(st.sampled_from(["", " ", "\n", "\n\n"])).join(pieces)
    form = draw(st.sampled_from(["plain", "json", "json_escaped"]))
    if form == "plain":
        return joined
    return json.dumps({"text": joined}, ensure_ascii=form == "json_escaped")


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(text=chat_text())
def test_the_estimate_is_never_below_the_exact_count(encoding: str, text: str) -> None:
    assert estimate_tokens(text) >= TiktokenCounter(encoding).count(text)


def test_the_estimate_of_nothing_is_nothing() -> None:
    assert estimate_tokens("") == 0


def _estimate_by_a_scan_per_class(text: str) -> int:
    """``estimate_tokens`` as first written: every class counted in the whole text."""
    import math

    from memory_summary.adapters import tokens

    if not text:
        return 0
    classes = text.encode("utf-8", "surrogatepass").translate(
        tokens._BYTE_CLASSES, tokens._CONTINUATION
    )
    total = sum(
        weight * classes.count(code) for code, weight in tokens.ESTIMATE_WEIGHTS.items()
    )
    total += tokens.ESCAPE_TOKENS * text.count("\\u")
    return math.ceil(total) + 2


@given(text=chat_text() | st.text())
def test_the_estimate_equals_a_scan_per_class(text: str) -> None:
    assert estimate_tokens(text) == _estimate_by_a_scan_per_class(text)
