"""``clear_old_thinking`` over any Anthropic request: what it drops, what it keeps."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import THINKING_TYPES, clear_old_thinking

ids = st.sampled_from(["toolu_1", "toolu_2", "toolu_3"])
thinking_blocks = st.one_of(
    st.builds(
        lambda text: {"type": "thinking", "thinking": text, "signature": "c2ln"},
        st.sampled_from(["Hm.", "Look it up.", ""]),
    ),
    st.just({"type": "redacted_thinking", "data": "ZW5j"}),
)
assistant_blocks = st.one_of(
    thinking_blocks,
    st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["Rain.", "Ok"])),
    st.builds(
        lambda i: {"type": "tool_use", "id": i, "name": "find", "input": {}}, ids
    ),
)
user_blocks = st.one_of(
    st.builds(lambda i: {"type": "tool_result", "tool_use_id": i, "content": "x"}, ids),
    st.just({"type": "text", "text": "and?"}),
)
assistants = st.builds(
    lambda content: {"role": "assistant", "content": content},
    st.sampled_from(["Sure."]) | st.lists(assistant_blocks, max_size=4),
)
users = st.builds(
    lambda content: {"role": "user", "content": content},
    st.sampled_from(["Where?"]) | st.lists(user_blocks, min_size=1, max_size=3),
)
requests = st.lists(st.one_of(assistants, users), max_size=12)
keeps = st.none() | st.integers(0, 4)


def blocks(message):
    content = message["content"]
    return [] if isinstance(content, str) else content


def has_thinking(message):
    return any(b["type"] in THINKING_TYPES for b in blocks(message))


def protected(request):
    """The assistant turns Anthropic needs whole, found the plain way."""
    found = set()
    plain_user = max(
        (
            i
            for i, m in enumerate(request)
            if m["role"] == "user"
            and not any(b["type"] == "tool_result" for b in blocks(m))
        ),
        default=-1,
    )
    found |= {
        i for i, m in enumerate(request) if i > plain_user and m["role"] == "assistant"
    }
    answered = {
        b["tool_use_id"]
        for m in request
        if m["role"] == "user"
        for b in blocks(m)
        if b["type"] == "tool_result"
    }
    uses = [
        i
        for i, m in enumerate(request)
        if m["role"] == "assistant"
        and any(b["type"] == "tool_use" and b["id"] in answered for b in blocks(m))
    ]
    return found | set(uses[-1:])


def latest(request, keep):
    turns = [i for i, m in enumerate(request) if m["role"] == "assistant"]
    return set(turns[-keep:]) if keep else set()


@given(request=requests, keep=keeps)
def test_every_other_block_stays_in_order_and_no_turn_is_emptied(request, keep):
    given_copy = copy.deepcopy(request)

    cleared = clear_old_thinking(request, keep)

    assert request == given_copy  # the input is not changed
    assert [m["role"] for m in cleared] == [m["role"] for m in request]
    for before, now in zip(request, cleared, strict=True):
        if isinstance(before["content"], str):
            assert now == before
            continue
        assert [b for b in now["content"] if b["type"] not in THINKING_TYPES] == [
            b for b in before["content"] if b["type"] not in THINKING_TYPES
        ]
        assert bool(now["content"]) == bool(before["content"])
        assert {k: v for k, v in now.items() if k != "content"} == {
            k: v for k, v in before.items() if k != "content"
        }


@given(request=requests, keep=keeps)
def test_the_latest_turns_and_the_open_tool_loop_keep_their_thinking(request, keep):
    cleared = clear_old_thinking(request, keep)

    whole = protected(request) | latest(request, keep)
    for index in whole:
        assert cleared[index] == request[index]
    for index, (before, now) in enumerate(zip(request, cleared, strict=True)):
        if keep is None or before["role"] != "assistant" or index in whole:
            assert now == before
        elif any(b["type"] not in THINKING_TYPES for b in blocks(before)):
            assert not has_thinking(now)  # older turns lose it, unless only thinking
        else:
            assert now == before


@given(request=requests, keep=keeps)
def test_clearing_is_idempotent(request, keep):
    once = clear_old_thinking(request, keep)

    assert clear_old_thinking(once, keep) == once


@given(request=requests, keep=st.integers(0, 4))
def test_keeping_more_turns_never_keeps_less_thinking(request, keep):
    fewer = clear_old_thinking(request, keep)
    more = clear_old_thinking(request, keep + 1)

    for a, b in zip(fewer, more, strict=True):
        assert has_thinking(a) <= has_thinking(b)
