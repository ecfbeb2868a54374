"""One actor per conversation: it serializes the session's triggers and compressions."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

import attrs
import pykka

from memory_summary.domain import (
    CompressRequested,
    EngineClosed,
    Event,
    Idle,
    LoopGuard,
    Outcome,
    Reason,
    SessionState,
    on_finished,
    on_trigger,
)
from memory_summary.domain.config import MAX_INSTRUCTIONS_CHARS
from memory_summary.domain.prompt import joined_instructions

from .compression import CompressionRequest
from .messages import Compress, CompressionFinished, Reap, TurnEnded, UsageReported
from .session_facts import SessionFacts
from .turn_cover import TurnCover
from .workers import name_this_thread

log = logging.getLogger(__name__)


@attrs.frozen
class SessionServices:
    """All a session actor may ask of the runtime that hosts it.

    Attributes:
        settle: mark units of pending work done (``wait_idle`` counts them).
        submit: run one compression on the worker pool and report how it finished
            to the given callback.
        emit: deliver an event to the host's subscribers.
        release: forget this actor in the registry if nothing was sent to it since
            ``stamp``; True when the actor may stop.
        facts: the session's remembered facts (``session_facts``), read when a
            compression starts.
        keep_guard: remember the loop guard a compression left.
        regate: send the session a turn trigger through the gate, counted anew as
            a fresh ``turn_after`` is; False where turns are not gated.
        turn_mark: the runtime's count of finished compressions (``TurnEnded``).
        turns: what the host's turns need not send (``TurnCover``): the actor notes
            each turn trigger it hears and whether it holds a follow-up.
    """

    settle: Callable[[int], None]
    submit: Callable[[CompressionRequest, Callable[[CompressionFinished], None]], None]
    emit: Callable[[Event], None]
    release: Callable[[str, object, int], bool]
    facts: Callable[[str], SessionFacts]
    keep_guard: Callable[[str, LoopGuard | None], None]
    regate: Callable[[str], bool] = lambda session_id: False
    turn_mark: Callable[[], int] = lambda: 0
    turns: TurnCover = attrs.field(factory=TurnCover)


class SessionActor(pykka.ThreadingActor):
    """Runs at most one compression of its session at a time.

    Triggers that arrive while one runs coalesce into one follow-up (``domain.state``);
    a follow-up of turns alone goes back through the gate, as a new turn would.
    The compression runs on the runtime's worker pool, off this inbox, with a frozen
    snapshot of the session (``CompressionRequest``: its facts and the host's pending
    instructions), and reports back with ``CompressionFinished``. The actor does no
    I/O. It emits ``CompressRequested``, the one place that does: for a host's usage
    report, and when a measured turn found the session pressed (it then asks for an
    ``auto`` compression as the follow-up).
    """

    use_daemon_thread = True

    def on_start(self) -> None:
        # pykka calls its threads SessionActor-N: the engine's names say whose they are
        number = threading.current_thread().name.rpartition("-")[2]
        name_this_thread(f"memory-summary-actor-{number}")

    def __init__(self, session_id: str, services: SessionServices) -> None:
        super().__init__()
        self._session_id = session_id
        self._services = services
        self._state: SessionState = Idle()
        self._running_replies: list[Future[Outcome]] = []
        self._next_replies: list[Future[Outcome]] = []
        self._instructions = ""  # the host's, for the next compression run
        self._finished_mark = 0  # turn_mark when this actor's last run finished

    def on_receive(self, message: object) -> object:
        match message:
            case TurnEnded(mark=mark):
                self._services.turns.heard(self._session_id)  # before it is decided
                self._turn(mark)
            case UsageReported(ratio=ratio):
                self._services.emit(CompressRequested(self._session_id, "auto", ratio))
                self._trigger("auto")
            case Compress(reason=reason, reply=reply, instructions=instructions):
                if instructions:
                    joined = joined_instructions(self._instructions, instructions)
                    self._instructions = joined[-MAX_INSTRUCTIONS_CHARS:]
                if reply is not None:
                    pending = (
                        self._next_replies
                        if self._state != Idle()
                        else self._running_replies
                    )
                    pending.append(reply)
                self._trigger(reason)
            case CompressionFinished():
                self._finished(message)
            case Reap(stamp=stamp):
                if self._state == Idle() and self._services.release(
                    self._session_id, self.actor_ref, stamp
                ):
                    log.debug("session %s: actor reaped", self._session_id)
                    self.stop()
            case _:
                return super().on_receive(message)
        return None

    def _turn(self, mark: int) -> None:
        # Counted before this session's last commit (the trigger was on its way
        # while that run ended): counted again, it runs only if still due.
        if (
            mark < self._finished_mark
            and self._state == Idle()
            and self._services.regate(self._session_id)
        ):
            self._services.settle(1)
            return
        self._trigger("turn")

    def _trigger(self, reason: Reason) -> None:
        self._state, start = on_trigger(self._state, reason)
        if start:
            self._start(reason)  # the message's pending unit becomes the busy unit
        else:  # coalesced into the follow-up: later turns need not send theirs
            self._services.turns.follow_up(self._session_id, waiting=True)
            self._services.settle(1)

    def _start(self, reason: Reason) -> None:
        ref = self.actor_ref
        sid = self._session_id

        def report(finished: CompressionFinished) -> None:
            try:
                ref.tell(finished)
            except pykka.ActorDeadError:
                log.debug("session %s: finished after its actor stopped", sid)

        instructions, self._instructions = self._instructions, ""
        request = CompressionRequest(
            sid, reason, self._services.facts(sid), instructions
        )
        self._services.submit(request, report)

    def _finished(self, finished: CompressionFinished) -> None:
        # before the follow-up starts: a turn from now on must reach this actor
        self._services.turns.follow_up(self._session_id, waiting=False)
        self._finished_mark = self._services.turn_mark()
        replies, self._running_replies = self._running_replies, []
        for reply in replies:
            _resolve(reply, finished.outcome)
        sid = self._session_id
        if finished.guard_changed:
            self._services.keep_guard(sid, finished.guard)
        if finished.pressed is not None:  # a measured turn: the tokens ask for more
            self._services.emit(CompressRequested(sid, "auto", finished.pressed))
            self._state, _ = on_trigger(self._state, "auto")  # busy: the follow-up
        self._state, follow_up = on_finished(self._state)
        if follow_up is None:
            self._services.settle(1)
            return
        # A turn that came while this ran was counted before its commit: counted
        # again now, it runs only if still due (most often it no longer is).
        if (
            follow_up == "turn"
            and not self._next_replies
            and self._services.regate(sid)
        ):
            self._state = Idle()
            self._services.settle(1)
            return
        self._running_replies, self._next_replies = self._next_replies, []
        self._start(follow_up)

    def on_stop(self) -> None:
        self._services.turns.forget(self._session_id)
        for reply in self._running_replies + self._next_replies:
            if not reply.done():
                reply.set_exception(
                    EngineClosed(f"session {self._session_id}: engine stopped")
                )

    def on_failure(self, *args: object) -> None:
        log.error("session %s: actor crashed", self._session_id)
        self.on_stop()


def _resolve(reply: Future[Outcome], outcome: Outcome) -> None:
    if not reply.done():
        reply.set_result(outcome)
