"""The executor of one compression: it performs what ``domain.compression`` decides.

``Compressor.run`` builds the compression's frozen ``Setting`` from the session
actor's snapshot, then loops: apply the action's effects (events, breaker, log
lines), perform the action (a read, the deadline-bounded summarizer call, a fenced
commit), and feed the observation back to ``step`` until it says ``Finish``. Every
event of a compression is emitted here, in ``_announce``; every failure of the store
or the summarizer becomes an observation; one guard turns a bug into an
``internal_error`` outcome.

The executor takes the session's lease before it reads under it and releases it at
the end (with the last commit, when one writes a summary); the engine's
``LeaseKeeper`` renews it meanwhile. Every commit is fenced: it
applies only if the record still carries the generation the compression read and
exactly the messages it folded are still active, so a compression that spans a
clear, a forget, a lost lease or a second writer commits nothing more.

(About 460 lines: one executor, one ``perform`` per action, and the fenced commit.
The summarizer call lives in ``summary_call``, taking a lease in ``leases``, the
breakers in ``breakers``, the lineage in ``lineage``.)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import attrs

from memory_summary.domain import (
    NAMESPACE,
    Archive,
    CommitRequest,
    CommitResult,
    CompressionPlan,
    CompressionStore,
    Message,
    NativeRequest,
    Outcome,
    Reason,
    StoreError,
    SummaryConfig,
    SummaryRecord,
    latest_todo_call,
    plan_compression,
    separator_message,
)
from memory_summary.domain.compression import closing_events, start, step
from memory_summary.domain.compression_io import (
    Action,
    ArchivedRead,
    BacklogRead,
    Began,
    Begin,
    Cancelled,
    Commit,
    Committed,
    Effects,
    Fenced,
    Finish,
    LeaseHeld,
    Measure,
    Measured,
    Observation,
    ReadArchived,
    ReadBacklog,
    ReadRecord,
    ReadWindow,
    RecordRead,
    Setting,
    StoreFailed,
    Summarize,
    SummaryModel,
    Unresolved,
    WindowRead,
)
from memory_summary.domain.events import Event
from memory_summary.domain.folding import OutcomeKind

from .breakers import BreakerBox
from .context import ContextPolicy
from .events import log_outcome
from .leases import LeaseKeeper
from .lineage import LineageWriter, VersionEntries
from .messages import CompressionFinished
from .records import RecordReader
from .session_facts import NO_FACTS, SessionFacts
from .summary_call import CallPool, summarize
from .summary_model import ModelResolver, ResolvedModel

log = logging.getLogger(__name__)

LEASE_TTL_S = 30.0
"""How long a lease lasts unless renewed. The engine's ``LeaseKeeper`` renews it once a
third of this has passed, for as long as the compression works, so a crashed process
blocks its sessions for at most this long (not at all on its own host: see
``is_dead_owner``)."""
_PLAN_CACHE_SIZE = 256


@attrs.frozen
class CompressionRequest:
    """What a session actor hands over: the reason and a snapshot of its session."""

    session_id: str
    reason: Reason
    facts: SessionFacts = NO_FACTS
    instructions: str = ""


@attrs.define
class Compressor:
    """Runs compressions for every session of one engine; holds no session state.

    With an archive that lives in the store's own database (``archive.store is
    store``), the separator message commits in the compression's last transaction.
    """

    store: CompressionStore
    config: SummaryConfig
    emit: Callable[[Event], None]
    calls: CallPool
    is_cancelled: Callable[[], bool]
    resolver: ModelResolver
    breakers: BreakerBox
    records: RecordReader
    owner: str
    new_generation: Callable[[], str]
    context: ContextPolicy
    is_dead_owner: Callable[[str], bool] = lambda owner: False
    archive: Archive | None = None
    clock: Callable[[], float] = time.time
    leases: LeaseKeeper = attrs.field(
        default=attrs.Factory(lambda c: LeaseKeeper(c.store), takes_self=True)
    )
    """Keeps held leases alive and retries failed releases."""
    lease_ttl_s: float = LEASE_TTL_S
    _plans: dict[tuple[object, ...], CompressionPlan] = attrs.field(
        factory=dict, init=False
    )
    lineage_entries: VersionEntries = attrs.field(factory=VersionEntries)
    """The lineage's version entries last written, reused by the next write."""

    commit: Callable[[CommitRequest], CommitResult] = attrs.field(
        default=attrs.Factory(lambda c: c.store.commit, takes_self=True)
    )
    """Applies a fenced commit: the store's ``commit``, or for a store with only the
    deprecated ``commit_compaction`` an adapter the engine wires."""
    archive_shares_store: bool = False
    """Separators commit with the compression itself: the archive lives in the
    store's own database (``ArchiveCapabilities.shares_store``)."""

    def run(self, request: CompressionRequest) -> CompressionFinished:
        """Compress one session once; never raises (failures are outcomes)."""
        began = time.monotonic()
        sid, facts = request.session_id, request.facts
        setting = Setting(
            session_id=sid,
            reason=request.reason,
            config=self.config,
            measured=self.context.measures and not facts.host_reports,
            guard=facts.guard,
            instructions=request.instructions,
            context=self.context.chat_context(sid, facts.model),
            system=facts.system,
            tools=facts.tools,
        )
        run = _Run(self, request)
        state, action = start(setting)
        try:
            while not isinstance(action, Finish):
                self._apply(sid, action.effects, run.resolved)
                state, action = step(state, run.perform(action))
                if not isinstance(action, Finish):  # (the run ends within microseconds)
                    time.sleep(0)  # hands the GIL to a waiting thread (a host's loop)
        except Exception as exc:  # a bug: the start event still gets its end
            log.exception("session %s: compression crashed", sid)
            outcome = Outcome(
                sid,
                "failed",
                state.reason,
                f"internal error: {exc}",
                code="internal_error",
                usage=state.tally.usage,
            )
            action = Finish(outcome, state.tally.started)
        try:
            self._apply(sid, action.effects, run.resolved)
            outcome = attrs.evolve(action.outcome, duration_s=time.monotonic() - began)
            self._announce(closing_events(outcome, action.started))
            log_outcome(outcome)
        finally:
            run.release()
        return CompressionFinished(
            outcome,
            pressed=action.pressed,
            guard_changed=action.guard_changed,
            guard=action.guard,
        )

    def _apply(
        self, session_id: str, effects: Effects, resolved: ResolvedModel | None
    ) -> None:
        """Log the notes, record the breaker's verdict, announce the events."""
        for level, note in effects.notes:
            log.log(
                logging.INFO if level == "info" else logging.WARNING,
                "session %s: %s",
                session_id,
                note,
                extra={"session_id": session_id},
            )
        if effects.breaker is not None and resolved is not None:
            if effects.breaker == "succeeded":
                self.breakers.succeeded(resolved.llm)
            else:
                self.breakers.failed(resolved.llm)
        self._announce(effects.events)

    def _announce(self, events: Sequence[Event]) -> None:
        """Emit a compression's events: the one place that does."""
        for event in events:
            self.emit(event)

    def plan(
        self,
        resolved: ResolvedModel,
        reason: Reason,
        keep: Sequence[Message],
        instructions: str,
    ) -> CompressionPlan:
        """Return the plan, cached per model, reason, task state and instructions."""
        todo = latest_todo_call(keep, self.config.todo_tool_names)
        key = (
            resolved.context_length,
            reason,
            todo,
            instructions,
            resolved.count_tokens,
        )
        plan = self._plans.get(key)
        if plan is None:
            plan = plan_compression(
                self.config,
                context_length=resolved.context_length,
                reason=reason,
                keep=keep,
                count_tokens=resolved.count_tokens,
                instructions=instructions,
            )
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[key] = plan
        return plan


