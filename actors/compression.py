"""One compression of one session, run on a worker thread: read, summarize, commit.

The job gathers its inputs from the ports, lets the domain decide (window, cut,
chunks, budget, prompt) and applies the result one chunk at a time: each chunk's
summary commits together with the archive of exactly the messages it folded, so a
crash leaves every commit whole and messages saved meanwhile stay active.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import attrs

from memory_summary.domain import (
    NAMESPACE,
    Archive,
    CompactionStore,
    Compressing,
    FoldChunk,
    Message,
    Outcome,
    Reason,
    StoreError,
    SummarizerError,
    SummarizerTimeout,
    SummaryConfig,
    SummaryRecord,
    ToolCall,
    fold_chunks,
    input_limit_tokens,
    latest_todo_call,
    next_record,
    probe_limit,
    separator_message,
    should_compress,
    split_window,
    summary_budget_tokens,
    summary_request,
    system_prompt,
)
from memory_summary.domain.compaction import OutcomeKind
from memory_summary.domain.events import Status

if TYPE_CHECKING:
    from .summary_model import ResolvedModel

log = logging.getLogger(__name__)

TEMPERATURE = 0.3  # seed: summaries are mechanical


class Cancelled(Exception):
    """The engine is stopping: commit nothing more."""


@attrs.define
class CompressionJob:
    """Runs compressions for every session of one engine (stateless between runs).

    With an archive that lives in the store's own database (``archive.store is
    store``), the separator message commits in the compaction's last transaction.
    """

    store: CompactionStore
    config: SummaryConfig
    emit: Callable[[object], None]
    call_pool: concurrent.futures.Executor
    is_cancelled: Callable[[], bool]
    archive: Archive | None = None
    clock: Callable[[], float] = time.time

    @property
    def archive_shares_store(self) -> bool:
        """Tell whether separators can commit with the compaction itself."""
        return (
            self.archive is not None
            and getattr(self.archive, "store", None) is self.store
        )

    def run(
        self, session_id: str, reason: Reason, resolved: ResolvedModel | str
    ) -> Outcome:
        """Compress ``session_id`` once; never raises (failures are outcomes)."""
        forced = reason != "turn"
        started = False

        def start() -> None:
            nonlocal started
            if not started:
                started = True
                self.emit(Compressing(session_id, "start", reason))

        def finish(outcome: Outcome) -> Outcome:
            if started or forced:
                start()
                status: Status = "done" if outcome.ok else "error"
                self.emit(Compressing(session_id, status, reason, outcome.detail))
            log_outcome(outcome)
            return outcome

        if forced:
            start()
        try:
            with self._session_lock(session_id) as locked:
                if not locked:
                    detail = "another process is compressing this session"
                    return finish(Outcome(session_id, "skipped", reason, detail))
                return finish(self._run_locked(session_id, reason, resolved, start))
        except Cancelled:
            return finish(Outcome(session_id, "failed", reason, "engine stopped"))
        except StoreError as exc:
            log.warning("session %s: store failed: %s", session_id, exc)
            return finish(Outcome(session_id, "failed", reason, f"store failed: {exc}"))

    def _session_lock(self, session_id: str) -> contextlib.AbstractContextManager[bool]:
        lock = getattr(self.store, "compaction_lock", None)
        if lock is not None:
            return lock(session_id)  # type: ignore[no-any-return]
        return contextlib.nullcontext(True)  # one process: the session actor suffices

    def _run_locked(
        self,
        session_id: str,
        reason: Reason,
        resolved: ResolvedModel | str,
        start: Callable[[], None],
    ) -> Outcome:
        probe = probe_limit(self.config)
        tail = self.store.get_history(session_id, limit=probe)
        active = (
            len(tail) if len(tail) < probe else self.store.count_history(session_id)
        )
        whole = active == len(tail)  # the window holds every active message
        split = split_window(tail, self.config.keep_recent)
        forced = reason != "turn"
        if not should_compress(active, self.config, forced=forced) or not split.fold:
            return Outcome(session_id, "skipped", reason, "nothing to compress")
        start()
        if isinstance(resolved, str):
            return Outcome(session_id, "failed", reason, resolved)
        log.debug(
            "session %s: window %d, fold %d, keep %d, active %d",
            session_id,
            len(tail),
            len(split.fold),
            len(split.keep),
            active,
            extra={"session_id": session_id},
        )
        run = _Run(self, session_id, reason, resolved, split.keep, tail)
        return run.fold(split.fold if whole else None, boundary_id=_id(split.fold[-1]))


def _id(message: Message) -> int:
    if message.id is None:
        raise StoreError("the store returned a message without an id")
    return message.id


def log_outcome(outcome: Outcome) -> None:
    """Log one line per compression outcome at the level its kind deserves."""
    if outcome.kind == "skipped":
        log.debug("session %s: skipped (%s)", outcome.session_id, outcome.detail)
        return
    level = logging.INFO if outcome.ok else logging.WARNING
    log.log(
        level,
        "session %s: %s (%s), folded %d, archived %d in %d chunk(s)",
        outcome.session_id,
        outcome.kind,
        outcome.detail or outcome.reason,
        outcome.summarized,
        outcome.archived,
        outcome.chunks,
        extra={"session_id": outcome.session_id},
    )


def _with_last(items: Iterator[FoldChunk]) -> Iterator[tuple[FoldChunk, bool]]:
    """Yield each item with whether it is the last one."""
    previous = next(items, None)
    for item in items:
        yield previous, False  # type: ignore[misc]
        previous = item
    if previous is not None:
        yield previous, True


@attrs.define
class _Run:
    """The state of one compression while it folds chunk after chunk."""

    job: CompressionJob
    session_id: str
    reason: Reason
    resolved: ResolvedModel
    keep: Sequence[Message]
    tail: Sequence[Message]
    archived: int = 0
    summarized: int = 0
    chunks: int = 0
    calls: int = 0

    def fold(self, page: Sequence[Message] | None, *, boundary_id: int) -> Outcome:
        """Fold every active message up to ``boundary_id``, oldest first.

        ``page`` is the whole fold when the window held every active message; None
        reads the backlog from the oldest message on, one window at a time.
        """
        config = self.job.config
        previous = self._previous()
        count = self.resolved.count_tokens
        budget = summary_budget_tokens(
            self.resolved.context_length, config.summary_token_ratio
        )
        system = system_prompt(
            config.summary_prompt,
            locale=config.locale,
            budget_tokens=budget,
            reason=self.reason,
        )
        todo = latest_todo_call(self.keep, config.todo_tool_names)
        todo_tokens = count(f"{todo.name}({todo.arguments})") if todo else 0
        limit = input_limit_tokens(
            self.resolved.context_length, budget, count(system) + budget + todo_tokens
        )
        pages = iter([page]) if page is not None else self._backlog_pages(boundary_id)
        chunks = (
            chunk
            for each in pages
            for chunk in fold_chunks(
                each,
                lookup=[*each, *self.tail],
                locale=config.locale,
                cut_chars=config.truncate_chars,
                count_tokens=count,
                limit_tokens=limit,
                max_count=probe_limit(config),
            )
        )
        for chunk, last in _with_last(chunks):
            self._check_cancelled()
            try:
                previous = self._fold_chunk(
                    chunk, previous, system, todo, budget, last=last
                )
            except SummarizerError as exc:
                return self._degrade(boundary_id, exc)
        return self._outcome("compressed", "summary written")

    def _backlog_pages(self, boundary_id: int) -> Iterator[Sequence[Message]]:
        """Yield the oldest active messages up to ``boundary_id``, window by window."""
        cursor: int | None = None
        while True:
            oldest = self.job.store.get_oldest_history(
                self.session_id, probe_limit(self.job.config), after_id=cursor
            )
            page = [m for m in oldest if _id(m) <= boundary_id]
            if not page:
                return
            cursor = _id(page[-1])
            yield page

    def _previous(self) -> SummaryRecord | None:
        data = self.job.store.get_metadata(NAMESPACE, self.session_id)
        return None if data is None else SummaryRecord.from_mapping(data)

    def _fold_chunk(
        self,
        chunk: FoldChunk,
        previous: SummaryRecord | None,
        system: str,
        todo: ToolCall | None,
        budget: int,
        *,
        last: bool,
    ) -> SummaryRecord | None:
        job = self.job
        record = previous
        if chunk.transcript:
            request = summary_request(
                chunk.transcript,
                previous_summary=previous.text if previous else None,
                todo=todo,
                system=system,
                locale=job.config.locale,
            )
            text = self._summarize(request, budget).strip()
            if not text:
                raise SummarizerError("the summarizer returned an empty summary")
            record = next_record(
                previous,
                text=text,
                tokens=self.resolved.count_tokens(text),
                chunk=chunk,
                model=self.resolved.label,
                now=job.clock(),
            )
        elif previous is not None:  # only messages the summarizer never reads
            record = attrs.evolve(previous, covered_through_id=chunk.through_id)
        self._commit(chunk.through_id, record, "compressed" if last else None)
        self.summarized += len(chunk.messages)
        self.chunks += 1
        return record

    def _commit(
        self, through_id: int, record: SummaryRecord | None, final: OutcomeKind | None
    ) -> None:
        """Commit one chunk; the final commit of a compression carries its separator."""
        self._check_cancelled()
        job = self.job
        shared = final is not None and job.archive_shares_store

        def separator(archived: int) -> Message | None:
            return self._separator(final, self.archived + archived)  # type: ignore[arg-type]

        archived = job.store.commit_compaction(
            self.session_id,
            through_id=through_id,
            summary=None if record is None else record.to_mapping(),
            namespace=NAMESPACE,
            separator=separator if shared else None,
        )
        self.archived += archived
        if final is not None and job.archive is not None and not shared:
            marker = self._separator(final, self.archived)
            if marker is not None:
                try:
                    job.archive.save_message(self.session_id, marker)
                except Exception:  # the archive is optional: it never undoes a commit
                    log.exception(
                        "session %s: writing the separator failed", self.session_id
                    )

    def _separator(self, kind: OutcomeKind, archived: int) -> Message | None:
        outcome = Outcome(self.session_id, kind, self.reason, archived=archived)
        return separator_message(
            outcome, locale=self.job.config.locale, now=self.job.clock()
        )

    def _summarize(self, request: Sequence[Message], budget: int) -> str:
        timeout_s = self.job.config.summarizer_timeout_s
        self.calls += 1
        future = self.job.call_pool.submit(
            self.resolved.call,
            request,
            budget,
            TEMPERATURE,
            time.monotonic() + timeout_s,
        )
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise SummarizerTimeout(f"no summary within {timeout_s:g} s") from exc

    def _degrade(self, boundary_id: int, exc: SummarizerError) -> Outcome:
        # seed: a failed summary still trims, or the session loops on retries; the
        # previous summary stays untouched and a partial text is never stored.
        log.warning(
            "session %s: summarizer failed, trimming without a summary: %s",
            self.session_id,
            exc,
            extra={"session_id": self.session_id},
        )
        self._commit(boundary_id, None, "trimmed")
        return self._outcome("trimmed", f"summarizer failed: {exc}")

    def _outcome(self, kind: OutcomeKind, detail: str) -> Outcome:
        return Outcome(
            self.session_id,
            kind,
            self.reason,
            detail,
            summarized=self.summarized,
            archived=self.archived,
            chunks=self.chunks,
            summarizer_calls=self.calls,
        )

    def _check_cancelled(self) -> None:
        if self.job.is_cancelled():
            raise Cancelled
