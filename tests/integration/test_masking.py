"""Masking old tool results through the public API, on every store."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings

from memory_summary import (
    CompressRequested,
    Message,
    SummaryConfig,
    SummaryEngine,
    ToolCall,
    messages_to_openai,
)
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import MASKED_KIND, message_tokens, repair_pairs
from memory_summary.testing.anthropic_strategies import anthropic_requests
from memory_summary.testing.fakes import InstrumentedSummarizer
from memory_summary.testing.strategies import histories

LONG = " ".join(f"row{i} status=ok latency={i % 97}ms" for i in range(400))


def tool_turns(store, session_id: str, turns: int) -> None:
    """Save ``turns`` user turns, each with one tool call and a long result."""
    for turn in range(turns):
        store.save_message(session_id, Message("user", f"Check shard {turn}."))
        call = ToolCall(f"call-{turn}", "query_db", f'{{"shard": {turn}}}')
        store.save_message(session_id, Message("assistant", None, tool_calls=[call]))
        store.save_message(
            session_id, Message("tool", LONG, tool_call_id=f"call-{turn}")
        )
        store.save_message(session_id, Message("assistant", f"Shard {turn} is fine."))


def test_assemble_masks_old_results_and_leaves_the_store_alone(store):
    config = SummaryConfig(mask_tool_results_after=2)
    tool_turns(store, "s", 4)
    stored = store.get_full_history("s")
    with SummaryEngine(store, config=config) as engine:
        request = engine.assemble(store.get_history("s"), "s")
        again = engine.assemble(request, "s")
        as_dicts = engine.assemble_openai(messages_to_openai(request), "s")

    results = [m for m in request if m.role == "tool"]
    assert [m.kind == MASKED_KIND for m in results] == [True, True, False, False]
    first = results[0]
    assert first.text == (
        f"[tool result masked: query_db, {len(LONG)} chars; "
        f"read_history(around_id={first.id}) shows it]"
    )
    assert again == request
    assert [d.get("content") for d in as_dicts] == [
        m.to_openai().get("content") for m in request
    ]
    assert store.get_full_history("s") == stored


def test_masking_is_off_by_default(store):
    tool_turns(store, "s", 4)
    with SummaryEngine(store) as engine:
        request = engine.assemble(store.get_history("s"), "s")

    assert [m.text for m in request] == [m.text for m in store.get_history("s")]


def test_zh_stub(store):
    config = SummaryConfig(mask_tool_results_after=1, locale="zh")
    tool_turns(store, "s", 2)
    with SummaryEngine(store, config=config) as engine:
        request = engine.assemble(store.get_history("s"), "s")

    assert request[2].text.startswith("[工具结果已隐藏：query_db，")


@pytest.mark.parametrize(("mask", "compresses"), [(None, True), (1, False)])
def test_the_usage_trigger_sees_the_masked_size(store, mask, compresses):
    # Eight long results hold about 30k tokens: over a 20k window's trigger
    # unmasked; masked, the session holds a few thousand and stays below it.
    config = SummaryConfig(
        threshold=500,
        keep_recent=50,
        context_window=20_000,
        mask_tool_results_after=mask,
    )
    llm = InstrumentedSummarizer()
    events = []
    tool_turns(store, "s", 8)
    with SummaryEngine(store, llm, config=config) as engine:
        engine.subscribe(events.append)
        engine.turn_after("s")
        assert engine.wait_idle(timeout=30)

    requested = [e for e in events if isinstance(e, CompressRequested)]
    assert bool(requested) is compresses
    assert (llm.calls > 0) is compresses


def test_a_compression_reports_the_masked_size(store):
    config = SummaryConfig(threshold=30, keep_recent=8, mask_tool_results_after=1)
    tool_turns(store, "s", 6)
    unmasked = sum(message_tokens(m, len) for m in store.get_history("s"))
    with SummaryEngine(
        store,
        InstrumentedSummarizer(),
        config=config,
        count_tokens_for=lambda model: len,
    ) as engine:
        outcome = engine.compress("s").result(timeout=30)

    assert outcome.kind == "compressed"
    assert outcome.tokens_before is not None
    assert outcome.tokens_before < unmasked // 2


# -- a result's age: user turns after the model's reply to it, as the host gave them --

MASK_PREFIX = "[tool result masked: "
GREP = ToolCall("t1", "grep", "{}")
ANTHROPIC_CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {}}],
}
RESULT_BLOCK = {"type": "tool_result", "tool_use_id": "t1", "content": LONG}
TEXT_BLOCK = {"type": "text", "text": "Also check the replicas."}


@pytest.mark.parametrize(
    "turn",
    [[RESULT_BLOCK, TEXT_BLOCK], [TEXT_BLOCK, RESULT_BLOCK]],
    ids=["after", "first"],
)
def test_anthropic_text_beside_a_result_is_not_a_later_turn(store, turn):
    request = [
        {"role": "user", "content": "Find the slow shard."},
        ANTHROPIC_CALL,
        {"role": "user", "content": turn},
    ]
    config = SummaryConfig(mask_tool_results_after=1)
    with SummaryEngine(store, config=config) as engine:
        system, once = engine.assemble_anthropic("Be brief.", request, "s")
        twice = engine.assemble_anthropic(system, once, "s")

    assert once[2]["content"] == [RESULT_BLOCK, TEXT_BLOCK]  # results first, in full
    assert twice == (system, once)


def test_a_result_stored_after_the_users_latest_message_is_not_masked(store):
    history = [
        Message("user", "Find the slow shard."),
        Message("assistant", None, tool_calls=[GREP]),
        Message("user", "Any update?"),
        Message("tool", LONG, tool_call_id="t1"),
    ]
    config = SummaryConfig(mask_tool_results_after=1)
    with SummaryEngine(store, config=config) as engine:
        request = engine.assemble(history, "s")
        again = engine.assemble(request, "s")
        as_dicts = engine.assemble_openai(messages_to_openai(history), "s")

    assert [m.role for m in request] == ["user", "assistant", "tool", "user"]
    assert request[2].text == LONG  # moved next to its call, not masked for it
    assert again == request
    assert as_dicts[2]["content"] == LONG


def test_a_result_is_old_once_users_speak_after_the_models_reply(store):
    history = [
        Message("user", "Find the slow shard."),
        Message("assistant", None, tool_calls=[GREP]),
        Message("tool", LONG, tool_call_id="t1"),
        Message("user", "Also check the replicas."),  # before the reply: same turn
        Message("assistant", "Shard 3 is slow."),
        Message("user", "Thanks."),
    ]
    config = SummaryConfig(mask_tool_results_after=1)
    with SummaryEngine(store, config=config) as engine:
        after_one = engine.assemble(history, "s")
        after_none = engine.assemble(history[:5], "s")

    assert after_one[2].text.startswith(MASK_PREFIX)
    assert after_none[2].text == LONG


@pytest.fixture
def masking_engine(request):
    """An engine without a summary that masks after 1 or 2 user turns."""
    config = SummaryConfig(mask_tool_results_after=request.param)
    with SummaryEngine(InMemoryStore(), config=config) as engine:
        yield engine


every_age = pytest.mark.parametrize("masking_engine", [1, 2], indirect=True)
examples = settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@every_age
@examples
@given(history=histories())
def test_a_result_no_user_follows_in_the_given_history_is_never_masked(
    masking_engine, history
):
    history = [attrs.evolve(m, id=i + 1) for i, m in enumerate(history)]
    users_after = {
        m.id: sum(later.role == "user" for later in history[i + 1 :])
        for i, m in enumerate(history)
    }

    request = masking_engine.assemble(history, "s")

    for message in request:
        if message.kind == MASKED_KIND:
            assert users_after[message.id] >= 1


@every_age
@examples
@given(history=histories())
def test_masking_a_request_again_changes_nothing(masking_engine, history):
    paired = repair_pairs(history)  # a request as a provider takes it

    once = masking_engine.assemble(paired, "s")
    as_dicts = masking_engine.assemble_openai(messages_to_openai(paired), "s")

    assert masking_engine.assemble(once, "s") == once
    assert masking_engine.assemble_openai(as_dicts, "s") == as_dicts


@every_age
@examples
@given(request=anthropic_requests())
def test_anthropic_masking_is_idempotent_and_spares_the_latest_results(
    masking_engine, request
):
    system, messages = request
    messages = [_with_long_results(turn) for turn in messages]
    users = [m for m in messages if m["role"] == "user"]
    fresh = {
        block["tool_use_id"]
        for block in _blocks(users[-1] if users else {"content": ""})
        if block.get("type") == "tool_result"
    }

    once = masking_engine.assemble_anthropic(system, messages, "s")
    twice = masking_engine.assemble_anthropic(*once, "s")

    assert twice == once
    for turn in once[1]:
        for block in _blocks(turn):
            if block.get("tool_use_id") in fresh:
                assert not str(block.get("content")).startswith(MASK_PREFIX)


def _with_long_results(turn):
    """Return ``turn`` with text results long enough that a stub is shorter."""
    return {
        **turn,
        "content": [
            {**block, "content": block["content"] + LONG}
            if block.get("type") == "tool_result"
            and isinstance(block.get("content"), str)
            else block
            for block in _blocks(turn)
        ]
        or turn["content"],
    }


def _blocks(turn):
    content = turn["content"]
    return content if isinstance(content, list) else []
