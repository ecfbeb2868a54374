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
