"""Turns that end while their session's follow-up waits send no trigger of their own.

The follow-up starts, and reads the session, only after the running compression
ends, so it folds what those turns saved; their triggers would only coalesce into
it. The session actor notes what it holds (``TurnCover``); the facade asks before
counting or sending.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memory_summary import Message, Outcome, SummaryConfig
from memory_summary.actors.compression import CompressionRequest
from memory_summary.actors.messages import CompressionFinished, Reap, TurnEnded
from memory_summary.actors.session import SessionActor, SessionServices
from memory_summary.actors.session_facts import SessionFacts
from memory_summary.actors.turn_cover import TurnCover
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import STORE_KINDS, store_for

CONFIG = SummaryConfig(threshold=10, keep_recent=4)


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


def _save(store: Any, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s", Message(role, f"message {i}"))


def _counted_sends(engine: Any) -> list[object]:
    """Record each trigger sent: to the router, or to the gate (a counted turn)."""
    sent: list[object] = []
    core = engine._core
    send, send_if_needed = core.send, core.send_if_needed

    def counted(session_id: str, message: object) -> None:
        sent.append(message)
        send(session_id, message)

    def counted_if_needed(session_id: str, message: object, needed: Any) -> None:
        sent.append(message)
        send_if_needed(session_id, message, needed)

    core.send, core.send_if_needed = counted, counted_if_needed
    return sent


def _on_follow_up(engine: Any) -> threading.Event:
    """Return an event set once the session's actor holds a follow-up."""
    held = threading.Event()
    turns = engine._core.turns
    follow_up = turns.follow_up

    def noted(session_id: str, *, waiting: bool) -> None:
        follow_up(session_id, waiting=waiting)
        if waiting:
            held.set()

    turns.follow_up = noted
    return held


def test_turns_during_a_compression_send_one_trigger_and_are_all_folded(
    store, make_engine
):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm, config=CONFIG)
    held = _on_follow_up(engine)
    _save(store, 12)
    engine.turn_after("s")
    assert llm.entered.wait(10)  # the first run holds the lease, summarizing
    sent = _counted_sends(engine)
    _save(store, 3, start=12)
    engine.turn_after("s")
    assert held.wait(10)  # coalesced into the follow-up

    for turn in range(5):
        _save(store, 3, start=15 + 3 * turn)
        engine.turn_after("s")
    gate.set()

    assert engine.wait_idle(timeout=30)
    # the turn that made the follow-up, then the follow-up's own count (regate)
    assert len(sent) == 2
    assert llm.calls == 2  # the follow-up folded every turn saved meanwhile
    assert store.count_history("s") == 4


class _Runtime:
    """What a session actor may ask of its runtime; compressions finish by hand."""

    def __init__(self) -> None:
        self.turns = TurnCover()
        self.reports: list[Any] = []

    def services(self) -> SessionServices:
        return SessionServices(
            settle=lambda units: None,
            submit=self._submit,
            emit=lambda event: None,
            release=lambda session_id, ref, stamp: False,
            facts=lambda session_id: SessionFacts(),
            keep_guard=lambda session_id, guard: None,
            turns=self.turns,
        )

    def _submit(self, request: CompressionRequest, report: Any) -> None:
        self.reports.append(report)

    def finish(self) -> None:
        outcome = Outcome(session_id="s", kind="compressed", reason="turn")
        self.reports.pop()(CompressionFinished(outcome))


def test_the_actor_notes_each_trigger_heard_and_the_follow_up_it_holds():
    runtime = _Runtime()
    actor = SessionActor.start("s", runtime.services())
    try:
        assert runtime.turns.claim("s")
        actor.ask(TurnEnded())  # heard: starts the first run
        assert not runtime.turns.covered("s")

        runtime.turns.claim("s")
        actor.ask(TurnEnded())  # coalesced: the follow-up waits
        assert runtime.turns.covered("s")

        runtime.finish()
        actor.ask(Reap(-1))  # heard after the finish: the follow-up runs, none waits
        assert not runtime.turns.covered("s")

        actor.ask(TurnEnded())
        assert runtime.turns.covered("s")  # the next follow-up waits
    finally:
        actor.stop()
    assert not runtime.turns.covered("s")  # a stopped actor holds nothing


def test_a_turn_covered_by_a_trigger_not_yet_sent_is_not_idle(store, make_engine):
    """Another thread's turn claimed the trigger and is about to send it.

    The turn found covered returns at once; ``wait_idle`` must still wait for the
    compression that trigger starts, not report an idle engine in between.
    """
    llm = InstrumentedSummarizer()
    engine = make_engine(store, llm, config=CONFIG)
    engine.start()
    claimed, release = threading.Event(), threading.Event()
    core = engine._core
    send, send_if_needed = core.send, core.send_if_needed

    def hold() -> None:
        claimed.set()  # the trigger is claimed, not yet counted as pending
        assert release.wait(10)

    def held(session_id: str, message: object) -> None:
        hold()
        send(session_id, message)

    def held_if_needed(session_id: str, message: object, needed: Any) -> None:
        hold()  # a database store's turn goes to the gate
        send_if_needed(session_id, message, needed)

    core.send, core.send_if_needed = held, held_if_needed
    _save(store, 12)
    first = threading.Thread(target=engine.turn_after, args=("s",))
    first.start()
    try:
        assert claimed.wait(10)
        engine.turn_after("s")  # covered by the first turn's trigger: returns

        assert not engine.wait_idle(timeout=0)
    finally:
        release.set()
        first.join(10)
    assert engine.wait_idle(timeout=30)
    assert llm.calls == 1
    assert store.count_history("s") == 4
