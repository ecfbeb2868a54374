from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import (
    EVENT_MARKER,
    MODEL_RESPONSE,
    Message,
    ToolCall,
    find_safe_cut,
    find_token_cut,
    foldable_history,
    is_host_instruction,
    split_window,
)
from memory_summary.domain.window import group_starts, pending_group_start
from memory_summary.testing.strategies import histories


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_kept_tail_never_starts_with_a_tool_result(history, keep_recent):
    cut = find_safe_cut(history, keep_recent)

    assert cut == 0 or history[cut].role != "tool"


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_no_kept_tool_result_has_its_call_archived(history, keep_recent):
    cut = find_safe_cut(history, keep_recent)
    archived_calls = {c.id for m in history[:cut] for c in m.tool_calls}

    assert not any(
        m.tool_call_id in archived_calls for m in history[cut:] if m.role == "tool"
    )


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_no_tool_call_message_is_separated_from_its_results(history, keep_recent):
    cut = find_safe_cut(history, keep_recent)
    starts = group_starts(history)

    for index, start in enumerate(starts):
        assert (index < cut) == (start < cut)


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_partition_covers_the_window_exactly_once(history, keep_recent):
    split = split_window(history, keep_recent)

    assert list(split.fold) + list(split.keep) == foldable_history(history)
    assert sorted(m.id for m in (*split.fold, *split.stays)) == [m.id for m in history]


@given(
    history=histories(),
    keep_recent=st.integers(0, 80),
    keep_tokens=st.none() | st.integers(0, 2_000),
)
def test_no_plan_ever_folds_a_host_instruction(history, keep_recent, keep_tokens):
    """Instructions are context: whatever the keep, the fold never holds one."""
    instructions = [m for m in history if is_host_instruction(m)]
    split = split_window(
        history,
        None if keep_tokens is not None and keep_recent % 2 else keep_recent,
        keep_tokens=keep_tokens,
        cost=lambda m: len(m.text),
    )

    assert not any(is_host_instruction(m) for m in split.fold)
    assert list(split.instructions) == instructions
    assert split.stays[: len(instructions)] == tuple(instructions)


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_kept_count_never_drops_below_the_floor(history, keep_recent):
    cut = find_safe_cut(history, keep_recent)

    assert len(history) - cut >= min(max(keep_recent, 1), len(history))


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_cut_is_as_late_as_the_rules_allow(history, keep_recent):
    """Any later cut keeping at least the floor would break a rule.

    The rules: no group straddles the cut, the tail starts with no tool result, and
    an open call at the end is kept (``pending_group_start``).
    """
    cut = find_safe_cut(history, keep_recent)
    starts = group_starts(history)
    floor = len(history) - max(keep_recent, 1)
    pending = pending_group_start(history)

    for later in range(cut + 1, max(floor, 0) + 1):
        splits_group = any((i < later) != (s < later) for i, s in enumerate(starts))
        assert splits_group or history[later].role == "tool" or later > pending


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_messages_of_one_model_response_are_folded_or_kept_together(
    history, keep_recent
):
    cut = find_safe_cut(history, keep_recent)
    sides: dict[str, set[bool]] = {}

    for index, message in enumerate(history):
        response = message.metadata.get(MODEL_RESPONSE)
        if response is not None:
            sides.setdefault(response, set()).add(index < cut)

    assert all(len(side) == 1 for side in sides.values())


@given(
    history=histories(),
    keep_tokens=st.integers(0, 400),
)
def test_a_token_cut_keeps_a_model_response_whole_too(history, keep_tokens):
    cut = find_token_cut(history, keep_tokens, lambda m: len(m.text) + 1)
    sides: dict[str, set[bool]] = {}

    for index, message in enumerate(history):
        response = message.metadata.get(MODEL_RESPONSE)
        if response is not None:
            sides.setdefault(response, set()).add(index < cut)

    assert all(len(side) == 1 for side in sides.values())


@st.composite
def open_call_endings(draw):
    """A history ending with a tool call whose results are not all saved yet.

    Some of the call's results may be saved already; event markers and host
    instructions may sit among them (a compression's separator, a system prompt).
    Returns the history, the call's index and the results still to come.
    """
    history = list(draw(histories()))
    calls = [
        ToolCall(f"open{n}", "compact_context", "{}")
        for n in range(draw(st.integers(1, 3)))
    ]
    at = len(history)
    history.append(Message("assistant", "", tool_calls=calls))
    saved = draw(st.lists(st.sampled_from(calls), unique=True, max_size=len(calls) - 1))
    noise = st.lists(
        st.sampled_from(
            [
                Message("system", "--- compressed ---", kind=EVENT_MARKER),
                Message("system", "Be brief."),
            ]
        ),
        max_size=2,
    )
    history.extend(draw(noise))
    for call in saved:
        history.append(Message("tool", "done", tool_call_id=call.id))
        history.extend(draw(noise))
    to_come = [
        Message("tool", "done", tool_call_id=c.id) for c in calls if c not in saved
    ]
    return history, at, to_come


def _no_result_without_its_call(kept):
    """Tell whether every kept result of the open call has the call kept with it."""
    calls = {c.id for m in kept for c in m.tool_calls}
    results = [
        m for m in kept if m.role == "tool" and m.tool_call_id.startswith("open")
    ]
    return bool(results) and all(m.tool_call_id in calls for m in results)


@given(ending=open_call_endings(), keep_recent=st.integers(0, 80))
def test_an_open_call_at_the_end_is_never_folded(ending, keep_recent):
    """The fold a call causes (compact_context) never separates it from its result."""
    history, at, to_come = ending

    cut = find_safe_cut(history, keep_recent)

    assert pending_group_start(history) <= at
    assert cut <= at
    kept = [*history[cut:], *to_come]  # the results the host saves after the fold
    assert _no_result_without_its_call(kept)


@given(
    ending=open_call_endings(),
    keep_recent=st.none() | st.integers(0, 80),
    keep_tokens=st.none() | st.integers(0, 2_000),
)
def test_no_split_keeps_an_open_call_apart_from_its_results(
    ending, keep_recent, keep_tokens
):
    history, at, to_come = ending

    split = split_window(
        history,
        keep_recent,
        keep_tokens=keep_tokens,
        cost=lambda message: len(message.text) + 1,
    )

    assert history[at] in split.keep
    assert not any(
        m.role == "tool" and m.tool_call_id.startswith("open") for m in split.fold
    )
    assert _no_result_without_its_call([*split.keep, *to_come])


@given(history=histories(), keep_recent=st.integers(0, 80))
def test_an_answered_or_abandoned_call_does_not_hold_the_cut(history, keep_recent):
    """Only a call still waiting at the end holds the cut: a turn after it frees it."""
    call = Message("assistant", "", tool_calls=[ToolCall("late", "f", "{}")])
    ended = [*history, call, Message("user", "never mind")]

    assert pending_group_start(ended) == len(ended)
    assert find_safe_cut(ended, 1) == len(ended) - 1
