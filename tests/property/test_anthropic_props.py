"""Anthropic's Messages format: exact round trips, thinking kept, pairing rules."""

from __future__ import annotations

import itertools
from uuid import uuid4

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_summary.domain import (
    Message,
    anthropic_pairs,
    find_safe_cut,
    messages_from_anthropic,
    messages_to_anthropic,
)
from memory_summary.testing.anthropic_strategies import anthropic_requests
from memory_summary.testing.strategies import histories, normalized


def expected(system, messages):
    return normalized(system), normalized(messages)


@given(request=anthropic_requests())
def test_a_request_read_and_written_back_is_the_request(request):
    system, messages = request

    back = messages_to_anthropic(messages_from_anthropic(system, messages))

    assert back == expected(system, messages)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=40)
@given(request=anthropic_requests())
def test_a_request_round_trips_through_every_store(store, request):
    system, messages = request
    sid = f"s-{uuid4().hex[:8]}"
    for message in messages_from_anthropic(system, messages):
        store.save_message(sid, message)

    back = messages_to_anthropic(store.get_history(sid))

    assert back == expected(system, messages)


@given(request=anthropic_requests())
def test_reading_is_stable_the_second_time(request):
    once = messages_from_anthropic(*request)

    twice = messages_from_anthropic(*messages_to_anthropic(once))

    assert twice == once


def thinking_before_tool_use(messages):
    """Return (thinking blocks, tool_use ids) of each assistant turn holding both."""
    found = []
    for turn in messages:
        content = turn["content"]
        if turn["role"] != "assistant" or isinstance(content, str):
            continue
        thinking = [b for b in content if "thinking" in b["type"]]
        ids = [b["id"] for b in content if b["type"] == "tool_use"]
        if thinking and ids:
            found.append((thinking, ids))
    return found


@given(request=anthropic_requests(max_turns=12), keep_recent=st.integers(0, 14))
def test_a_cut_never_separates_thinking_from_its_tool_use(request, keep_recent):
    messages = request[1]
    history = messages_from_anthropic(None, messages)
    cut = find_safe_cut(history, keep_recent)

    _, kept = messages_to_anthropic(anthropic_pairs(history[cut:]), alternate=True)

    kept_calls = {
        block["id"]: turn["content"]
        for turn in kept
        if turn["role"] == "assistant" and not isinstance(turn["content"], str)
        for block in turn["content"]
        if block["type"] == "tool_use"
    }
    for thinking, ids in thinking_before_tool_use(normalized(messages)):
        for call_id in ids:
            if call_id in kept_calls:  # the call was kept: its thinking with it
                assert all(block in kept_calls[call_id] for block in thinking)


def assert_anthropic_pairing(turns):
    """Check the Messages API's rules on the turns a request sends."""
    roles = [turn["role"] for turn in turns]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert not turns or turns[0]["role"] == "user"
    for index, turn in enumerate(turns):
        content = turn["content"]
        blocks = [] if isinstance(content, str) else content
        if turn["role"] == "user":
            results = [b for b in blocks if b["type"] == "tool_result"]
            assert blocks[: len(results)] == results, "results open the user turn"
            before = turns[index - 1]["content"] if index else ""
            asked = {
                b["id"]
                for b in ([] if isinstance(before, str) else before)
                if b["type"] == "tool_use"
            }
            assert {b["tool_use_id"] for b in results} <= asked, "orphan result"
        else:
            ids = {b["id"] for b in blocks if b["type"] == "tool_use" and b["id"]}
            if index + 1 < len(turns):  # the last turn is the one still executing
                after = turns[index + 1]["content"]
                answered = {
                    b["tool_use_id"]
                    for b in ([] if isinstance(after, str) else after)
                    if b["type"] == "tool_result"
                }
                assert ids <= answered, "unanswered tool_use"


@given(history=histories())
def test_assembled_histories_follow_anthropics_pairing_rules(history):
    _, turns = messages_to_anthropic(anthropic_pairs(history), alternate=True)

    assert_anthropic_pairing(turns)


@given(request=anthropic_requests(max_turns=12), keep_recent=st.integers(0, 14))
def test_any_kept_tail_follows_anthropics_pairing_rules(request, keep_recent):
    history = messages_from_anthropic(None, request[1])
    tail = history[find_safe_cut(history, keep_recent) :]

    _, turns = messages_to_anthropic(anthropic_pairs(tail), alternate=True)

    assert_anthropic_pairing(turns)


@given(history=histories())
def test_anthropic_pairing_is_idempotent_through_the_format(history):
    once = messages_to_anthropic(anthropic_pairs(history), alternate=True)

    again = messages_to_anthropic(
        anthropic_pairs(messages_from_anthropic(*once)), alternate=True
    )

    assert again == once


@given(history=histories())
def test_pairing_without_repair_changes_nothing(history):
    assert anthropic_pairs(history, repair=False) == list(history)


def test_several_results_in_one_user_turn_become_tool_messages_in_order():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "tool_use", "id": "b", "name": "g", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "b", "content": "2"},
                {"type": "tool_result", "tool_use_id": "a", "content": "1"},
            ],
        },
    ]

    history = messages_from_anthropic(None, messages)

    assert [(m.role, m.tool_call_id, m.text) for m in history[2:]] == [
        ("tool", "b", "2"),
        ("tool", "a", "1"),
    ]
    assert [c.arguments for c in history[1].tool_calls] == ["{}", '{"x": 1}']
    assert messages_to_anthropic(history) == (None, messages)


def test_instruction_messages_become_the_system_value():
    history = [
        Message("system", "Be brief."),
        Message("developer", "Answer in French."),
        Message("user", "hi"),
    ]

    system, turns = messages_to_anthropic(history)

    assert system == "Be brief.\n\nAnswer in French."
    assert turns == [{"role": "user", "content": "hi"}]
