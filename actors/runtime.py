"""The thread runtime of one engine: router, reaper, session actors, worker pools.

It is the one wiring point inside ``actors/``: it spawns ``SessionActor``s and hands
each a ``SessionServices`` object, the only way an actor reaches it. What a compression
does is not its business: it runs the ``compress`` function it was given. It runs
about 510 lines.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures

import attrs
import pykka

from memory_summary.domain import Compressing, EngineClosed, Outcome, SummaryConfig
from memory_summary.domain.compression import closing_events

from .compression import CompressionRequest
from .events import EventBus
from .messages import CompressionFinished, Reap, TurnEnded
from .registry import SessionRegistry
from .session import SessionActor, SessionServices
from .session_facts import SessionMemory
from .turn_cover import TurnCover
from .workers import ThreadStartError, WorkerPool, daemon

log = logging.getLogger(__name__)

Compress = Callable[[CompressionRequest], CompressionFinished]
GATE_THREADS = 2
"""Threads that check, off the host's thread, whether a turn needs its session's actor
(a remote store's count); idle sessions then cost no actor thread."""


@attrs.frozen
class _Gated:
    """A trigger that reaches its session's actor only if ``needed()`` says so."""

    message: object
    needed: Callable[[], bool] = attrs.field(eq=False)


class ThreadRuntime:
    """Owns the threads of one engine and counts the work they have pending.

    Args:
        config: the engine's configuration (pool size, idle reaping).
        compress: runs one compression of a session; never raises (failures are
            outcomes).
        events: where events go.
        facts: what is remembered of each session between its actors' lives.
        calls: the summarizer-call pool; shut down with the runtime.
        stopping: set when ``stop()`` begins; compressions check it before committing.

    Thread-safety: every public method may be called from any thread.
    """

    def __init__(
        self,
        config: SummaryConfig,
        compress: Compress,
        *,
        events: EventBus,
        calls: WorkerPool,
        stopping: threading.Event,
        facts: SessionMemory,
    ) -> None:
        self._config = config
        self._compress = compress
        self.events = events
        self._calls = calls  # the summarizer-call pool (kept under this name)
        self._stopping = stopping
        self._jobs = WorkerPool(
            "memory-summary-compress", config.max_concurrent_summaries
        )
        self._gate = WorkerPool("memory-summary-gate", GATE_THREADS)
        self.registry = SessionRegistry(self._spawn)
        self.turns = TurnCover()  # what a turn need not send (read by the facade)
        self._services = SessionServices(
            settle=self.settle,
            submit=self.submit,
            emit=events.emit,
            release=self.registry.remove_if_untouched,
            facts=facts.get,
            keep_guard=facts.set_guard,
            regate=self.regate,
            turn_mark=self.turn_mark,
            turns=self.turns,
        )
        self._turn_check: Callable[[str], Callable[[], bool] | None] | None = None
        self._closed = False
        self._started = False
        self._start_lock = threading.Lock()
        self._pending = 0  # told-but-unhandled triggers + busy sessions
        self._idle = threading.Condition()
        self._in_flight: set[Future[CompressionFinished]] = set()
        self._in_flight_lock = threading.Lock()
        self._busy: dict[str, int] = {}  # session -> compressions running here
        self._finishes = 0  # compressions finished here: a turn's mark (turn_mark)
        self._after: dict[str, list[Callable[[], None]]] = {}
        # The host's calls only enqueue; this thread finds or spawns the actors, so a
        # turn never pays for starting an actor thread on the caller's thread.
        self._inbox: queue.SimpleQueue[tuple[str, object] | None] = queue.SimpleQueue()
        self._router = daemon(self._route, "memory-summary-router")
        self._reaper = daemon(self._reap_loop, "memory-summary-reaper")
        self._reaper_stop = threading.Event()
        self._on_start: list[Callable[[], None]] = []

    def on_start(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on a background thread when the runtime starts."""
        self._on_start.append(callback)

    def start(self) -> None:
        """Start the router and the reaper; idempotent."""
        with self._start_lock:
            if self._closed:
                raise EngineClosed("the engine was stopped; create a new one")
            if self._started:
                return
            self._started = True
            self._router.start()
            self._reaper.start()
        for callback in self._on_start:
            daemon(_logged(callback), "memory-summary-warmup").start()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Finish or cancel in-flight work within ``timeout_s``; True if all ended.

        Nothing is committed after stop() begins. Every thread is a daemon: a
        summarizer call that never returns cannot keep the host process alive.
        """
        with self._start_lock:
            if self._closed:
                return True
            self._closed = True
        deadline = time.monotonic() + timeout_s
        self._stopping.set()
        self._reaper_stop.set()
        self._inbox.put(None)
        if self._started:
            self._router.join(max(deadline - time.monotonic(), 0.1))
        self._gate.shutdown()
        # a gate check reads the store: the host may close it once stop() returns
        self._gate.wait_running(max(deadline - time.monotonic(), 0.1))
        self._jobs.shutdown()
        self._calls.shutdown()
        with self._in_flight_lock:
            running = list(self._in_flight)
        _, late = wait_futures(running, timeout=max(deadline - time.monotonic(), 0))
        self.registry.close(max(deadline - time.monotonic(), 0.1))
        if self._started:
            self._reaper.join(max(deadline - time.monotonic(), 0.1))
        with self._idle:
            self._pending = 0
            self._idle.notify_all()
        if late:
            log.warning("stop: %d compression(s) still running", len(late))
        return not late

    @property
    def closed(self) -> bool:
        """Tell whether stop() was called."""
        return self._closed

    def check_open(self) -> None:
        """Raise ``EngineClosed`` once stop() was called."""
        if self._closed:
            raise EngineClosed("the engine was stopped")

    def send(self, session_id: str, message: object) -> None:
        """Send a trigger to the session's actor, counting it as pending work."""
        if not self._started:
            self.start()
        with self._start_lock:  # never behind stop()'s end-of-inbox marker
            if self._closed:
                raise EngineClosed("the engine was stopped")
            with self._idle:
                self._pending += 1
            self._inbox.put((session_id, message))

    def send_if_needed(
        self, session_id: str, message: object, needed: Callable[[], bool]
    ) -> None:
        """Send a trigger that only matters if ``needed()``, asked off the caller.

        ``needed`` runs on the gate's few threads (it may do I/O), handed there
        directly, not through the router; the trigger goes on to the router, and
        the session's actor is started, only when it answers True, so sessions far
        below the threshold cost no actor thread and a turn one hand-off.
        """
        if not self._started:
            self.start()
        with self._start_lock:  # pending, as ``send`` counts it, or refused
            if self._closed:
                raise EngineClosed("the engine was stopped")
            with self._idle:
                self._pending += 1
        self._gated(session_id, _Gated(message, needed))

    def send_turn(
        self,
        session_id: str,
        turn: TurnEnded,
        needed: Callable[[], bool] | None = None,
    ) -> None:
        """Send a turn trigger (gated with ``needed``), unless one is on its way.

        The one on its way is heard after the caller's saves, so it covers them
        (``TurnCover``).
        """
        # Pending before the claim: a turn another thread finds covered by it is
        # never idle in ``wait_idle`` while this trigger is not yet counted.
        with self._idle:
            self._pending += 1
        try:
            if not self.turns.claim(session_id):
                return
            try:
                if needed is None:
                    self.send(session_id, turn)
                else:
                    self.send_if_needed(session_id, turn, needed)
            except BaseException:
                self.turns.heard(session_id)  # never sent
                raise
        finally:
            self.settle(1)  # the trigger, once sent, counts as pending of its own

    def gate_turns(self, check: Callable[[str], Callable[[], bool] | None]) -> None:
        """Set how a follow-up turn is gated (``regate``).

        ``check(session_id)`` returns the check ``send_if_needed`` runs, or None where
        the turn is not gated (the compression measures it).
        """
        self._turn_check = check

    def turn_mark(self) -> int:
        """Return how many compressions have finished here (a ``TurnEnded``'s mark).

        Taken before a turn is counted: an actor that heard of a later finish knows
        the count may predate its session's commit.
        """
        return self._finishes

    def regate(self, session_id: str) -> bool:
        """Send the session a turn trigger through the gate; False if not gated.

        A turn that arrives while a compression of its session runs was counted
        before that compression committed. Its follow-up, counted again once the
        compression is done, runs only if the count still says so, instead of
        taking the lease and reading the window to find the session below the
        threshold. The new trigger is pending work before the caller settles its own.
        """
        check = None if self._turn_check is None else self._turn_check(session_id)
        if check is None:
            return False
        try:
            self.send_turn(session_id, TurnEnded(self._finishes), check)
        except EngineClosed:
            return False
        return True

    def _gated(self, session_id: str, gated: _Gated) -> None:
        """Check a gated trigger on the gate pool; route it on, or settle it.

        The trigger counts as pending work already; it keeps its unit when routed.
        """

        def check() -> None:
            if isinstance(gated.message, TurnEnded):
                self.turns.heard(session_id)  # its count runs after the turn's saves
            try:
                needed = gated.needed()
            except Exception:  # a bug: deliver, so the job meets it and reports it
                log.exception("session %s: the gate check crashed", session_id)
                needed = True
            if not needed:
                self.settle(1)
                return
            with self._start_lock:
                if self._closed:
                    self.settle(1)
                    return
                self._inbox.put((session_id, gated.message))  # keeps its pending unit

        try:
            self._gate.submit(check)
        except RuntimeError as exc:  # the pool is shut down: the engine is stopping
            if isinstance(exc, ThreadStartError):  # or the process is out of threads
                log.warning(
                    "session %s: the turn's gate check did not start (%s): this turn "
                    "triggers no compression; the next turn is checked again",
                    session_id,
                    exc,
                    extra={"session_id": session_id},
                )
            if isinstance(gated.message, TurnEnded):
                self.turns.heard(session_id)
            self.settle(1)

    def _route(self) -> None:
        """Deliver queued triggers to their session actors, in arrival order."""
        while (item := self._inbox.get()) is not None:
            session_id, message = item
            try:
                delivered = self.registry.tell(session_id, message)
            except Exception:  # a spawn failure must not stop the routing
                log.exception("session %s: cannot reach its actor", session_id)
                delivered = False
            if not delivered:
                self.settle(1)
                if isinstance(message, TurnEnded):
                    self.turns.heard(session_id)  # lost: the next turn sends again
                _refuse(message, session_id)

    def settle(self, units: int) -> None:
        """Mark ``units`` of pending work done."""
        with self._idle:
            self._pending -= units
            if self._pending <= 0:
                self._pending = 0
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no compression runs or is queued; return whether that happened."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _spawn(self, session_id: str) -> pykka.ActorRef:
        return SessionActor.start(session_id, self._services)

    def submit(
        self,
        request: CompressionRequest,
        report: Callable[[CompressionFinished], None],
    ) -> None:
        """Run one compression on the pool; ``report`` how it finished.

        The compression never raises (its executor turns a bug into an outcome).
        """
        session_id = request.session_id
        with self._in_flight_lock:  # busy before it may run: no usage fences it
            self._busy[session_id] = self._busy.get(session_id, 0) + 1
        try:
            future = self._jobs.submit(self._compress, request)
        except BaseException as exc:
            if not self._not_submitted(request, exc, report):
                raise
            return
        with self._in_flight_lock:
            self._in_flight.add(future)

        def done(f: Future[CompressionFinished]) -> None:
            with self._in_flight_lock:
                self._in_flight.discard(f)
                self._finishes += 1  # after its commit, before its actor hears
                left = self._busy[session_id] = self._busy[session_id] - 1
                after = []
                if not left:
                    del self._busy[session_id]
                    after = self._after.pop(session_id, [])
            if after and self._stopping.is_set():  # nothing commits once stop() began
                log.warning(
                    "session %s: %d action(s) after its compressions dropped at stop",
                    session_id,
                    len(after),
                )
                after = []
            for action in after:  # before the actor may start the next compression
                _run_after(session_id, action)
            report(_stopped(request) if f.cancelled() else f.result())

        future.add_done_callback(done)

    def _not_submitted(
        self,
        request: CompressionRequest,
        exc: BaseException,
        report: Callable[[CompressionFinished], None],
    ) -> bool:
        """Undo ``submit``'s count of a compression the pool refused; report it.

        Returns False when ``exc`` is no refusal of the pool's (the caller raises it).
        """
        session_id = request.session_id
        with self._in_flight_lock:
            self._busy[session_id] -= 1
            dropped = []
            if not self._busy[session_id]:
                del self._busy[session_id]
                dropped = self._after.pop(session_id, [])
        if isinstance(exc, ThreadStartError) and not self._stopping.is_set():
            for action in dropped:  # no stop: out of threads; they still run
                _run_after(session_id, action)
            report(self._unstarted(request, exc))
            return True
        if dropped:
            log.warning(
                "session %s: %d action(s) after its compressions dropped: "
                "the engine is stopping",
                session_id,
                len(dropped),
            )
        if not isinstance(exc, RuntimeError):
            return False
        report(_stopped(request))  # the pool is shut down: the engine stops
        return True

    def _unstarted(
        self, request: CompressionRequest, exc: ThreadStartError
    ) -> CompressionFinished:
        """Report a compression whose thread did not start: a failure of its own.

        Announced as a compression that started and failed (``Compressing`` start
        and error, whatever its reason), so ``health().last_failure`` shows it.
        """
        sid = request.session_id
        outcome = Outcome(
            sid,
            "failed",
            request.reason,
            f"thread start failed: {exc}",
            code="thread_start_failed",
        )
        log.warning(
            "session %s: compression not run: %s",
            sid,
            outcome.detail,
            extra={"session_id": sid},
        )
        self.events.emit(Compressing(sid, "start", request.reason))
        for event in closing_events(outcome, started=True):
            self.events.emit(event)
        return CompressionFinished(outcome)

    def after_compressions(self, session_id: str, action: Callable[[], None]) -> None:
        """Run ``action`` once no compression of ``session_id`` runs in this process.

        Now, on the caller's thread, when none runs; else on the thread of the last
        one to end, before its session may start another. A store write that bumps
        the session's generation (a usage commit) then fences no compression of
        this process. ``action`` must not raise; if it does, it is logged. Actions
        still waiting when ``stop()`` begins are dropped (logged): nothing commits
        after it.
        """
        if self._stopping.is_set():
            log.warning(
                "session %s: an action after compressions dropped at stop", session_id
            )
            return
        with self._in_flight_lock:
            if self._busy.get(session_id):
                self._after.setdefault(session_id, []).append(action)
                return
        _run_after(session_id, action)

    def _reap_loop(self) -> None:
        idle_s = self._config.actor_idle_s
        interval_s = min(max(idle_s / 4, 0.05), 30.0)
        while not self._reaper_stop.wait(interval_s):
            self.reap(time.monotonic() - idle_s)

    def reap(self, cutoff_s: float) -> int:
        """Ask every actor untouched since ``cutoff_s`` (monotonic) to stop if idle."""
        candidates = self.registry.idle_since(cutoff_s)
        for _, ref, stamp in candidates:
            with contextlib.suppress(pykka.ActorDeadError):
                ref.tell(Reap(stamp))
        return len(candidates)

    def pending(self) -> int:
        """Return the triggers told but not handled yet plus the busy sessions."""
        with self._idle:
            return self._pending

    def live_actors(self) -> int:
        """Return how many session actors are alive."""
        return len(self.registry)


def _stopped(request: CompressionRequest) -> CompressionFinished:
    outcome = Outcome(
        request.session_id,
        "failed",
        request.reason,
        "engine stopped",
        code="engine_stopped",
    )
    return CompressionFinished(outcome)


def _refuse(message: object, session_id: str) -> None:
    """Fail the reply of a message no actor received, so no caller waits forever."""
    reply = getattr(message, "reply", None)
    if isinstance(reply, Future) and not reply.done():
        reply.set_exception(EngineClosed(f"session {session_id}: not delivered"))


def _logged(callback: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            callback()
        except Exception:  # a warm-up failure only costs the fallback
            log.exception("background start-up task failed")

    return run


def _run_after(session_id: str, action: Callable[[], None]) -> None:
    try:
        action()
    except Exception:
        log.exception("session %s: an action after its compressions failed", session_id)
