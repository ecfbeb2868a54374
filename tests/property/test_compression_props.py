"""Invariants of ``domain.compression`` over random histories, configs and answers.

Whatever the summarizer does (answers, fails, finds the request too long, is refused
by its breaker) and whichever commit is fenced, one compression:
- ends, with an outcome whose code matches its kind;
- archives nothing that was not summarized, outside the trim-only degrade (keep mode
  archives only what it summarized);
- never leaves the kept part starting with a tool result whose call was archived;
- keeps what it archived recorded (covered by the summary or recorded for recovery);
- announces at most one start, and commits nothing after a fence.
"""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import Message, SummaryConfig, foldable_history
from memory_summary.domain.budget import context_tokens
from memory_summary.domain.compression import closing_events
from memory_summary.domain.compression_io import Summarize
from memory_summary.domain.config import MAX_INSTRUCTIONS_CHARS
from memory_summary.testing.strategies import histories
from tests.compression_world import ANSWERS, World, count, run, setting_for

KIND_CODES = {
    "compressed": {"summary_written"},
    "trimmed": {"summarizer_failed", "summary_rejected", "breaker_open"},
    "skipped": {
        "below_threshold",
        "nothing_to_fold",
        "loop_guard",
        "breaker_open",
        "lease_held",
    },
    "fenced": {"fenced"},
    "failed": {
        "summarizer_failed",
        "summary_rejected",
        "breaker_open",
        "recovery_paused",
        "store_failed",
        "engine_stopped",
        "model_unresolved",
    },
}


@st.composite
def worlds(draw: st.DrawFn) -> tuple[World, str]:
    keep_recent = draw(st.integers(0, 12))
    config = SummaryConfig(
        threshold=draw(st.integers(max(keep_recent, 1) + 1, 40)),
        keep_recent=keep_recent,
        on_summarizer_failure=draw(st.sampled_from(["trim", "keep"])),
        probe_floor=draw(st.sampled_from([10, 200])),
    )
    messages = draw(histories(max_size=60))
    stored = [attrs.evolve(m, id=i + 1) for i, m in enumerate(messages)]
    answers = draw(
        st.lists(st.sampled_from([a for a in ANSWERS if a != "store"]), max_size=6)
    )
    world = World(
        config,
        stored,
        answers=answers,
        fence_commit=draw(st.none() | st.integers(1, 4)),
        breaker_open=draw(st.booleans()),
        context_length=draw(st.sampled_from([None, 2048, 128_000])),
    )
    reason = draw(st.sampled_from(["turn", "manual", "auto", "recover"]))
    return world, reason


@given(worlds())
def test_one_compression_keeps_every_promise(case):
    world, reason = case
    before = list(world.active)

    finish, state = run(world, setting_for(world.config, reason))

    outcome = finish.outcome
    assert outcome.code in KIND_CODES[outcome.kind]
    if outcome.code not in ("engine_stopped", "store_failed"):  # those count nothing
        assert outcome.archived == len(world.archived)
    archived_ids = {m.id for m in world.archived}
    record = world.record
    for message_id in archived_ids:  # nothing archived goes unrecorded
        covered = record.covered_through_id is not None and (
            message_id <= record.covered_through_id
        )
        recorded = any(a <= message_id <= b for a, b in record.unsummarized)
        assert covered or recorded
    if world.config.on_summarizer_failure == "keep":
        assert record is None or record.unsummarized == ()
    kept = foldable_history(world.active)
    if kept and kept[0].role == "tool" and kept[0].tool_call_id is not None:
        calls = {c.id for m in world.archived for c in m.tool_calls}
        assert kept[0].tool_call_id not in calls
    assert sorted(m.id for m in world.active + world.archived) == sorted(
        m.id for m in before
    )
    starts = [e for e in world.events if getattr(e, "status", None) == "start"]
    assert len(starts) <= 1
    closing = closing_events(outcome, finish.started)
    assert (
        sum(getattr(e, "status", None) == "start" for e in closing) + len(starts) <= 1
    )
    if outcome.kind == "fenced":  # nothing is committed after a fence
        assert len(world.commits) == world.fence_commit
    assert state.tally.calls <= world.calls


instruction_texts = st.tuples(
    st.sampled_from(["Keep every order number. ", "保留所有订单号。", "k"]),
    st.integers(0, MAX_INSTRUCTIONS_CHARS),
).map(lambda pair: (pair[0] * pair[1])[:MAX_INSTRUCTIONS_CHARS])
long_histories = st.lists(st.integers(1, 12_000), min_size=3, max_size=30).map(
    lambda sizes: [
        Message("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * size)
        for i, size in enumerate(sizes)
    ]
)


@given(
    messages=st.one_of(histories(max_size=60), long_histories),
    # 4,096 and up: the longest instructions, the prompt, two budgets and the
    # 256-token floor of transcript a call carries (MIN_INPUT_TOKENS) fit together
    context_length=st.sampled_from([None, 4096, 8192]),
    configured=instruction_texts,
    given_now=instruction_texts,
    locale=st.sampled_from(["en", "zh"]),
    reason=st.sampled_from(["turn", "manual", "auto"]),
)
def test_every_summarizer_request_fits_the_context_with_its_max_tokens(
    messages, context_length, configured, given_now, locale, reason
):
    config = SummaryConfig(
        threshold=2, keep_recent=1, locale=locale, summary_instructions=configured
    )
    stored = [attrs.evolve(m, id=i + 1) for i, m in enumerate(messages)]
    world = World(config, stored, context_length=context_length)

    run(world, setting_for(config, reason, instructions=given_now))

    requests = [a for a in world.actions if isinstance(a, Summarize)]
    for action in requests:
        sent = sum(count(message.text) for message in action.request)
        assert sent + action.max_tokens <= context_tokens(context_length)
