"""One compression while it runs: recover, fold chunk after chunk, commit, account.

``compression.CompressionJob`` decides whether a session compresses and holds its lease;
``CompressionRun`` does the work under it. Every commit is fenced (see
``compression``); the summarizer is called off the job's thread with a deadline and a
lease heartbeat.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError as FuturesCancelled
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Literal, Protocol

import attrs

from memory_summary.domain import (
    NAMESPACE,
    NO_USAGE,
    Accepted,
    Archive,
    CompactionStore,
    CompressionPlan,
    FenceReason,
    FoldChunk,
    Message,
    Outcome,
    OutcomeCode,
    Reason,
    StoreError,
    SummarizerContextError,
    SummarizerError,
    SummarizerTimeout,
    SummarizerUsage,
    SummaryConfig,
    SummaryRecord,
    SummaryReply,
    WindowSplit,
    check_summary,
    counted_usage,
    drop_unsummarized_through,
    fold_chunks,
    is_forced,
    is_pressed,
    message_tokens,
    next_record,
    probe_limit,
    resummarized_record,
    separator_message,
    should_compress,
    split_window,
    summary_request,
    trimmed_record,
    truncate_to_tokens,
    with_pins,
)
from memory_summary.domain.compaction import OVERSIZED_SUFFIX, OutcomeKind

from .context import ContextPolicy
from .lineage import LineageWriter
from .records import RecordReader
from .summary_model import BreakerBox, CallHandle, ResolvedModel

log = logging.getLogger(__name__)

TEMPERATURE = 0.3  # seed: summaries are mechanical
WAIT_SLICE_S = 0.25
"""How often a job waiting for its summarizer looks whether the engine is stopping."""


class CallPool(Protocol):
    """Runs summarizer calls off the job's thread (``workers.WorkerPool``)."""

    def submit(
        self, fn: Callable[..., SummaryReply], /, *args: object
    ) -> Future[SummaryReply]: ...


class Job(Protocol):
    """What a run needs of the job that started it (``compression.CompressionJob``)."""

    store: CompactionStore
    config: SummaryConfig
    calls: CallPool
    is_cancelled: Callable[[], bool]
    breakers: BreakerBox
    records: RecordReader
    new_generation: Callable[[], str]
    context: ContextPolicy | None
    archive: Archive | None
    clock: Callable[[], float]
    lease_ttl_s: float

    @property
    def archive_shares_store(self) -> bool: ...

    def plan(
        self, resolved: ResolvedModel, reason: Reason, keep: Sequence[Message]
    ) -> CompressionPlan: ...


class Cancelled(Exception):
    """The engine is stopping: commit nothing more."""


class Fenced(Exception):
    """A fenced commit applied nothing; ``reason`` says which check failed."""

    def __init__(self, reason: FenceReason) -> None:
        super().__init__(reason)
        self.reason = reason


class KeepHistory(Exception):
    """The summarizer failed and ``on_summarizer_failure="keep"``: archive nothing."""


FailureCode = Literal["summarizer_failed", "summary_rejected", "breaker_open"]


@attrs.frozen
class Failed:
    """Why a chunk got no summary: a code and the words for it."""

    code: FailureCode
    detail: str


FENCE_DETAILS: dict[FenceReason, str] = {
    "generation": "the summary changed meanwhile (a clear, a forget or another writer)",
    "archive": "the active history changed meanwhile (a trim, a forget or a writer)",
    "lease": "the session's lease was lost (expired, or taken after a restart)",
}


def with_last(items: Iterator[FoldChunk]) -> Iterator[tuple[FoldChunk, bool]]:
    """Yield each item with whether it is the last one."""
    previous = next(items, None)
    for item in items:
        yield previous, False  # type: ignore[misc]
        previous = item
    if previous is not None:
        yield previous, True


def message_id(message: Message) -> int:
    """Return a stored message's id; a store that returned none is broken."""
    if message.id is None:
        raise StoreError("the store returned a message without an id")
    return message.id


