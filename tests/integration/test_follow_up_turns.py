"""A turn that comes while its session compresses is counted again before it runs.

Its trigger was counted before the running compression committed; the follow-up it
leaves goes back through the gate once that compression is done, as a new
``turn_after`` would: it runs only if the session still reaches the threshold, so a
stale one takes no lease and reads nothing. Turns the compression measures itself
(``context_window`` without usage reports) still run as follow-ups.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import attrs
import pytest

from memory_summary import Message, Outcome, SummaryConfig
from memory_summary.actors.compression import CompressionRequest
from memory_summary.actors.messages import CompressionFinished, TurnEnded
from memory_summary.actors.session import SessionActor, SessionServices
from memory_summary.actors.session_facts import SessionFacts
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import STORE_KINDS, store_for

CONFIG = SummaryConfig(threshold=10, keep_recent=4)


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


def _counting_leases(store: Any) -> Counter[str]:
    taken: Counter[str] = Counter()
    acquire = store.acquire_lease

    def counted(session_id: str, **kwargs: Any) -> Any:
        taken[session_id] += 1
        return acquire(session_id, **kwargs)

    store.acquire_lease = counted
    return taken


def _save(store: Any, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s", Message(role, f"message {i}"))


def _turn_during_a_compression(store, make_engine, saved_meanwhile: int, **config):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm, config=attrs.evolve(CONFIG, **config))
    taken = _counting_leases(store)
    _save(store, 12)
    engine.turn_after("s")
    assert llm.entered.wait(10)  # the compression holds the lease, summarizing
    _save(store, saved_meanwhile, start=12)
    engine.turn_after("s")  # counted now: 12 + saved, above the threshold
    gate.set()
    assert engine.wait_idle(timeout=30)
    return llm, taken


def test_a_turn_the_compression_left_below_the_threshold_does_not_run(
    store, make_engine
):
    llm, taken = _turn_during_a_compression(store, make_engine, saved_meanwhile=1)

    assert llm.calls == 1
    assert taken["s"] == 1  # the follow-up took no lease
    assert store.count_history("s") == 5  # 4 kept + 1 saved meanwhile


def test_a_turn_still_above_the_threshold_runs_after_the_compression(
    store, make_engine
):
    llm, taken = _turn_during_a_compression(store, make_engine, saved_meanwhile=10)

    assert llm.calls == 2
    assert taken["s"] == 2
    assert store.count_history("s") == 4


class _Runtime:
    """What a session actor may ask of its runtime, recorded; finishes by hand."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.regated: list[str] = []
        self.finishes = 0
        self.settled = 0
        self.reports: list[Any] = []

    def services(self) -> SessionServices:
        return SessionServices(
            settle=self._settle,
            submit=self._submit,
            emit=lambda event: None,
            release=lambda session_id, ref, stamp: False,
            facts=lambda session_id: SessionFacts(),
            keep_guard=lambda session_id, guard: None,
            regate=self._regate,
            turn_mark=lambda: self.finishes,
        )

    def _settle(self, units: int) -> None:
        self.settled += units

    def _submit(self, request: CompressionRequest, report: Any) -> None:
        self.started.append(request.reason)
        self.reports.append(report)

    def _regate(self, session_id: str) -> bool:
        self.regated.append(session_id)
        return True

    def finish(self) -> None:
        self.finishes += 1  # as the runtime counts it: before the actor hears
        outcome = Outcome(session_id="s", kind="compressed", reason="turn")
        self.reports.pop()(CompressionFinished(outcome))


@pytest.mark.parametrize("counted", ["before", "after"])
def test_a_turn_counted_before_the_last_commit_but_heard_after_it_is_counted_again(
    counted,
):
    """The trigger was on its way while the run ended: its count predates the commit.

    Heard while the run was busy, it becomes the follow-up and is counted again at
    the finish; heard after the finish, its mark says the same. Only a turn counted
    after the finish runs at once.
    """
    runtime = _Runtime()
    actor = SessionActor.start("s", runtime.services())
    try:
        actor.ask(TurnEnded(runtime.finishes))  # starts the first run
        mark = runtime.finishes  # the next turn is counted now, before the commit
        runtime.finish()
        if counted == "after":
            mark = runtime.finishes
        actor.ask(TurnEnded(mark))

        if counted == "before":
            assert runtime.started == ["turn"]
            assert runtime.regated == ["s"]
        else:
            assert runtime.started == ["turn", "turn"]
            assert runtime.regated == []
    finally:
        actor.stop()
