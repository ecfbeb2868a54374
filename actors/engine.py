"""The engine's orchestration: session actors, worker pools, events and lifecycle.

``EngineCore`` takes every collaborator through the ports; the facade's
``memory_summary.SummaryEngine`` builds the concrete defaults and the public methods.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping

import pykka

from memory_summary.domain import (
    Archive,
    CompactionStore,
    EngineClosed,
    Outcome,
    Reason,
    Summarizer,
    SummaryConfig,
    should_compress,
)

from .compression import CompressionJob
from .messages import Reap
from .registry import SessionRegistry
from .session import SessionActor
from .summary_model import CountTokensFor, ModelResolver, ResolvedModel

log = logging.getLogger(__name__)

Subscriber = Callable[[object], None]


class EngineCore:
    """Owns the threads of one engine: actors, the compression and summarizer pools.

    Thread-safety: every public method may be called from any thread.
    """

    def __init__(
        self,
        store: CompactionStore,
        llm: Summarizer,
        *,
        config: SummaryConfig,
        count_tokens_for: CountTokensFor,
        archive: Archive | None = None,
        llms: Mapping[str, Summarizer] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.store = store
        self.clock = clock
        self.resolver = ModelResolver(config, llm, llms or {}, count_tokens_for)
        self.session_models: dict[str, str] = {}
        self.registry = SessionRegistry(self._spawn)
        limit = config.max_concurrent_summaries
        self._jobs = concurrent.futures.ThreadPoolExecutor(
            limit, "memory-summary-compress"
        )
        self._calls = concurrent.futures.ThreadPoolExecutor(limit, "memory-summary-llm")
        self._cancelled = threading.Event()
        self._closed = False
        self._pending = 0  # told-but-unhandled triggers + busy sessions
        self._idle = threading.Condition()
        self._subscribers: tuple[Subscriber, ...] = ()
        self._subscribers_lock = threading.Lock()
        self._in_flight: set[concurrent.futures.Future[Outcome]] = set()
        # The host's calls only enqueue; this thread finds or spawns the actors, so a
        # first turn never pays for starting an actor thread on the caller's thread.
        self._inbox: queue.SimpleQueue[tuple[str, object] | None] = queue.SimpleQueue()
        self._router = threading.Thread(
            target=self._route, name="memory-summary-router", daemon=True
        )
        self._reaper = threading.Thread(
            target=self._reap_loop, name="memory-summary-reaper", daemon=True
        )
        self._reaper_stop = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self.job = CompressionJob(
            store=store,
            config=config,
            emit=self.emit,
            call_pool=self._calls,
            is_cancelled=self._cancelled.is_set,
            archive=archive,
            clock=clock,
        )

    def start(self) -> None:
        """Start the reaper; idempotent. Sending to a session also starts the engine."""
        with self._start_lock:
            if self._closed:
                raise EngineClosed("the engine was stopped; create a new one")
            if not self._started:
                self._started = True
                self._router.start()
                self._reaper.start()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Finish or cancel in-flight work within ``timeout_s``; True if all ended.

        Nothing is committed after stop() begins. A summarizer call that outlives the
        timeout keeps its worker thread until it returns; its result is discarded.
        """
        with self._start_lock:
            if self._closed:
                return True
            self._closed = True
        deadline = time.monotonic() + timeout_s
        self._cancelled.set()
        self._reaper_stop.set()
        self._inbox.put(None)
        if self._started:
            self._router.join(max(deadline - time.monotonic(), 0.1))
        self._jobs.shutdown(wait=False, cancel_futures=True)
        self._calls.shutdown(wait=False, cancel_futures=True)
        running = list(self._in_flight)
        _, late = concurrent.futures.wait(
            running, timeout=max(deadline - time.monotonic(), 0)
        )
        self.registry.close(max(deadline - time.monotonic(), 0.1))
        if self._started:
            self._reaper.join(max(deadline - time.monotonic(), 0.1))
        with self._idle:
            self._pending = 0
            self._idle.notify_all()
        if late:
            log.warning("stop: %d compression(s) still in a summarizer call", len(late))
        return not late

    @property
    def closed(self) -> bool:
        """Tell whether stop() was called."""
        return self._closed

    def send(self, session_id: str, message: object) -> None:
        """Send a trigger to the session's actor, counting it as pending work."""
        if self._closed:
            raise EngineClosed("the engine was stopped")
        if not self._started:
            self.start()
        with self._idle:
            self._pending += 1
        self._inbox.put((session_id, message))

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

    def settle(self, units: int) -> None:
        """Mark ``units`` of pending work done (called by session actors)."""
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
        return SessionActor.start(session_id, self)

    def resolve(self, session_id: str) -> ResolvedModel | str:
        """Return the session's summary model, or why it cannot be resolved."""
        return self.resolver.resolve(self.session_models.get(session_id))

    def turn_needs_compression(self, session_id: str) -> bool:
        """Tell whether a finished turn brings the session to its threshold."""
        try:
            active = self.store.count_history(session_id)
        except Exception:  # a store failure must not kill the actor
            log.exception("session %s: count_history failed", session_id)
            return False
        return should_compress(active, self.config, forced=False)

    def submit(
        self, session_id: str, reason: Reason, report: Callable[[Outcome], None]
    ) -> None:
        """Run one compression of ``session_id`` on the pool; ``report`` its outcome."""

        def work() -> Outcome:
            try:
                return self.job.run(session_id, reason, self.resolve(session_id))
            except Exception as exc:  # a bug: report it, never leave the session busy
                log.exception("session %s: compression crashed", session_id)
                return Outcome(session_id, "failed", reason, f"internal error: {exc}")

        try:
            future = self._jobs.submit(work)
        except RuntimeError:  # the pool is shut down: the engine is stopping
            report(Outcome(session_id, "failed", reason, "engine stopped"))
            return
        self._in_flight.add(future)

        def done(f: concurrent.futures.Future[Outcome]) -> None:
            self._in_flight.discard(f)
            if f.cancelled():
                report(Outcome(session_id, "failed", reason, "engine stopped"))
            else:
                report(f.result())

        future.add_done_callback(done)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Register ``callback`` for events; return a function that unregisters it."""
        with self._subscribers_lock:
            self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            with self._subscribers_lock:
                self._subscribers = tuple(
                    s for s in self._subscribers if s is not callback
                )

        return unsubscribe

    def emit(self, event: object) -> None:
        """Deliver ``event`` to every subscriber; one that raises is only logged."""
        for callback in self._subscribers:
            _deliver(callback, event)

    def _reap_loop(self) -> None:
        idle_s = self.config.actor_idle_s
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

    def live_actors(self) -> int:
        """Return how many session actors are alive."""
        return len(self.registry)


def _deliver(callback: Subscriber, event: object) -> None:
    try:
        callback(event)
    except Exception:  # a subscriber's bug never breaks the engine
        log.exception("event subscriber %r raised on %r", callback, event)
