"""The rules of one compression, as cases of the pure ``domain.compression.step``.

Each test scripts the store and the summarizer (``tests.compression_world``) and looks
at the actions, the commits and the outcome: no threads, no store, no clock.
"""

from __future__ import annotations

import attrs
import pytest

from memory_summary.domain import (
    Compressing,
    LoopGuard,
    Message,
    Skipped,
    SummaryConfig,
    SummaryRecord,
    ToolCall,
)
from memory_summary.domain.compression import closing_events
from memory_summary.domain.compression_io import (
    Begin,
    ChatContext,
    Commit,
    Finish,
    Measure,
    ReadArchived,
    ReadBacklog,
    ReadRecord,
    ReadWindow,
    Summarize,
)
from tests.compression_world import (
    GOOD,
    World,
    count,
    history,
    ids,
    run,
    setting_for,
)

CONFIG = SummaryConfig()  # threshold 30, keep_recent 20


def _recovering(active: int = 30, **changes: object) -> World:
    """A session whose ids 1-10 an outage archived unsummarized, then ``active``."""
    record = SummaryRecord(
        text="", covered_through_id=None, tokens=0, unsummarized=((1, 10),)
    )
    return World(
        CONFIG,
        history(active, first_id=11),
        record=attrs.evolve(record, generation="g0"),
        archived=history(10),
        **changes,  # type: ignore[arg-type]
    )


def context(
    window: int | None = 4000, keep: int | None = None, trigger: int | None = 2800
) -> ChatContext:
    def cost_for(_window):
        return lambda m: count(m.text) + 4

    def summary_tokens(text):
        return 0 if not text else count(text) + 4

    return ChatContext(cost_for, summary_tokens, window, keep, trigger)


def test_a_turn_below_the_threshold_skips_without_events_or_commits():
    world = World(CONFIG, history(29))

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.code == "below_threshold"
    assert finish.outcome.kind == "skipped"
    assert world.commits == []
    assert closing_events(finish.outcome, finish.started) == ()


def test_a_turn_at_the_threshold_folds_all_but_keep_recent():
    world = World(CONFIG, history(30))

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "compressed"
    assert finish.outcome.code == "summary_written"
    assert len(world.active) == 20
    assert finish.outcome.summarized == finish.outcome.archived == 10
    assert world.record.covered_through_id == 10
    assert world.record.text.startswith(GOOD)


def test_a_forced_compression_announces_its_start_before_anything_else():
    world = World(CONFIG, history(25))

    run(world, setting_for(CONFIG, "manual"))

    first = world.actions[0]
    assert isinstance(first, Begin)
    assert first.effects.events == (Compressing("s", "start", "manual"),)


def test_manual_ignores_the_threshold():
    world = World(CONFIG, history(25))

    finish, _ = run(world, setting_for(CONFIG, "manual"))

    assert finish.outcome.kind == "compressed"
    assert len(world.active) == 20


def test_manual_with_nothing_beyond_the_keep_skips_and_says_why():
    world = World(CONFIG, history(20))

    finish, _ = run(world, setting_for(CONFIG, "manual"))

    assert finish.outcome.code == "nothing_to_fold"
    events = closing_events(finish.outcome, finish.started)
    assert [type(e) for e in events] == [Compressing, Skipped]
    assert events[0].status == "done"


def test_another_worker_holding_the_lease_skips():
    world = World(CONFIG, history(30), lease_held=True)

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.code == "lease_held"
    assert finish.outcome.detail == "another worker holds the session's lease"
    assert world.commits == []


def test_a_failed_summary_still_trims_and_keeps_the_old_summary():
    old = SummaryRecord(text="Old summary.", covered_through_id=0, tokens=4)
    world = World(CONFIG, history(30), record=attrs.evolve(old, generation="g0"))
    world.answers = ["fail"]

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "trimmed"
    assert finish.outcome.code == "summarizer_failed"
    assert world.record.text == "Old summary."
    assert world.record.unsummarized == ((1, 10),)
    assert len(world.active) == 20
    assert world.commits[-1].final == "trimmed"
    notes = [n for a in world.actions for n in a.effects.notes]
    assert any("archiving without a summary" in text for _, text in notes)


