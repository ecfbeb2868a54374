"""The summary text ``build_prompt`` injects, cut to budget and cached per session.

Building it never blocks on I/O: the summary model's context length comes from what
the resolver already knows (``peek``); when it must still be asked, that happens on
the summarizer-call pool, once at a time per model, while the prompt is built with
what is known (a summary an engine committed whole, or the 512-token floor counted
in UTF-8 bytes, which never undercount).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memory_summary.actors.summary_model import ModelResolver
from memory_summary.actors.workers import WorkerPool
from memory_summary.domain import (
    SummaryConfig,
    SummaryRecord,
    fits_as_committed,
    injection_budget_tokens,
    injection_text,
)

log = logging.getLogger(__name__)

PROMPT_CACHE_SIZE = 50_000
"""Sessions whose injected text is cached; the cache is dropped whole when full."""


def _utf8_bytes(text: str) -> int:
    """Count UTF-8 bytes: never fewer than tokens, a safe count before a tokenizer."""
    return len(text.encode("utf-8"))


class InjectedPrompts:
    """Builds and caches each session's injected summary text.

    Args:
        config: the engine's configuration.
        resolver: the summary model's resolver (peeked at, resolved off-thread).
        chat_model: ``session_id -> model`` its last turn named.
        counter: ``model -> count_tokens``.
        calls: the summarizer-call pool, where a model is resolved later.
        closed: tells whether the engine stopped.
    """

    def __init__(
        self,
        config: SummaryConfig,
        resolver: ModelResolver,
        chat_model: Callable[[str], str | None],
        counter: Callable[[str | None], Callable[[str], int]],
        calls: WorkerPool,
        closed: Callable[[], bool],
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._chat_model = chat_model
        self._counter = counter
        self._calls = calls
        self._closed = closed
        self._cache: dict[str, tuple[str, int | None, object, str]] = {}
        self._resolving: set[str | None] = set()
        self._lock = threading.Lock()

    def text(self, session_id: str, model: str | None, record: SummaryRecord) -> str:
        """Return the injected text of ``record``, cut to the budget of ``model``."""
        budget, count = self._budget(session_id, model, record)
        cached = self._cache.get(session_id)
        if (
            cached is not None
            and cached[1] == budget
            and cached[2] is count
            and cached[0] == record.text
        ):
            return cached[3]
        text = injection_text(
            record.text,
            locale=self._config.locale,
            budget_tokens=budget,
            count_tokens=count,
            recall_hint=self._config.recall_hint,
            ceiling=getattr(count, "ceiling", None),
        )
        if len(self._cache) >= PROMPT_CACHE_SIZE:
            self._cache.clear()
        self._cache[session_id] = (record.text, budget, count, text)
        return text

    def forget(self, session_id: str) -> None:
        """Drop the session's cached text."""
        self._cache.pop(session_id, None)

    def forget_all(self) -> None:
        """Drop every cached text."""
        self._cache.clear()

    def _budget(
        self, session_id: str, model: str | None, record: SummaryRecord
    ) -> tuple[int | None, Callable[[str], int]]:
        """Return the budget and the chat model's counter, without blocking on I/O.

        Until the summary model's context length is known, a summary an engine
        committed (``fits_as_committed``) gets no cut (budget None): it was checked
        against its budget when it was written. Any other gets the 512-token floor.
        """
        session_model = self._chat_model(session_id)
        resolved = self._resolver.peek(session_model)
        if self._resolver.is_due(session_model):
            self._resolve_later(session_model)
        length = None if resolved is None else resolved.context_length
        budget: int | None = injection_budget_tokens(self._config, length)
        if length is None and fits_as_committed(record):
            budget = None
        chat = model or session_model
        if chat is not None:
            return budget, self._counter(chat)
        if resolved is None:
            return budget, _utf8_bytes
        return budget, resolved.count_tokens

    def _resolve_later(self, model: str | None) -> None:
        """Resolve ``model`` on the summarizer-call pool, once at a time per model.

        The pool reuses its threads, and the resolver backs off after a failure, so
        an outage costs neither a thread nor an endpoint request per chat turn.
        """
        with self._lock:
            if model in self._resolving or self._closed():
                return
            self._resolving.add(model)

        def resolve() -> None:
            try:
                self._resolver.resolution(model)
            except Exception:  # the fallback stays in use; logged, never raised
                log.exception("resolving the summary model %r failed", model)
            finally:
                with self._lock:
                    self._resolving.discard(model)

        try:
            self._calls.submit(resolve)
        except RuntimeError:  # the pool is shut down: the engine is stopping
            with self._lock:
                self._resolving.discard(model)
