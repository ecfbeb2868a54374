"""One compression of one session, on a worker thread: gather, plan, summarize, commit.

The job takes the session's lease, reads the record (poison-proof), folds ranges an
outage archived without a summary back into it, then lets the domain decide (window,
cut, plan, chunks) and applies the result one chunk at a time. Every commit is fenced:
it applies only if the record still carries the generation the job read and exactly
the messages it folded are still active, so a compression that spans a clear, a
forget, a lost lease or a second writer commits nothing more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import attrs

from memory_summary.domain import (
    NO_USAGE,
    Archive,
    CompactionStore,
    Compressing,
    CompressionPlan,
    CompressRequested,
    Message,
    Outcome,
    OutcomeCode,
    Reason,
    Skipped,
    StoreError,
    SummaryConfig,
    is_forced,
    latest_todo_call,
    plan_compression,
    probe_limit,
    should_compress,
)
from memory_summary.domain.events import Event, Status

from .context import ContextPolicy
from .fold import CallPool, Cancelled, CompressionRun
from .leases import LeaseKeeper
from .records import RecordReader
from .summary_model import BreakerBox, ResolvedModel

log = logging.getLogger(__name__)


LEASE_TTL_S = 30.0
"""How long a lease lasts unless renewed. The engine's ``LeaseKeeper`` renews it once a
third of this has passed, for as long as the compression works, so a crashed process
blocks its sessions for at most this long (not at all on its own host: see
``is_dead_owner``)."""
_PLAN_CACHE_SIZE = 256


@attrs.define
class CompressionJob:
    """Runs compressions for every session of one engine.

    Nothing of a session is kept between runs; only compression plans are cached.

    With an archive that lives in the store's own database (``archive.store is
    store``), the separator message commits in the compaction's last transaction.
    """

    store: CompactionStore
    config: SummaryConfig
    emit: Callable[[Event], None]
    calls: CallPool
    is_cancelled: Callable[[], bool]
    resolve: Callable[[str], ResolvedModel | str]
    breakers: BreakerBox
    records: RecordReader
    owner: str
    new_generation: Callable[[], str]
    is_dead_owner: Callable[[str], bool] = lambda owner: False
    counted_by_host: bool = False
    """The host's thread already counted (a local store): skip the job's pre-check."""
    context: ContextPolicy | None = None
    """Token keep, self-measured usage and the loop guard (None: count only)."""
    archive: Archive | None = None
    clock: Callable[[], float] = time.time
    leases: LeaseKeeper = attrs.field(
        default=attrs.Factory(lambda job: LeaseKeeper(job.store), takes_self=True)
    )
    """Keeps held leases alive and retries failed releases."""
    instructions_for: Callable[[str], str] = lambda session_id: ""
    """The host's instructions for a session's next run (taken when the run starts)."""
    _plans: dict[tuple[object, ...], CompressionPlan] = attrs.field(
        factory=dict, init=False
    )

    @property
    def archive_shares_store(self) -> bool:
        """Tell whether separators can commit with the compaction itself."""
        return (
            self.archive is not None
            and getattr(self.archive, "store", None) is self.store
        )

    lease_ttl_s: float = LEASE_TTL_S

    def _acquire(self, session_id: str) -> str | None:
        """Take the session's lease; break it first if its holder is known dead.

        A lease held under this engine's own owner id while none of its compressions
        holds it is an orphan (its release failed, say while the database restarted):
        the engine reclaims it at once instead of waiting for it to expire.
        """
        store = self.store
        self.leases.retry_releases()
        lease = store.acquire_lease(
            session_id, owner=self.owner, ttl_s=self.lease_ttl_s
        )
        if lease is not None:
            return lease
        holder = store.lease_owner(session_id)
        if holder is None:
            return None
        if holder == self.owner and not self.leases.holds_session(session_id):
            log.warning(
                "session %s: reclaiming this engine's own orphaned lease",
                session_id,
                extra={"session_id": session_id},
            )
        elif not self.is_dead_owner(holder):
            return None
        else:
            log.warning(
                "session %s: breaking the lease of %s, a process that no longer runs",
                session_id,
                holder,
                extra={"session_id": session_id},
            )
        store.break_lease(session_id, holder)
        return store.acquire_lease(session_id, owner=self.owner, ttl_s=self.lease_ttl_s)

    def run(self, session_id: str, reason: Reason) -> Outcome:
        """Compress ``session_id`` once; never raises (failures are outcomes).

        Emits ``Compressing`` start, then done or error with the outcome, once the
        compression starts (at once for a forced one), and ``Skipped`` when it ends
        skipped for a ``SkipReason`` (below the threshold is no event).
        """
        began = time.monotonic()
        started = False

        def start() -> None:
            nonlocal started
            if not started:
                started = True
                self.emit(Compressing(session_id, "start", reason))

        def finish(outcome: Outcome) -> Outcome:
            outcome = attrs.evolve(outcome, duration_s=time.monotonic() - began)
            if started or is_forced(reason):
                start()
                status: Status = "done" if outcome.ok else "error"
                self.emit(
                    Compressing(
                        session_id, status, reason, outcome.detail, outcome=outcome
                    )
                )
            skip = outcome.skip_reason
            if skip is not None:
                self.emit(Skipped(session_id, reason, skip, outcome.detail))
            log_outcome(outcome)
            return outcome

        current: CompressionRun | None = None

        def failed(detail: str, code: OutcomeCode) -> Outcome:
            usage = NO_USAGE if current is None else current.usage
            return Outcome(session_id, "failed", reason, detail, code=code, usage=usage)

        if is_forced(reason):
            start()
        try:
            if reason == "turn" and not self._turn_needs_folding(session_id):
                pressed = self._measured_pressure(session_id)
                if pressed is None:
                    return finish(
                        Outcome(
                            session_id,
                            "skipped",
                            reason,
                            "below threshold",
                            code="below_threshold",
                        )
                    )
                self.emit(CompressRequested(session_id, "auto", pressed))
                reason = "auto"
                start()
            resolved = self.resolve(session_id)
            if isinstance(resolved, str):
                start()
                return finish(failed(resolved, "model_unresolved"))
            lease = self._acquire(session_id)
            if lease is None:
                detail = "another worker holds the session's lease"
                return finish(
                    Outcome(session_id, "skipped", reason, detail, code="lease_held")
                )
            self.leases.hold(session_id, lease, self.lease_ttl_s)
            try:
                current = CompressionRun(
                    self,
                    session_id,
                    reason,
                    resolved,
                    lease,
                    start,
                    instructions=self.instructions_for(session_id),
                )
                return finish(current.execute())
            finally:
                self.leases.release(session_id, lease)
        except Cancelled:
            return finish(failed("engine stopped", "engine_stopped"))
        except StoreError as exc:
            log.warning("session %s: store failed: %s", session_id, exc)
            return finish(failed(f"store failed: {exc}", "store_failed"))
        except Exception as exc:  # a bug: the start event still gets its end
            log.exception("session %s: compression crashed", session_id)
            return finish(failed(f"internal error: {exc}", "internal_error"))

    def _turn_needs_folding(self, session_id: str) -> bool:
        """Tell whether a turn reaches the message-count threshold."""
        context = self.context
        if self.counted_by_host and (
            context is None or not context.measures_session(session_id)
        ):
            return True  # the host's thread counted: it only sends what needs it
        count = self.store.count_history(session_id)
        return should_compress(count, self.config, forced=False)

    def _measured_pressure(self, session_id: str) -> float | None:
        """Return the usage ratio when the engine's own measure passes the trigger.

        Measured only with ``context_window`` set and ``auto_compress_threshold`` > 0:
        the injected summary plus the active history, in the chat model's encoding.
        """
        context = self.context
        threshold = self.config.auto_compress_threshold
        if context is None or threshold <= 0:
            return None
        if not context.measures_session(session_id):
            return None
        record = self.records.read(session_id)
        active = self.store.get_history(session_id, limit=probe_limit(self.config))
        measure = context.measure(session_id, record.text if record else None, active)
        if measure is None or measure.ratio < threshold:
            return None
        return measure.ratio

    def plan(
        self, resolved: ResolvedModel, reason: Reason, keep: Sequence[Message]
    ) -> CompressionPlan:
        """Return the compression plan, cached per model, reason and task state."""
        todo = latest_todo_call(keep, self.config.todo_tool_names)
        key = (resolved.context_length, reason, todo, resolved.count_tokens)
        plan = self._plans.get(key)
        if plan is None:
            plan = plan_compression(
                self.config,
                context_length=resolved.context_length,
                reason=reason,
                keep=keep,
                count_tokens=resolved.count_tokens,
            )
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[key] = plan
        return plan


def log_outcome(outcome: Outcome) -> None:
    """Log one line per compression outcome at the level its kind deserves."""
    if outcome.kind == "skipped":
        log.debug("session %s: skipped (%s)", outcome.session_id, outcome.detail)
        return
    level = logging.INFO if outcome.ok else logging.WARNING
    log.log(
        level,
        "session %s: %s (%s), folded %d (%d recovered), archived %d in %d chunk(s)",
        outcome.session_id,
        outcome.kind,
        outcome.detail or outcome.reason,
        outcome.summarized,
        outcome.recovered,
        outcome.archived,
        outcome.chunks,
        extra={"session_id": outcome.session_id},
    )