def test_keep_mode_archives_nothing_when_the_summary_fails():
    config = SummaryConfig(on_summarizer_failure="keep")
    world = World(config, history(30), answers=["fail"])

    finish, _ = run(world, setting_for(config, "turn"))

    assert finish.outcome.kind == "failed"
    assert finish.outcome.code == "summarizer_failed"
    assert len(world.active) == 30
    assert all(c.through_id is None for c in world.commits)


def test_keep_mode_with_an_open_breaker_skips_a_turn_before_any_call():
    config = SummaryConfig(on_summarizer_failure="keep")
    world = World(config, history(30), breaker_open=True)

    finish, _ = run(world, setting_for(config, "turn"))

    assert finish.outcome.code == "breaker_open"
    assert finish.outcome.kind == "skipped"
    assert world.calls == 0
    assert any(isinstance(e, Skipped) for e in closing_events(finish.outcome, False))


def test_an_open_breaker_during_the_fold_degrades_to_trim():
    world = World(CONFIG, history(30), answers=["open"])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "trimmed"
    assert finish.outcome.code == "breaker_open"
    assert finish.outcome.summarizer_calls == 0


def test_a_rejected_summary_is_a_breaker_failure_and_trims():
    world = World(CONFIG, history(30), answers=["reject"])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.code == "summary_rejected"
    after_reply = world.actions[world.actions.index(_first(world, Summarize)) + 1]
    assert after_reply.effects.breaker == "failed"


def test_an_accepted_summary_closes_the_breaker():
    world = World(CONFIG, history(30))

    run(world, setting_for(CONFIG, "turn"))

    after_reply = world.actions[world.actions.index(_first(world, Summarize)) + 1]
    assert after_reply.effects.breaker == "succeeded"


def test_a_context_error_halves_the_chunk_once():
    world = World(CONFIG, history(30), answers=["long"])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "compressed"
    assert finish.outcome.chunks >= 2
    assert finish.outcome.summarizer_calls == 1 + finish.outcome.chunks
    assert len(world.active) == 20
    notes = [n for a in world.actions for n in a.effects.notes]
    assert any("context exceeded" in text for _, text in notes)


def test_a_half_that_is_still_too_long_fails_and_trims():
    world = World(CONFIG, history(30), answers=["long", "long"])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "trimmed"
    assert finish.outcome.code == "summarizer_failed"
    assert len(world.active) == 20


def test_ranges_archived_without_a_summary_are_recovered_first():
    archived = history(10)
    record = SummaryRecord(
        text="", covered_through_id=None, tokens=0, unsummarized=((1, 10),)
    )
    world = World(
        CONFIG,
        history(30, first_id=11),
        record=attrs.evolve(record, generation="g0"),
        archived=archived,
    )

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert isinstance(_first(world, ReadArchived), ReadArchived)
    assert finish.outcome.recovered == 10
    assert finish.outcome.summarized == 20
    assert world.record.unsummarized == ()
    assert len(world.active) == 20


def test_a_failed_recovery_pauses_and_the_fold_still_runs():
    world = _recovering(answers=["fail"])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "compressed"
    assert finish.outcome.recovered == 0
    assert world.record.unsummarized == ((1, 10),)


def test_a_recovery_that_only_pauses_reports_it():
    world = _recovering(active=5, answers=["fail"])

    finish, _ = run(world, setting_for(CONFIG, "recover"))

    assert finish.outcome.code == "recovery_paused"
    assert finish.outcome.kind == "failed"


def test_an_overflow_skips_recovery_and_keeps_by_tokens():
    world = _recovering()

    finish, _ = run(world, setting_for(CONFIG, "overflow", context=context(keep=40)))

    assert _first(world, ReadArchived) is None
    assert finish.outcome.kind == "compressed"
    assert len(world.active) < 20  # the token keep, not keep_recent


def test_a_fenced_commit_ends_the_compression():
    world = World(CONFIG, history(30), fence_commit=1)

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "fenced"
    assert finish.outcome.code == "fenced"
    assert len(world.commits) == 1
    assert "summary changed meanwhile" in finish.outcome.detail


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ("cancel", "engine_stopped"),
        ("store", "store_failed"),
        ("thread", "thread_start_failed"),
    ],
)
def test_a_stop_or_a_store_failure_fails_and_commits_nothing_more(answer, code):
    world = World(CONFIG, history(30), answers=[answer])

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.kind == "failed"
    assert finish.outcome.code == code
    assert world.commits == []