@attrs.define
class CompressionRun:
    """The state of one compression while it folds chunk after chunk."""

    job: Job
    session_id: str
    reason: Reason
    resolved: ResolvedModel
    lease: str
    start: Callable[[], None]
    renewed_at: float = attrs.field(factory=time.monotonic)
    record: SummaryRecord | None = None
    tail: Sequence[Message] = ()
    failure: Failed | None = None
    paused: str | None = None  # why recovering archived ranges stopped
    fenced: FenceReason | None = None
    archived: int = 0
    summarized: int = 0
    recovered: int = 0
    chunks: int = 0
    calls: int = 0
    usage: SummarizerUsage = NO_USAGE  # this compression's summarizer calls
    call_durations_s: list[float] = attrs.field(factory=list)
    uncommitted: SummarizerUsage = NO_USAGE  # of which no commit recorded yet
    archived_through: int | None = None
    tokens_before: int | None = None
    window_tokens: tuple[tuple[int, int], ...] = ()  # (id, tokens) of the window
    lineage: LineageWriter | None = None

    def execute(self) -> Outcome:
        """Recover, then fold; return what happened."""
        job, sid = self.job, self.session_id
        try:
            self.record = job.records.read(sid, quarantine=True)
            summary_tokens = self.record.tokens if self.record is not None else 0
            if (
                self.record is not None
                and self.record.unsummarized
                and self.reason != "overflow"  # waits for nothing: recover later
            ):
                self._recover()
            probe = probe_limit(job.config)
            self.tail = job.store.get_history(sid, limit=probe)
            active = (
                len(self.tail)
                if len(self.tail) < probe
                else job.store.count_history(sid)
            )
            split = self._split_window()
            forced = is_forced(self.reason)
            if not forced and not should_compress(active, job.config, forced=False):
                return self._outcome("nothing to compress", "below_threshold")
            if not split.fold:
                return self._outcome("nothing to compress", "nothing_to_fold")
            guarded = self._guarded(split.keep)
            if guarded is not None:
                return self._outcome(guarded, "loop_guard")
            if (
                not forced
                and job.config.on_summarizer_failure == "keep"
                and job.breakers.is_open(self.resolved.llm)
            ):  # keep mode could only fail: leave the session as it is
                return self._outcome("summarizer circuit open", "breaker_open")
            self.start()
            cost = self._cost()
            self.window_tokens = tuple((message_id(m), cost(m)) for m in self.tail)
            self.tokens_before = summary_tokens + sum(t for _, t in self.window_tokens)
            log.debug(
                "session %s: window %d, fold %d, keep %d, active %d",
                sid,
                len(self.tail),
                len(split.fold),
                len(split.keep),
                active,
                extra={"session_id": sid},
            )
            plan = job.plan(self.resolved, self.reason, split.keep)
            whole = active == len(self.tail)
            boundary = message_id(split.fold[-1])
            pages = iter([split.fold]) if whole else self._backlog_pages(boundary)
            for chunk, last in with_last(self._chunks(pages, plan)):
                self._fold(chunk, plan, last=last, halvable=True)
            self._after_fold(split.keep)
        except Fenced as exc:
            self.fenced = exc.reason
        except KeepHistory:
            pass
        return self._outcome("summary written", "nothing_to_fold")

    # -- the keep and the loop guard ---------------------------------------------

    def _cost(self) -> Callable[[Message], int]:
        """Return what a message costs in the chat model's encoding (cached by id)."""
        context = self.job.context
        if context is not None:
            return context.cost(self.session_id)
        count = self.resolved.count_tokens
        return lambda message: message_tokens(message, count)

    def _split_window(self) -> WindowSplit:
        """Split the tail by count and tokens; an overflow keeps by tokens only."""
        job, sid = self.job, self.session_id
        context = job.context
        keep_tokens = None if context is None else context.keep_tokens(sid)
        keep_recent: int | None = job.config.keep_recent
        cost = self._cost()
        if self.reason == "overflow":
            split = split_window(
                self.tail, None, keep_tokens=keep_tokens or 0, cost=cost
            )
            if split.fold or not keep_tokens:
                return split
            # The host's call overflowed although the history fits the keep (its
            # prompt and tools fill the window): fold all but the newest group.
            return split_window(self.tail, None, keep_tokens=0, cost=cost)
        return split_window(
            self.tail,
            keep_recent,
            keep_tokens=keep_tokens,
            cost=None if context is None else cost,
        )

    def _guarded(self, keep: Sequence[Message]) -> str | None:
        """Return why an ``auto`` compression is pointless now, or None to go on.

        After a pressed compression that could not bring the session under its
        trigger, the next ``auto`` waits until enough new tokens arrived.
        """
        context = self.job.context
        if self.reason != "auto" or context is None:
            return None
        guard = context.guard(self.session_id)
        if guard is None:
            return None
        cost = context.cost(self.session_id)
        if not guard.holds(
            ((message_id(m), cost(m)) for m in self.tail), self._kept_tokens(keep)
        ):
            return None
        return (
            "loop guard: the kept part alone is over the trigger; waiting for "
            f"{guard.enough_tokens} new tokens"
        )

    def _kept_tokens(self, keep: Sequence[Message]) -> int:
        """Return what the session holds after folding: the summary and ``keep``."""
        context = self.job.context
        assert context is not None
        summary = self.record.text if self.record else None
        cost = context.cost(self.session_id)
        return context.summary_tokens(self.session_id, summary) + sum(map(cost, keep))

    def _after_fold(self, keep: Sequence[Message]) -> None:
        """Set or lift the loop guard after a fold, by what it kept."""
        context = self.job.context
        if context is None or not self.tail or not (self.summarized or self.archived):
            return
        if not is_pressed(self.reason):
            return  # a count trigger keeps the guard: the kept part is the same
        kept = self._kept_tokens(keep)
        guard = context.after_pressed(
            self.session_id, tip_id=message_id(self.tail[-1]), kept_tokens=kept
        )
        if guard is not None:
            log.info(
                "session %s: the kept part (%d tokens) is over the trigger; the next "
                "auto compression waits for %d new tokens",
                self.session_id,
                kept,
                guard.enough_tokens,
                extra={"session_id": self.session_id},
            )

    # -- reading -----------------------------------------------------------------

    def _chunks(
        self, pages: Iterator[Sequence[Message]], plan: CompressionPlan
    ) -> Iterator[FoldChunk]:
        for page in pages:
            yield from self._split(page, plan.input_limit_tokens)

    def _split(
        self,
        page: Sequence[Message],
        limit_tokens: int,
        max_count: int | None = None,
    ) -> list[FoldChunk]:
        config = self.job.config
        return fold_chunks(
            page,
            lookup=[*page, *self.tail],
            locale=config.locale,
            cut_chars=config.truncate_chars,
            count_tokens=self.resolved.count_tokens,
            limit_tokens=limit_tokens,
            max_count=max_count or probe_limit(config),
        )

    def _halves(self, chunk: FoldChunk, plan: CompressionPlan) -> list[FoldChunk]:
        """Re-split a chunk the model found too long: half its messages and tokens."""
        count = self.resolved.count_tokens
        tokens = sum(count(line) for line in chunk.transcript)
        limit = max(min(tokens, plan.input_limit_tokens) // 2, 1)
        return self._split(
            chunk.messages, limit, max((len(chunk.messages) + 1) // 2, 1)
        )

    def _backlog_pages(self, boundary_id: int) -> Iterator[Sequence[Message]]:
        """Yield the oldest active messages up to ``boundary_id``, window by window."""
        cursor: int | None = None
        while True:
            oldest = self.job.store.get_oldest_history(
                self.session_id, probe_limit(self.job.config), after_id=cursor
            )
            page = [m for m in oldest if message_id(m) <= boundary_id]
            if not page:
                return
            cursor = message_id(page[-1])
            yield page

    # -- folding the active history ------------------------------------------------

    def _fold(
        self, chunk: FoldChunk, plan: CompressionPlan, *, last: bool, halvable: bool
    ) -> None:
        if self.failure is not None:
            self._trim(chunk, last=last)
            return
        if not chunk.transcript:
            self._commit_fold(chunk, None, last=last)
            return
        try:
            result = self._summary_of(chunk, plan)
        except SummarizerContextError as exc:
            if halvable:
                smaller = self._halves(chunk, plan)
                log.warning(
                    "session %s: context exceeded, retrying %d message(s) in %d "
                    "smaller chunk(s)",
                    self.session_id,
                    len(chunk.messages),
                    len(smaller),
                    extra={"session_id": self.session_id},
                )
                for index, sub in enumerate(smaller):
                    is_last = last and index == len(smaller) - 1
                    self._fold(sub, plan, last=is_last, halvable=False)
                return
            result = Failed("summarizer_failed", f"summarizer failed: {exc}")
        if isinstance(result, Failed):
            self.failure = result
            # seed: a failed summary still trims, or the session loops on retries;
            # the previous summary stays and a partial text is never stored.
            log.warning(
                "session %s: %s; %s",
                self.session_id,
                result.detail,
                "keeping the history active"
                if self.job.config.on_summarizer_failure == "keep"
                else "archiving without a summary (recorded for recovery)",
                extra={"session_id": self.session_id},
            )
            self._trim(chunk, last=last)
            return
        self._commit_fold(chunk, result, last=last)

    def _commit_fold(
        self, chunk: FoldChunk, summary: Accepted | None, *, last: bool
    ) -> None:
        job = self.job
        record = next_record(
            self.record,
            text=summary.text if summary else "",
            tokens=summary.tokens if summary else 0,
            chunk=chunk,
            model=self.resolved.label,
            now=job.clock(),
            generation=job.new_generation(),
        )
        before = self.record
        self._commit(record, chunk, "compressed" if last else None)
        self._versioned(before, message_id(chunk.messages[0]), chunk.through_id)
        self.summarized += len(chunk.messages)
        self.chunks += 1

    def _trim(self, chunk: FoldChunk, *, last: bool) -> None:
        job = self.job
        if job.config.on_summarizer_failure == "keep":
            raise KeepHistory
        record = trimmed_record(
            self.record,
            first_id=message_id(chunk.messages[0]),
            last_id=chunk.through_id,
            generation=job.new_generation(),
            now=job.clock(),
        )
        self._commit(record, chunk, "trimmed" if last else None)
        self.chunks += 1

    # -- recovering ranges archived without a summary --------------------------------

    def _recover(self) -> None:
        """Fold every range archived without a summary into it, oldest first.

        Stops at the first failure: the ranges left stay recorded for the next try.
        """
        job, sid = self.job, self.session_id
        plan = job.plan(self.resolved, self.reason, ())
        limit = probe_limit(job.config)
        while self.record is not None and self.record.unsummarized:
            first, last = before = self.record.unsummarized[0]
            page = job.store.get_archived(
                sid, after_id=first - 1, through_id=last, limit=limit
            )
            if not page:  # forgotten, or the range's tail: nothing left to fold
                self._commit(self._dropped(last), None, None)
                continue
            self.start()
            for chunk in self._split(page, plan.input_limit_tokens):
                if not self._recover_chunk(chunk, plan, halvable=True):
                    return
            if self.record.unsummarized[:1] == (before,):  # pragma: no cover - guard
                raise StoreError(
                    "recovery made no progress; the record is inconsistent"
                )

    def _recover_chunk(
        self, chunk: FoldChunk, plan: CompressionPlan, *, halvable: bool
    ) -> bool:
        """Fold one archived chunk into the summary; False when recovery pauses."""
        job, sid = self.job, self.session_id
        if not chunk.transcript:
            self._commit(self._dropped(chunk.through_id), None, None)
            return True
        try:
            result = self._summary_of(chunk, plan)
        except SummarizerContextError as exc:
            if halvable:
                return all(
                    self._recover_chunk(sub, plan, halvable=False)
                    for sub in self._halves(chunk, plan)
                )
            result = Failed("summarizer_failed", f"summarizer failed: {exc}")
        if isinstance(result, Failed):
            self.paused = result.detail
            log.warning(
                "session %s: recovery paused: %s",
                sid,
                result.detail,
                extra={"session_id": sid},
            )
            return False
        assert self.record is not None
        record = resummarized_record(
            self.record,
            text=result.text,
            tokens=result.tokens,
            through_id=chunk.through_id,
            folded=len(chunk.messages),
            model=self.resolved.label,
            generation=job.new_generation(),
            now=job.clock(),
        )
        before = self.record
        self._commit(record, None, None)
        self._versioned(before, message_id(chunk.messages[0]), chunk.through_id)
        self.recovered += len(chunk.messages)
        self.summarized += len(chunk.messages)
        return True

    def _dropped(self, through_id: int) -> SummaryRecord:
        assert self.record is not None
        return attrs.evolve(
            self.record,
            unsummarized=drop_unsummarized_through(
                self.record.unsummarized, through_id
            ),
            generation=self.job.new_generation(),
            updated_at=self.job.clock(),
        )

    # -- the summarizer ------------------------------------------------------------

    def _summary_of(self, chunk: FoldChunk, plan: CompressionPlan) -> Accepted | Failed:
        """Return the validated summary of ``chunk``, or why there is none.

        Every admission by the breaker is answered: a success, a failure, or (when
        no answer came: a lost lease, a stop, a store failure) handed back.

        Raises:
            SummarizerContextError: the request was too long for the model.
        """
        job, llm = self.job, self.resolved.llm
        if job.is_cancelled():
            raise Cancelled
        if not job.breakers.admit(llm):
            return Failed("breaker_open", "summarizer circuit open")
        answered = False
        try:
            previous = self._previous_text(plan)
            request = summary_request(
                chunk.transcript,
                previous_summary=previous,
                todo=plan.todo,
                system=plan.system,
                locale=job.config.locale,
            )
            self._keep_lease()
            try:
                reply = self._call(request, plan.summary_tokens)
            except SummarizerContextError:
                answered = True
                job.breakers.succeeded(llm)  # the endpoint answered: it is up
                raise
            except SummarizerError as exc:
                answered = True
                job.breakers.failed(llm)
                return Failed("summarizer_failed", f"summarizer failed: {exc}")
            answered = True
            verdict = check_summary(
                reply,
                transcript=chunk.transcript,
                previous=previous,
                budget_tokens=plan.summary_tokens,
                count_tokens=self.resolved.count_tokens,
                locale=job.config.locale,
            )
            if not isinstance(verdict, Accepted):
                job.breakers.failed(llm)
                return Failed(
                    "summary_rejected",
                    f"summary rejected ({verdict.reason}): {verdict.detail}",
                )
            job.breakers.succeeded(llm)
            return self._pinned(verdict, chunk, previous, plan)
        finally:
            if not answered:
                job.breakers.released(llm)

    def _previous_text(self, plan: CompressionPlan) -> str | None:
        """Return the previous summary as sent: one from elsewhere is cut to budget."""
        previous = self.record.text if self.record and self.record.text else None
        if previous is not None and len(previous.encode()) > plan.budget_tokens:
            # Bytes bound tokens: only a summary longer in bytes may need the count.
            previous = truncate_to_tokens(
                previous,
                plan.budget_tokens,
                self.resolved.count_tokens,
                OVERSIZED_SUFFIX,
            )
        return previous

    def _pinned(
        self,
        verdict: Accepted,
        chunk: FoldChunk,
        previous: str | None,
        plan: CompressionPlan,
    ) -> Accepted:
        """Return the summary with the identifiers it lost re-attached (pin_facts)."""
        config = self.job.config
        if not config.pin_facts:
            return verdict
        count = self.resolved.count_tokens
        text = with_pins(
            verdict.text,
            transcript=chunk.transcript,
            previous=previous,
            budget_tokens=plan.summary_tokens,
            count_tokens=count,
            locale=config.locale,
        )
        return verdict if text == verdict.text else Accepted(text, count(text), True)

    def _keep_lease(self) -> None:
        """Renew the lease once a third of its time has passed; raise if it is lost."""
        job = self.job
        now = time.monotonic()
        if now - self.renewed_at <= job.lease_ttl_s / 3:
            return
        if not job.store.renew_lease(
            self.session_id, self.lease, ttl_s=job.lease_ttl_s
        ):
            raise Fenced("lease")
        self.renewed_at = now

    def _call(self, request: Sequence[Message], budget: int) -> str:
        job = self.job
        timeout_s = job.config.summarizer_timeout_s
        began = time.monotonic()
        deadline = began + timeout_s
        handle = CallHandle()
        self.calls += 1
        try:
            future = job.calls.submit(
                self.resolved.call, request, budget, TEMPERATURE, deadline, handle
            )
        except RuntimeError as exc:  # the pool is shut down: the engine is stopping
            raise Cancelled from exc
        while True:
            remaining = deadline - time.monotonic()
            try:
                self._keep_lease()  # a heartbeat while the model works
            except Fenced:
                handle.close()
                raise
            try:
                reply = future.result(timeout=max(min(remaining, WAIT_SLICE_S), 0))
            except FuturesCancelled as exc:  # cancelled by the pool's shutdown
                raise Cancelled from exc
            except FuturesTimeout as exc:
                if job.is_cancelled():
                    handle.close()
                    raise Cancelled from exc
                if remaining <= WAIT_SLICE_S:
                    handle.close()  # frees the connection; the thread ends with it
                    future.cancel()
                    raise SummarizerTimeout(
                        f"no summary within {timeout_s:g} s"
                    ) from exc
            else:
                self._account(request, reply, time.monotonic() - began)
                return reply.text

    def _account(
        self, request: Sequence[Message], reply: SummaryReply, seconds: float
    ) -> None:
        """Add one answered call's usage: the provider's, else counted, and marked."""
        usage = reply.usage
        counted = usage is None
        if usage is None:
            usage = counted_usage(request, reply.text, self.resolved.count_tokens)
        call = NO_USAGE.with_call(usage, counted=counted, seconds=seconds)
        self.call_durations_s.append(seconds)
        self.usage = self.usage.plus(call)
        self.uncommitted = self.uncommitted.plus(call)

    # -- committing ----------------------------------------------------------------

    def _commit(
        self, record: SummaryRecord, chunk: FoldChunk | None, final: OutcomeKind | None
    ) -> None:
        """Commit one fenced step; a compression's final step writes its separator."""
        if self.job.is_cancelled():
            raise Cancelled
        job = self.job
        shared = final is not None and job.archive_shares_store
        record = attrs.evolve(record, usage=record.usage.plus(self.uncommitted))

        def separator(archived: int) -> Message | None:
            assert final is not None
            return self._separator(final, self.archived + archived)

        result = job.store.commit_compaction(
            self.session_id,
            namespace=NAMESPACE,
            record=record.to_mapping(),
            expect_generation=None
            if self.record is None
            else self.record.generation or "",
            through_id=None if chunk is None else chunk.through_id,
            expect_archived=0 if chunk is None else len(chunk.messages),
            lease=self.lease,
            separator=separator if shared else None,
        )
        if result.fenced is not None:
            raise Fenced(result.fenced)
        self.record = record
        self.uncommitted = NO_USAGE
        self.archived += result.archived
        if chunk is not None:
            self.archived_through = max(self.archived_through or 0, chunk.through_id)
        if final is not None and job.archive is not None and not shared:
            marker = self._separator(final, self.archived)
            if marker is not None:
                try:
                    job.archive.save_message(self.session_id, marker)
                except Exception:  # the archive is optional: it never undoes a commit
                    log.exception(
                        "session %s: writing the separator failed", self.session_id
                    )

    def _versioned(
        self, before: SummaryRecord | None, first_id: int, last_id: int
    ) -> None:
        """Append the summary just committed to the lineage, if it is a new version."""
        if self.record is None:  # pragma: no cover - a commit just stored one
            return
        if self.lineage is None:
            self.lineage = LineageWriter(
                self.job.store,
                self.session_id,
                self.lease,
                self.job.config.summary_versions_kept,
                self.job.new_generation,
            )
        self.lineage.written(before, self.record, first_id, last_id)

    def _separator(self, kind: OutcomeKind, archived: int) -> Message | None:
        outcome = Outcome(self.session_id, kind, self.reason, archived=archived)
        return separator_message(
            outcome, locale=self.job.config.locale, now=self.job.clock()
        )

    def _commit_usage(self) -> None:
        """Record usage no commit carried (say, a rejected reply in keep mode)."""
        if self.uncommitted.calls == 0 or self.fenced is not None:
            return
        base = self.record or SummaryRecord(text="", covered_through_id=None, tokens=0)
        record = attrs.evolve(
            base, generation=self.job.new_generation(), updated_at=self.job.clock()
        )
        try:
            self._commit(record, None, None)
        except (Fenced, Cancelled):  # cleared, forgotten or stopping: usage goes too
            log.debug("session %s: usage not recorded", self.session_id)
        except StoreError as exc:
            log.warning("session %s: recording usage failed: %s", self.session_id, exc)

    def _tokens_after(self) -> int | None:
        """Return the active context's tokens now: the summary and what stayed."""
        if self.tokens_before is None:
            return None
        through = self.archived_through
        kept = sum(t for i, t in self.window_tokens if through is None or i > through)
        return (self.record.tokens if self.record is not None else 0) + kept

    def _outcome(self, done: str, skipped: OutcomeCode) -> Outcome:
        """Return what happened; first record usage no commit carried yet."""
        self._commit_usage()
        kind: OutcomeKind
        code: OutcomeCode
        if self.fenced is not None:
            kind, detail = "fenced", f"commit fenced: {FENCE_DETAILS[self.fenced]}"
            code = "fenced"
        elif self.failure is not None:
            trimmed = self.job.config.on_summarizer_failure == "trim" and self.archived
            kind = "trimmed" if trimmed else "failed"
            detail, code = self.failure.detail, self.failure.code
        elif self.paused is not None and not (self.summarized or self.archived):
            kind, detail = "failed", f"recovery paused: {self.paused}"
            code = "recovery_paused"
        elif self.summarized or self.archived:
            kind, detail, code = "compressed", done, "summary_written"
        else:
            kind, detail, code = "skipped", done, skipped
        return Outcome(
            self.session_id,
            kind,
            self.reason,
            detail,
            summarized=self.summarized,
            archived=self.archived,
            chunks=self.chunks,
            summarizer_calls=self.calls,
            recovered=self.recovered,
            code=code,
            tokens_before=self.tokens_before,
            tokens_after=self._tokens_after(),
            usage=self.usage,
            model=self.resolved.label,
            call_durations_s=tuple(self.call_durations_s),
        )
