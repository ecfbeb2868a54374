"""One compression of one session, run on a worker thread: read, summarize, commit.

The job gathers its inputs from the ports, lets the domain decide (window, cut,
chunks, budget, prompt) and applies the result one chunk at a time: each chunk's
summary commits together with the archive of exactly the messages it folded.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import attrs

from memory_summary.domain import (
    NAMESPACE,
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
    """Runs compressions for every session of one engine (stateless between runs)."""

    store: CompactionStore
    config: SummaryConfig
    emit: Callable[[object], None]
    call_pool: concurrent.futures.Executor
    is_cancelled: Callable[[], bool]
    clock: Callable[[], float] = time.time

    def run(
        self, session_id: str, reason: Reason, resolved: ResolvedModel | str
    ) -> Outcome:
        """Compress ``session_id`` once; never raises (failures are outcomes)."""
        forced = reason != "turn"
        started = False

        def finish(outcome: Outcome) -> Outcome:
            if started or forced:
                if not started:
                    self.emit(Compressing(session_id, "start", reason))
                status: Status = "done" if outcome.ok else "error"
                self.emit(Compressing(session_id, status, reason, outcome.detail))
            log_outcome(outcome)
            return outcome

        if forced:
            self.emit(Compressing(session_id, "start", reason))
            started = True
        try:
            tail = self.store.get_history(session_id, limit=probe_limit(self.config))
            whole = len(tail) < probe_limit(self.config)
            active = len(tail) if whole else self.store.count_history(session_id)
            if not should_compress(active, self.config, forced=forced):
                return finish(
                    Outcome(session_id, "skipped", reason, "nothing to compress")
                )
            split = split_window(tail, self.config.keep_recent)
            if not split.fold:
                return finish(
                    Outcome(session_id, "skipped", reason, "nothing to compress")
                )
            if not started:
                self.emit(Compressing(session_id, "start", reason))
                started = True
            if isinstance(resolved, str):
                return finish(Outcome(session_id, "failed", reason, resolved))
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
            pages: list[Sequence[Message]] | None = [split.fold] if whole else None
            return finish(run.fold(pages, boundary_id=_id(split.fold[-1])))
        except Cancelled:
            return finish(Outcome(session_id, "failed", reason, "engine stopped"))
        except StoreError as exc:
            log.warning("session %s: store failed: %s", session_id, exc)
            return finish(Outcome(session_id, "failed", reason, f"store failed: {exc}"))


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
        "session %s: %s (%s), summarized %d, archived %d in %d chunk(s)",
        outcome.session_id,
        outcome.kind,
        outcome.detail or outcome.reason,
        outcome.summarized,
        outcome.archived,
        outcome.chunks,
        extra={"session_id": outcome.session_id},
    )


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

    def fold(
        self, pages: list[Sequence[Message]] | None, *, boundary_id: int
    ) -> Outcome:
        """Fold every active message up to ``boundary_id``, oldest first."""
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
        for page in pages if pages is not None else self._backlog_pages(boundary_id):
            for chunk in fold_chunks(
                page,
                lookup=[*page, *self.tail],
                locale=config.locale,
                cut_chars=config.truncate_chars,
                count_tokens=count,
                limit_tokens=limit,
                max_count=probe_limit(config),
            ):
                self._check_cancelled()
                try:
                    previous = self._fold_chunk(chunk, previous, system, todo, budget)
                except SummarizerError as exc:
                    return self._degrade(boundary_id, exc)
        return self._outcome("compressed", "summary written")

    def _backlog_pages(self, boundary_id: int) -> Iterator[Sequence[Message]]:
        """Yield the oldest active messages up to ``boundary_id``, one window at a time.

        Each page is read after the previous one was committed (archived).
        """
        last_first_id = 0
        while True:
            oldest = self.job.store.get_oldest_history(
                self.session_id, probe_limit(self.job.config)
            )
            page = [m for m in oldest if _id(m) <= boundary_id]
            if not page:
                return
            if _id(page[0]) <= last_first_id:
                raise StoreError(
                    "commit_compaction did not archive the folded messages"
                )
            last_first_id = _id(page[0])
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
    ) -> SummaryRecord | None:
        job = self.job
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
            record: SummaryRecord | None = next_record(
                previous,
                text=text,
                tokens=self.resolved.count_tokens(text),
                chunk=chunk,
                model=self.resolved.label,
                now=job.clock(),
            )
        else:  # only messages the summarizer never reads (system, event markers)
            record = previous and attrs.evolve(
                previous, covered_through_id=chunk.through_id
            )
        self._check_cancelled()
        self.archived += job.store.commit_compaction(
            self.session_id,
            through_id=chunk.through_id,
            summary=None if record is None else record.to_mapping(),
            namespace=NAMESPACE,
        )
        self.summarized += len(chunk.messages)
        self.chunks += 1
        return record

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
        self._check_cancelled()
        self.archived += self.job.store.commit_compaction(
            self.session_id, through_id=boundary_id, summary=None, namespace=NAMESPACE
        )
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