def test_a_measured_turn_under_its_trigger_stops_after_one_read():
    world = World(CONFIG, history(10))

    finish, _ = run(
        world, setting_for(CONFIG, "turn", measured=True, context=context())
    )

    assert isinstance(world.actions[0], Measure)
    assert finish.outcome.code == "below_threshold"
    assert finish.pressed is None
    assert len(world.actions) == 2


def test_a_measured_turn_over_its_trigger_presses():
    long = [attrs.evolve(m, content=m.content + " x" * 400) for m in history(20)]
    world = World(CONFIG, long)

    finish, _ = run(
        world, setting_for(CONFIG, "turn", measured=True, context=context())
    )

    assert finish.pressed is not None
    assert finish.pressed >= CONFIG.auto_compress_threshold
    assert world.commits == []


def test_a_measured_turn_at_the_count_threshold_compresses():
    world = World(CONFIG, history(30))

    finish, _ = run(
        world, setting_for(CONFIG, "turn", measured=True, context=context())
    )

    assert isinstance(world.actions[1], Begin)
    assert finish.outcome.kind == "compressed"


def test_the_loop_guard_holds_back_an_auto_compression():
    guard = LoopGuard(tip_id=25, kept_tokens=300)
    world = World(CONFIG, history(25))

    finish, _ = run(world, setting_for(CONFIG, "auto", guard=guard, context=context()))

    assert finish.outcome.code == "loop_guard"
    assert "waiting for" in finish.outcome.detail


def test_a_count_trigger_is_never_held_by_the_loop_guard():
    guard = LoopGuard(tip_id=30, kept_tokens=10_000)
    world = World(CONFIG, history(30))

    finish, _ = run(world, setting_for(CONFIG, "auto", guard=guard, context=context()))

    assert finish.outcome.kind == "compressed"


def test_a_pressed_compression_that_keeps_too_much_sets_the_guard():
    world = World(CONFIG, history(25))

    finish, _ = run(world, setting_for(CONFIG, "auto", context=context(trigger=10)))

    assert finish.guard_changed
    assert finish.guard is not None
    assert finish.guard.tip_id == 25


def test_a_pressed_compression_under_its_trigger_lifts_the_guard():
    world = World(CONFIG, history(25))

    finish, _ = run(world, setting_for(CONFIG, "auto", context=context()))

    assert finish.guard_changed
    assert finish.guard is None


def test_a_backlog_larger_than_the_window_is_folded_oldest_first():
    world = World(CONFIG, history(450))

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert isinstance(_first(world, ReadBacklog), ReadBacklog)
    assert ids(world.active) == list(range(431, 451))
    assert finish.outcome.archived == 430
    finals = [c.final for c in world.commits]
    assert finals[-1] == "compressed"
    assert set(finals[:-1]) == {None}


def test_usage_of_a_rejected_reply_in_keep_mode_is_recorded():
    config = SummaryConfig(on_summarizer_failure="keep")
    world = World(config, history(30), answers=["reject"])

    finish, _ = run(world, setting_for(config, "turn"))

    assert finish.outcome.code == "summary_rejected"
    assert world.record is not None
    assert world.record.usage.calls == 1
    assert world.commits[-1].through_id is None


def test_the_request_carries_the_configured_and_the_hosts_instructions():
    config = SummaryConfig(summary_instructions="Keep order numbers.")
    world = World(config, history(30))

    run(world, setting_for(config, "turn", instructions="Keep the dates."))

    request = _first(world, Summarize).request
    text = request[-1].content
    assert "Keep order numbers." in text
    assert "Keep the dates." in text


def test_instructions_stay_active_and_are_never_folded():
    instructions = Message("system", "Be brief.", id=1)
    world = World(CONFIG, [instructions, *history(30, first_id=2)])

    run(world, setting_for(CONFIG, "turn"))

    assert world.active[0] == instructions
    assert len(world.active) == 21


