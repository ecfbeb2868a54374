"""Masking old tool results through the public API, on every store."""

from __future__ import annotations

import pytest

from memory_summary import (
    CompressRequested,
    Message,
    SummaryConfig,
    SummaryEngine,
    ToolCall,
    messages_to_openai,
)
from memory_summary.domain import MASKED_KIND, message_tokens
from memory_summary.testing.fakes import InstrumentedSummarizer

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
