"""One actor per conversation: it serializes the session's triggers and compressions."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

import attrs
import pykka

from memory_summary.domain import (
    CompressRequested,
    EngineClosed,
    Event,
    Idle,
    Outcome,
    Reason,
    SessionState,
    on_finished,
    on_trigger,
)

from .messages import Compress, CompressionFinished, Reap, TurnEnded, UsageReported

log = logging.getLogger(__name__)


@attrs.frozen
class SessionServices:
    """All a session actor may ask of the runtime that hosts it.

    Attributes:
        settle: mark units of pending work done (``wait_idle`` counts them).
        submit: run one compression of a session on the worker pool and report its
            outcome to the given callback.
        emit: deliver an event to the host's subscribers.
        release: forget this actor in the registry if nothing was sent to it since
            ``stamp``; True when the actor may stop.
    """

    settle: Callable[[int], None]
    submit: Callable[[str, Reason, Callable[[Outcome], None]], None]
    emit: Callable[[Event], None]
    release: Callable[[str, object, int], bool]


class SessionActor(pykka.ThreadingActor):
    """Runs at most one compression of its session at a time.

    Triggers that arrive while one runs coalesce into one follow-up (``domain.state``).
    The compression runs on the runtime's worker pool, off this inbox, and reports back
    with ``CompressionFinished``. The actor does no I/O: the job decides whether a turn
    needs compressing.
    """

    use_daemon_thread = True

    def __init__(self, session_id: str, services: SessionServices) -> None:
        super().__init__()
        self._session_id = session_id
        self._services = services
        self._state: SessionState = Idle()
        self._running_replies: list[Future[Outcome]] = []
        self._next_replies: list[Future[Outcome]] = []

    def on_receive(self, message: object) -> object:
        match message:
            case TurnEnded():
                self._trigger("turn")
            case UsageReported(ratio=ratio):
                self._services.emit(CompressRequested(self._session_id, "auto", ratio))
                self._trigger("auto")
            case Compress(reason=reason, reply=reply):
                if reply is not None:
                    pending = (
                        self._next_replies
                        if self._state != Idle()
                        else self._running_replies
                    )
                    pending.append(reply)
                self._trigger(reason)
            case CompressionFinished(outcome=outcome):
                self._finished(outcome)
            case Reap(stamp=stamp):
                if self._state == Idle() and self._services.release(
                    self._session_id, self.actor_ref, stamp
                ):
                    log.debug("session %s: actor reaped", self._session_id)
                    self.stop()
            case _:
                return super().on_receive(message)
        return None

    def _trigger(self, reason: Reason) -> None:
        self._state, start = on_trigger(self._state, reason)
        if start:
            self._start(reason)  # the message's pending unit becomes the busy unit
        else:
            self._services.settle(1)  # coalesced into the follow-up

    def _start(self, reason: Reason) -> None:
        ref = self.actor_ref
        sid = self._session_id

        def report(outcome: Outcome) -> None:
            try:
                ref.tell(CompressionFinished(outcome))
            except pykka.ActorDeadError:
                log.debug("session %s: finished after its actor stopped", sid)

        self._services.submit(sid, reason, report)

    def _finished(self, outcome: Outcome) -> None:
        replies, self._running_replies = self._running_replies, []
        for reply in replies:
            _resolve(reply, outcome)
        self._state, follow_up = on_finished(self._state)
        if follow_up is None:
            self._services.settle(1)
            return
        self._running_replies, self._next_replies = self._next_replies, []
        self._start(follow_up)

    def on_stop(self) -> None:
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
