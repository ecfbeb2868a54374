"""What the recall tools show: within the cap, and always the message asked for."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters import TiktokenCounter
from memory_summary.domain import Message, ToolCall
from memory_summary.domain.recall import HistoryEntry, SearchHit
from memory_summary.domain.recall_tools import (
    MIN_ENTRY_TOKENS,
    read_result_text,
    search_result_text,
)
from memory_summary.testing.strategies import texts

O200K = TiktokenCounter("o200k_base").count
CL100K = TiktokenCounter("cl100k_base").count
COUNTERS = {"o200k": O200K, "cl100k": CL100K, "chars": len}
HEAD = re.compile(r"^\[id (\d+), ", re.MULTILINE)
NOTE = re.compile(r"^\[(\d+) (earlier|more) cut to fit\]$", re.MULTILINE)

bodies = st.one_of(
    texts(400),
    st.tuples(
        st.sampled_from(["ok ", "漢", "👍", "ab12", " "]), st.integers(1, 9000)
    ).map(lambda pair: pair[0] * pair[1]),
)


@st.composite
def stored(draw: st.DrawFn, max_size: int) -> list[Message]:
    """Stored messages with ids, tool calls answered by results among them."""
    first = draw(st.integers(1, 2**40))
    messages = []
    for index, body in enumerate(draw(st.lists(bodies, min_size=1, max_size=max_size))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "tool"]))
        at = first + index
        if kind == "call":
            call = ToolCall(f"c{index}", "read_logs", body)
            message = Message("assistant", None, tool_calls=[call], id=at)
        elif kind == "tool":
            message = Message("tool", body, tool_call_id=f"c{index - 1}", id=at)
        else:
            message = Message(kind, body, id=at)
        messages.append(message)
    return messages


def shown_ids(text: str) -> list[int]:
    return [int(found) for found in HEAD.findall(text)]


def left_out(text: str) -> int:
    return sum(int(count) for count, _ in NOTE.findall(text))


@given(
    messages=stored(41),
    pick=st.integers(0, 40),
    cap=st.integers(100, 2500),
    encoding=st.sampled_from(sorted(COUNTERS)),
)
def test_a_read_fits_the_cap_and_holds_the_asked_message(messages, pick, cap, encoding):
    count = COUNTERS[encoding]
    entries = [HistoryEntry(m, archived=False, summary_version=None) for m in messages]
    around = messages[pick % len(messages)].id

    text = read_result_text(
        entries, cap_tokens=cap, count_tokens=count, around_id=around
    )

    assert count(text) <= cap
    shown = shown_ids(text)
    assert around in shown
    assert shown == sorted(shown)
    assert len(shown) + left_out(text) == len(messages)


@given(
    messages=stored(20),
    query=texts(80),
    cap=st.integers(100, 2500),
    encoding=st.sampled_from(sorted(COUNTERS)),
)
def test_a_search_fits_the_cap_and_holds_the_best_hit(messages, query, cap, encoding):
    count = COUNTERS[encoding]
    hits = [SearchHit(m, 1.0, archived=True, summary_version=3) for m in messages]

    text = search_result_text(query, hits, cap_tokens=cap, count_tokens=count)

    assert count(text) <= cap
    shown = shown_ids(text)
    assert shown == [m.id for m in messages[: len(shown)]]  # best first, none skipped
    assert shown[:1] == [messages[0].id]
    assert len(shown) + left_out(text) == len(messages)


@given(messages=stored(20), cap=st.integers(1500, 4000))
def test_every_hit_is_shown_when_each_can_have_its_minimum(messages, cap):
    hits = [SearchHit(m, 1.0, archived=False, summary_version=None) for m in messages]
    limit = (cap - 200) // MIN_ENTRY_TOKENS  # 200: more than the title needs

    text = search_result_text("q", hits[:limit], cap_tokens=cap, count_tokens=O200K)

    assert shown_ids(text) == [m.id for m in messages[:limit]]