def test_an_unresolved_model_fails_after_announcing_its_start():
    from memory_summary.domain.compression import start, step
    from memory_summary.domain.compression_io import Unresolved

    state, _ = start(setting_for(CONFIG, "turn"))
    state, action = step(state, Unresolved("no provider"))

    assert isinstance(action, Finish)
    assert action.outcome.code == "model_unresolved"
    assert action.started
    assert action.effects.events == (Compressing("s", "start", "turn"),)


def test_tokens_before_and_after_count_the_active_context():
    world = World(CONFIG, history(30))

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    assert finish.outcome.tokens_before > finish.outcome.tokens_after > 0


def _first(world: World, kind: type) -> object:
    return next((a for a in world.actions if isinstance(a, kind)), None)


def test_every_commit_is_fenced_on_the_generation_it_read():
    world = World(CONFIG, history(450))

    run(world, setting_for(CONFIG, "turn"))

    generations = [c.expect_generation for c in world.commits]
    assert generations[0] is None
    assert generations[1:] == [f"g{i}" for i in range(1, len(generations))]
    assert all(isinstance(c, Commit) for c in world.commits)


def test_token_figures_are_estimated_when_no_decision_reads_them():
    world = World(CONFIG, history(30))

    finish, _ = run(
        world,
        setting_for(CONFIG, "turn", context=context(window=None, trigger=None)),
    )

    assert finish.outcome.tokens_estimated
    assert finish.outcome.tokens_before > finish.outcome.tokens_after > 0


def test_token_figures_are_exact_when_the_window_decides():
    world = World(CONFIG, history(30))

    finish, _ = run(world, setting_for(CONFIG, "turn", context=context()))

    assert not finish.outcome.tokens_estimated


@pytest.mark.parametrize("fence", [None, 1, 2])
@pytest.mark.parametrize("results", [1, 3])
def test_a_tool_call_group_across_a_backlog_page_is_folded_whole(fence, results):
    # Pages hold 12 messages: the first ends on the call, the next starts with its
    # results. A commit between them would leave the results active without the call.
    config = SummaryConfig(threshold=12, keep_recent=0, probe_floor=10)
    messages = history(24)
    calls = tuple(ToolCall(f"c{i}", "lookup", "{}") for i in range(results))
    messages[11] = Message("assistant", "", tool_calls=calls, id=12)
    for i in range(results):
        messages[12 + i] = Message(
            "tool", f"found {i}", tool_call_id=f"c{i}", id=13 + i
        )
    world = World(config, messages, fence_commit=fence)

    finish, _ = run(world, setting_for(config, "turn"))

    assert isinstance(_first(world, ReadBacklog), ReadBacklog)
    assert [
        c.through_id for c in world.commits if c.through_id in range(12, 12 + results)
    ] == []
    assert world.active[0].role != "tool"
    if fence is None:
        assert finish.outcome.code == "summary_written"
        assert 12 in ids(world.archived)


@pytest.mark.parametrize("estimate", [None, len])
def test_usage_the_summarizer_does_not_report_is_estimated_when_the_model_says_so(
    estimate,
):
    world = World(CONFIG, history(40), estimate_usage=estimate)

    finish, _ = run(world, setting_for(CONFIG, "turn"))

    usage = finish.outcome.usage
    counter = estimate or count
    request = _first(world, Summarize).request  # type: ignore[attr-defined]
    sent = sum(counter(m.text) for m in request)
    assert usage.calls == usage.counted_calls == 1
    assert usage.estimated_calls == (1 if estimate else 0)
    assert usage.input_tokens == sent
    assert usage.output_tokens == counter(f"{GOOD} Call 1.")


def test_the_window_comes_with_the_record_unless_a_range_waits_for_recovery():
    plain = World(CONFIG, history(40))
    run(plain, setting_for(CONFIG, "turn"))
    recovering = _recovering()
    run(recovering, setting_for(CONFIG, "turn"))

    kinds = [type(a) for a in plain.actions]
    assert ReadRecord(window=CONFIG.probe_floor) in plain.actions
    assert ReadWindow not in kinds  # one round trip for both
    kinds = [type(a) for a in recovering.actions]
    # recovery commits change the window: it is read again after them
    assert kinds.index(ReadArchived) < kinds.index(Commit) < kinds.index(ReadWindow)
