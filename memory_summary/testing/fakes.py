"""Test doubles that record what happened; real classes, not mocks.

Example:
    >>> from memory_summary import SummaryEngine
    >>> from memory_summary.adapters import InMemoryStore
    >>> llm = ScriptedSummarizer("The user lives in Oslo.", TimeoutError("slow"))
    >>> llm.complete([], max_tokens=100, temperature=0.3)
    'The user lives in Oslo.'
    >>> len(llm.calls)
    1
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

from memory_summary import Compressing, Message, StoreError
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import CommitRequest, CommitResult

__all__ = [
    "FailingStore",
    "InstrumentedSummarizer",
    "OverlapRecorder",
    "ScriptedSummarizer",
    "StreamingScripted",
]


class ScriptedSummarizer:
    """Replies with the given texts or raises the given exceptions, in order.

    After the script runs out it repeats the last reply. ``calls`` holds the
    messages of every call, ``kwargs`` its keyword arguments.
    """

    def __init__(self, *replies: str | Exception, context: int | None = 8192) -> None:
        self._replies = list(replies) or ["summary"]
        self._context = context
        self.calls: list[Sequence[Message]] = []
        self.kwargs: list[dict[str, object]] = []
        self._lock = threading.Lock()

    def context_length(self, model: str | None = None) -> int | None:
        return self._context

    def complete(self, messages: Sequence[Message], **kwargs: object) -> str:
        with self._lock:
            self.calls.append(messages)
            self.kwargs.append(kwargs)
            reply = self._replies.pop(0) if len(self._replies) > 1 else self._replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


class StreamingScripted(ScriptedSummarizer):
    """Streams its replies in pieces; ``break_after`` pieces then raises, if set."""

    def __init__(
        self, *replies: str | Exception, break_after: int | None = None
    ) -> None:
        super().__init__(*replies)
        self.break_after = break_after
        self.streamed: list[str] = []

    def stream(self, messages: Sequence[Message], **kwargs: object) -> Iterator[str]:
        text = self.complete(messages, **kwargs)
        words = text.split(" ")
        for index, piece in enumerate(words):
            if self.break_after is not None and index >= self.break_after:
                raise ConnectionError("stream broke midway")
            self.streamed.append(piece)
            yield piece if index == len(words) - 1 else piece + " "


class InstrumentedSummarizer:
    """Records concurrent calls per session and overall; optionally slow or gated."""

    def __init__(
        self, delay_s: float = 0.0, gate: threading.Event | None = None
    ) -> None:
        self.delay_s = delay_s
        self.gate = gate
        self.entered = threading.Event()
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0
        self.requests: list[Sequence[Message]] = []

    def context_length(self, model: str | None = None) -> int | None:
        return 32768

    def complete(self, messages: Sequence[Message], **kwargs: object) -> str:
        with self._lock:
            self.in_flight += 1
            self.calls += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.requests.append(messages)
        self.entered.set()
        try:
            if self.gate is not None and not self.gate.wait(30):
                raise TimeoutError("the test never opened the gate")
            if self.delay_s:
                time.sleep(self.delay_s)
            return f"summary #{self.calls}: the user and the assistant talked."
        finally:
            with self._lock:
                self.in_flight -= 1


class FailingStore(InMemoryStore):
    """Raises StoreError from every fenced commit while ``failing`` is set.

    ``commit`` fails, and so do the deprecated ``commit_compaction`` and
    ``commit_compaction_with``, which delegate to it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.failing = True

    def commit(self, request: CommitRequest) -> CommitResult:
        if self.failing:
            raise StoreError(f"commit failed for {request.session_id!r}")
        return super().commit(request)


class OverlapRecorder:
    """An event subscriber that notes any session with two compressions open at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.open: dict[str, int] = {}
        self.overlaps: list[str] = []
        self.events: list[object] = []

    def __call__(self, event: object) -> None:
        with self._lock:
            self.events.append(event)
            if not isinstance(event, Compressing):
                return
            count = self.open.get(event.session_id, 0)
            count += 1 if event.status == "start" else -1
            if count > 1 or count < 0:
                self.overlaps.append(event.session_id)
            self.open[event.session_id] = count
