"""Summarizers for benchmarks: fixed latency, and token accounting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from memory_summary import Message


class LatencySummarizer:
    """Answers after ``delay_s``, as a remote LLM would; counts calls and time."""

    def __init__(
        self, delay_s: float = 0.0, count_tokens: Callable[[str], int] | None = None
    ):
        self.delay_s = delay_s
        self.count_tokens = count_tokens
        self.calls = 0
        self.inside_ns = 0
        self.input_tokens = 0
        self.previous_tokens = 0
        self._lock = threading.Lock()

    def context_length(self, model: str | None = None) -> int:
        return 128_000

    def complete(self, messages: Sequence[Message], **_: object) -> str:
        started = time.perf_counter_ns()
        if self.delay_s:
            time.sleep(self.delay_s)
        tokens = previous = 0
        if self.count_tokens is not None:
            request = messages[-1].content
            tokens = self.count_tokens(request)
            if "<previous_summary>" in request:
                body = request.split("<previous_summary>\n", 1)[1].split(
                    "\n</previous_summary>"
                )[0]
                previous = self.count_tokens(body)
        with self._lock:
            self.calls += 1
            self.input_tokens += tokens
            self.previous_tokens += previous
            self.inside_ns += time.perf_counter_ns() - started
        return (
            "Summary: the user asked several questions and the assistant answered them."
        )


FIXED_SUMMARY = (
    "Summary of the conversation so far. The user is planning a migration of a "
    "customer billing service from a single PostgreSQL 12 server to a managed "
    "cluster, and wants downtime under fifteen minutes. The assistant proposed "
    "logical replication with a short cut-over window, listed the tables without "
    "primary keys (invoices_archive, audit_log) that must be fixed first, and "
    "estimated the initial copy at roughly 40 GB over four hours. The user ran the "
    "search_docs tool twice: once for replication slot limits, once for sequence "
    "handling; results showed that sequences are not replicated and must be reset "
    "after the switch. The user then asked about rollback; the assistant suggested "
    "keeping the old primary read-only for 48 hours and a reverse subscription as "
    "a fallback. Open questions: whether the reporting jobs at 02:00 UTC can pause, "
    "who signs off the maintenance window (the user mentioned Priya from finance), "
    "and whether the connection pooler needs new credentials. Decisions made: use "
    "pgbouncer in transaction mode, freeze schema changes from Monday, run a dry "
    "rehearsal on the staging copy on Thursday. The user prefers short bullet "
    "answers with commands they can paste, writes partly in Chinese (迁移计划, "
    "回滚方案), and asked the assistant to keep track of the checklist: "
    "1) add primary keys, 2) create publication, 3) copy data, 4) verify row counts "
    "with the check_counts tool, 5) reset sequences, 6) switch DNS, 7) monitor "
    "error rates for an hour. Steps 1 and 2 are done; step 3 is running and was at "
    "63 percent when last checked."
)
"""About 300 o200k tokens of ordinary summary prose, the same on every call."""


class FixedSummarizer:
    """A zero-latency summarizer that answers ``FIXED_SUMMARY``; counts its calls."""

    def __init__(self, text: str = FIXED_SUMMARY) -> None:
        self.text = text
        self.calls = 0
        self._lock = threading.Lock()

    def context_length(self, model: str | None = None) -> int:
        return 128_000

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> str:
        with self._lock:
            self.calls += 1
        return self.text
