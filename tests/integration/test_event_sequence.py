"""The engine's event stream, over random turns, usage reports, failures and clears.

The property: per session, every ``Compressing(start)`` is followed by exactly one
``done`` or ``error`` (carrying its outcome) before the next start; ``Skipped`` only
names a ``SkipReason`` and never a request that started; every usage report at the
threshold is one ``CompressRequested``; nothing is emitted once ``stop()`` returned;
and each session's recorded usage is the sum of its outcomes' since its last clear.
"""

from __future__ import annotations

import typing

import hypothesis
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memory_summary import (
    Compressing,
    CompressRequested,
    EngineClosed,
    Message,
    Skipped,
    SummarizerError,
    SummaryConfig,
    SummaryEngine,
)
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import NO_USAGE, SKIP_REASONS, SkipReason
from tests.conftest import chars_counter_for

SESSIONS = ("a", "b")
GOOD = "The user and the assistant talked about trains, timetables and tickets."


class ModalSummarizer:
    """Answers well, fails, or answers emptily (rejected), as ``mode`` says."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0

    def context_length(self, model=None):
        return 4000

    def complete(self, messages, **kwargs):
        self.calls += 1
        if self.mode == "fail":
            raise SummarizerError("summarizer down")
        if self.mode == "reject":
            return ""
        return f"{GOOD} Call {self.calls}."


sessions = st.sampled_from(SESSIONS)
operations = st.one_of(
    st.tuples(st.just("messages"), sessions, st.integers(1, 9)),
    st.tuples(st.just("messages"), sessions, st.integers(5, 12)),
    st.tuples(st.just("turn"), sessions),
    st.tuples(st.just("usage"), sessions, st.sampled_from([0.2, 0.7, 0.95])),
    st.tuples(st.just("compress"), sessions),
    st.tuples(st.just("clear"), sessions),
    st.tuples(st.just("mode"), st.sampled_from(["ok", "fail", "reject"])),
    st.tuples(st.just("lease"), sessions),
)


def check_compressing_pairs(events):
    open_since: dict[str, int] = {}
    for index, event in enumerate(events):
        if isinstance(event, Compressing):
            sid = event.session_id
            if event.status == "start":
                assert sid not in open_since, f"two starts for {sid}"
                assert event.outcome is None
                open_since[sid] = index
            else:
                assert sid in open_since, f"an end without a start for {sid}"
                del open_since[sid]
                outcome = event.outcome
                assert outcome is not None
                assert outcome.session_id == sid
                assert outcome.reason == event.reason
                assert event.status == ("done" if outcome.ok else "error")
                assert outcome.code is not None
                assert outcome.usage.calls <= outcome.summarizer_calls
                assert outcome.duration_s >= 0
        elif isinstance(event, Skipped):
            assert event.code in typing.get_args(SkipReason)
            assert event.code in SKIP_REASONS
    assert open_since == {}, "a start without its end"


@given(
    ops=st.lists(operations, max_size=30),
    on_failure=st.sampled_from(["trim", "keep"]),
)
# a paused recovery that answered (a rejected reply) before nothing was left to fold
@example(
    ops=[("mode", "reject"), ("messages", "b", 6), ("turn", "b"), ("usage", "b", 0.7)],
    on_failure="trim",
)
def test_event_sequences_keep_their_promises(ops, on_failure):
    store = InMemoryStore()
    llm = ModalSummarizer()
    config = SummaryConfig(
        threshold=6,
        keep_recent=2,
        breaker_failures=2,
        breaker_cooldown_s=3600,
        on_summarizer_failure=on_failure,
        auto_compress_threshold=0.7,
    )
    engine = SummaryEngine(
        store, llm, config=config, count_tokens_for=chars_counter_for
    )
    events: list[object] = []
    engine.subscribe(events.append)
    since_clear: dict[str, list[int]] = {sid: [] for sid in SESSIONS}
    high_reports = 0
    held: dict[str, str] = {}
    try:
        engine.start()
        for op in ops:
            mark = len(events)
            match op:
                case ("messages", sid, count):
                    for i in range(count):
                        role = "user" if i % 2 == 0 else "assistant"
                        store.save_message(sid, Message(role, f"{sid} says {i}."))
                case ("turn", sid):
                    engine.turn_after(sid)
                case ("usage", sid, ratio):
                    engine.token_usage(sid, ratio)
                    high_reports += ratio >= 0.7
                case ("compress", sid):
                    engine.compress(sid).result(timeout=10)
                case ("clear", sid):
                    engine.clear("session", sid)
                case ("mode", mode):
                    llm.mode = mode
                case ("lease", sid):  # another worker takes (or gives back) the lease
                    if sid in held:
                        store.release_lease(sid, held.pop(sid))
                    else:
                        token = store.acquire_lease(sid, owner="other", ttl_s=3600)
                        assert token is not None
                        held[sid] = token
            assert engine.wait_idle(timeout=10)
            if op[0] == "clear":
                since_clear[op[1]] = []
            for event in events[mark:]:
                if isinstance(event, Compressing) and event.outcome is not None:
                    since_clear[event.session_id].append(len(events))
                    outcome = event.outcome
                    if event.session_id in held:
                        assert outcome.kind == "skipped"
                        assert outcome.code == "lease_held"
            for sid in SESSIONS:
                outcomes = [
                    e.outcome
                    for e in events
                    if isinstance(e, Compressing)
                    and e.session_id == sid
                    and e.outcome is not None
                ]
                recent = outcomes[len(outcomes) - len(since_clear[sid]) :]
                total = NO_USAGE
                for outcome in recent:
                    total = total.plus(outcome.usage)
                assert engine.usage(sid) == total
    finally:
        stopped = engine.stop(timeout=10)
    after_stop = len(events)
    with pytest.raises(EngineClosed):
        engine.token_usage("a", 0.95)

    assert stopped  # every job ended: none is left to emit
    for event in events:  # what the examples covered (--hypothesis-show-statistics)
        if isinstance(event, Skipped):
            hypothesis.event(f"skipped {event.code}")
        elif isinstance(event, Compressing) and event.outcome is not None:
            hypothesis.event(f"{event.status} {event.outcome.code}")
    check_compressing_pairs(events)
    requested = [e for e in events if isinstance(e, CompressRequested)]
    assert len(requested) == high_reports
    assert all(e.usage_ratio >= 0.7 for e in requested)
    assert len(events) == after_stop