class _Run:
    """The effects of one compression: its lease, its model, its lineage."""

    def __init__(self, compressor: Compressor, request: CompressionRequest) -> None:
        self._c = compressor
        self._request = request
        self._sid = request.session_id
        self.resolved: ResolvedModel | None = None
        self._lease: str | None = None
        self._lineage: LineageWriter | None = None

    def perform(self, action: Action) -> Observation:
        """Perform ``action``; return what was observed (a store failure too)."""
        try:
            return self._perform(action)
        except StoreError as exc:
            log.warning("session %s: store failed: %s", self._sid, exc)
            return StoreFailed(str(exc))

    def _perform(self, action: Action) -> Observation:
        c, sid = self._c, self._sid
        match action:
            case Measure(limit=limit):
                record = c.records.read(sid)
                tail = _stored(c.store.get_history(sid, limit=limit))
                active = len(tail) if len(tail) < limit else c.store.count_history(sid)
                return Measured(record, tail, active)
            case Begin():
                return self._begin()
            case ReadRecord(window=int(limit)):
                record, window = c.records.read_with_window(sid, limit)
                return RecordRead(record, self._window_read(window, limit))
            case ReadRecord():
                return RecordRead(c.records.read(sid, quarantine=True))
            case ReadArchived(after_id=after, through_id=through, limit=limit):
                page = c.store.get_archived(
                    sid, after_id=after, through_id=through, limit=limit
                )
                return ArchivedRead(_stored(page))
            case ReadWindow(limit=limit):
                return self._window_read(c.store.get_history(sid, limit=limit), limit)
            case ReadBacklog(after_id=after, limit=limit):
                return BacklogRead(
                    _stored(c.store.get_oldest_history(sid, limit, after_id=after))
                )
            case Summarize(request=request, max_tokens=max_tokens, native=native):
                return self._summarize(request, max_tokens, native)
            case Commit():
                return self._commit(action)
        raise TypeError(f"unknown action {action!r}")  # pragma: no cover

    def _window_read(self, window: Sequence[Message], limit: int) -> WindowRead:
        """Return the window read, the active count and the breaker's state now."""
        c, tail = self._c, _stored(window)
        active = len(tail) if len(tail) < limit else c.store.count_history(self._sid)
        assert self.resolved is not None
        return WindowRead(tail, active, c.breakers.is_open(self.resolved.llm))

    def _begin(self) -> Observation:
        c = self._c
        resolved = c.resolver.resolution(self._request.facts.model)
        if not isinstance(resolved, ResolvedModel):
            return Unresolved(resolved.reason)
        self.resolved = resolved
        lease = c.leases.acquire(
            self._sid, c.owner, c.lease_ttl_s, is_dead_owner=c.is_dead_owner
        )
        if lease is None:
            return LeaseHeld()
        self._lease = lease
        c.leases.hold(self._sid, lease, c.lease_ttl_s)

        def plan(
            reason: Reason, keep: Sequence[Message], instructions: str
        ) -> CompressionPlan:
            return c.plan(resolved, reason, keep, instructions)

        return Began(
            SummaryModel(
                resolved.label,
                resolved.count_tokens,
                plan,
                estimate_usage=resolved.usage_tokens,
                native=resolved.compacts,
            )
        )

    def release(self) -> None:
        """Release the lease, if one is held."""
        if self._lease is not None:
            self._c.leases.release(self._sid, self._lease)
            self._lease = None

    def _lost(self) -> bool:
        return self._lease is not None and self._c.leases.is_lost(self._lease)

    def _summarize(
        self,
        request: Sequence[Message],
        budget: int,
        native: NativeRequest | None = None,
    ) -> Observation:
        c, resolved = self._c, self.resolved
        assert resolved is not None
        return summarize(
            resolved,
            request,
            budget,
            calls=c.calls,
            breakers=c.breakers,
            timeout_s=c.config.summarizer_timeout_s,
            is_cancelled=c.is_cancelled,
            lost=self._lost,
            native=native,
        )

    def _commit(self, action: Commit) -> Observation:
        """Commit one fenced step; a compression's final step writes its separator.

        The same commit writes the summary's new lineage version and, on the final
        step, drops the lease.
        """
        c, sid = self._c, self._sid
        if c.is_cancelled():
            return Cancelled()
        lease = self._lease
        if lease is None:  # dropped by a final commit: nothing may follow it
            return Fenced("lease")
        record = attrs.evolve(
            action.record, generation=c.new_generation(), updated_at=c.clock()
        )
        final = action.final
        shared = final is not None and c.archive_shares_store

        def separator(archived: int) -> Message | None:
            assert final is not None
            return self._separator(final, action.archived_before + archived)

        result = self._fenced_commit(
            action, record, lease, separator if shared else None
        )
        if result.fenced is not None:
            return Fenced(result.fenced)
        if final is not None and c.archive is not None and not shared:
            marker = self._separator(final, action.archived_before + result.archived)
            if marker is not None:
                try:
                    c.archive.save_message(sid, marker)
                except Exception:  # the archive is optional: it never undoes a commit
                    log.exception("session %s: writing the separator failed", sid)
        return Committed(record, result.archived)

    def _fenced_commit(
        self,
        action: Commit,
        record: SummaryRecord,
        lease: str,
        separator: Callable[[int], Message | None] | None,
    ) -> CommitResult:
        """Commit ``record`` and its lineage version; the final commit drops the lease.

        In one transaction on every shipped store (``CommitRequest``).
        """
        pending = None
        if action.version is not None:
            pending = self._writer().prepare(action.previous, record, *action.version)
        result = self._c.commit(
            CommitRequest(
                session_id=self._sid,
                namespace=NAMESPACE,
                record=record.to_mapping(),
                expect_generation=action.expect_generation,
                through_id=action.through_id,
                expect_archived=action.expect_archived,
                lease=lease,
                separator=separator,
                attach=None if pending is None else pending.attach,
                release_lease=action.final is not None,
            )
        )
        if result.released:  # else the lease is released when the run ends
            self._c.leases.dropped(lease)
            self._lease = None
        if result.committed and pending is not None:
            self._writer().landed(pending, written=result.attached)
        return result

    def _writer(self) -> LineageWriter:
        """Return this compression's lineage writer (made at its first version)."""
        if self._lineage is None:
            c = self._c
            self._lineage = LineageWriter(
                c.store,
                self._sid,
                c.config.summary_versions_kept,
                c.new_generation,
                c.lineage_entries,
            )
        return self._lineage

    def _separator(self, kind: OutcomeKind, archived: int) -> Message | None:
        request = self._request
        outcome = Outcome(request.session_id, kind, request.reason, archived=archived)
        return separator_message(
            outcome, locale=self._c.config.locale, now=self._c.clock()
        )


def _stored(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Return messages read from the store; one without an id means a broken store."""
    if any(m.id is None for m in messages):
        raise StoreError("the store returned a message without an id")
    return tuple(messages)
