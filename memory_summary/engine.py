"""``SummaryEngine``: the public face of the library, wired with concrete defaults."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future
from typing import Literal

from memory_summary.actors.engine import EngineCore
from memory_summary.actors.messages import Compress, TurnEnded, UsageReported
from memory_summary.adapters import ExtractiveSummarizer, counter_factory
from memory_summary.domain import (
    NAMESPACE,
    Archive,
    ClearResult,
    CompactionStore,
    EngineClosed,
    Message,
    Outcome,
    StoreError,
    Summarizer,
    SummaryConfig,
    SummaryRecord,
    assemble_messages,
    injection_text,
    summary_budget_tokens,
    summary_message,
)

log = logging.getLogger(__name__)

Scope = Literal["session", "all"]
_IGNORED_OUTCOMES = frozenset({"aborted", "error"})
_REASONS = ("manual", "auto")


def _check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(
            f"session_id={session_id!r} is invalid; allowed: non-empty str"
        )
    return session_id


class SummaryEngine:
    """Keeps every session of a chat server inside its model's context window.

    After each turn (``turn_after``) and on each usage report (``token_usage``) the
    engine decides, off the caller's thread, whether the session needs compressing; if
    so its session actor folds the older messages into the summary and archives them.
    ``assemble`` (or ``build_prompt``) injects the summary before the next LLM call.

    Args:
        memory: the store that holds the history and the summaries; it must offer the
            ``CompactionStore`` methods (every store this library ships does).
        llm: the default summarizer; None uses the offline ``ExtractiveSummarizer``.
        config: the configuration; None uses the defaults.
        archive: an optional archive; it gets one separator message per compression.
        llms: summarizers by provider name, for ``summary_model_mode="custom"``.

    Example:
        >>> from memory_summary import SummaryEngine, Message
        >>> from memory_summary.adapters import InMemoryStore
        >>> store = InMemoryStore()
        >>> with SummaryEngine(store) as engine:
        ...     for i in range(30):
        ...         _ = store.save_message("s1", Message("user", f"fact {i}."))
        ...     engine.turn_after("s1")
        ...     engine.wait_idle(timeout=10)
        ...     len(store.get_history("s1"))
        True
        20
    """

    def __init__(
        self,
        memory: CompactionStore,
        llm: Summarizer | None = None,
        *,
        config: SummaryConfig | None = None,
        archive: Archive | None = None,
        llms: Mapping[str, Summarizer] | None = None,
        count_tokens_for: Callable[[str | None], Callable[[str], int]] | None = None,
    ) -> None:
        missing = [
            name
            for name in ("count_history", "get_oldest_history", "commit_compaction")
            if not callable(getattr(memory, name, None))
        ]
        if missing:
            raise TypeError(
                f"memory store {type(memory).__name__} lacks {', '.join(missing)}; the "
                "engine archives by message id atomically with the summary and needs "
                "a CompactionStore (InMemoryStore, SqliteStore or PostgresStore)"
            )
        self.config = config or SummaryConfig()
        counter = count_tokens_for or counter_factory()
        self.memory = memory
        self.llm = llm or ExtractiveSummarizer(counter(None))
        self._core = EngineCore(
            memory,
            self.llm,
            config=self.config,
            count_tokens_for=counter,
            archive=archive,
            llms=llms,
        )

    def start(self) -> SummaryEngine:
        """Start the engine's background threads (sending to a session also does)."""
        self._core.start()
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Finish or cancel in-flight work within ``timeout`` seconds; stop all threads.

        Returns True when everything ended in time. Nothing is committed after stop()
        begins; later calls raise ``EngineClosed``.
        """
        return self._core.stop(timeout)

    def __enter__(self) -> SummaryEngine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def turn_after(
        self, session_id: str, outcome: str = "replied", model: str | None = None
    ) -> None:
        """Report that a turn ended; compress in the background if the count says so.

        Turns whose ``outcome`` is ``"aborted"`` or ``"error"`` are ignored (seed 1).
        ``model`` is the model the turn used, for ``summary_model_mode="session"``.
        """
        _check_session_id(session_id)
        if outcome in _IGNORED_OUTCOMES:
            return
        if model is not None:
            self._core.session_models[session_id] = model
        self._core.send(session_id, TurnEnded())

    def token_usage(self, session_id: str, usage_ratio: float) -> None:
        """Report the context usage ratio of the session's current LLM call.

        At or above ``auto_compress_threshold`` (when it is > 0) the engine emits
        ``CompressRequested(reason="auto")`` and compresses in the background; the
        current turn keeps its context, the result serves the next one.
        """
        _check_session_id(session_id)
        if (
            isinstance(usage_ratio, bool)
            or not isinstance(usage_ratio, (int, float))
            or not math.isfinite(usage_ratio)
            or usage_ratio < 0
        ):
            raise ValueError(
                f"usage_ratio={usage_ratio!r} is invalid; allowed: float >= 0"
            )
        threshold = self.config.auto_compress_threshold
        if threshold > 0 and usage_ratio >= threshold:
            self._core.send(session_id, UsageReported(float(usage_ratio)))

    def compress(self, session_id: str, reason: str = "manual") -> Future[Outcome]:
        """Compress now, ignoring the threshold; return a future of the ``Outcome``.

        A request that arrives while the session compresses runs right after it.
        """
        _check_session_id(session_id)
        if reason not in _REASONS:
            raise ValueError(
                f"reason={reason!r} is invalid; allowed: 'manual' / 'auto'"
            )
        reply: Future[Outcome] = Future()
        self._core.send(session_id, Compress(reason, reply))  # type: ignore[arg-type]
        return reply

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no compression runs or is queued; False if ``timeout`` ran out."""
        return self._core.wait_idle(timeout)

    def summary(self, session_id: str) -> SummaryRecord | None:
        """Return the session's stored summary record, or None."""
        _check_session_id(session_id)
        data = self.memory.get_metadata(NAMESPACE, session_id)
        return None if data is None else SummaryRecord.from_mapping(data)

    def build_prompt(self, session_id: str) -> str | None:
        """Return the system text to inject for the session, or None without a summary.

        The text is the locale's header plus the summary, cut to the token budget
        (summary model's context length x ``summary_token_ratio``, floor 512).
        """
        if self._core.closed:
            raise EngineClosed("the engine was stopped")
        try:
            record = self.summary(session_id)
        except StoreError as exc:
            log.warning("session %s: unreadable summary ignored: %s", session_id, exc)
            return None
        if record is None or not record.text:
            return None
        resolved = self._core.resolve(session_id)
        if isinstance(
            resolved, str
        ):  # unresolvable model: budget as for an unknown one
            length, count = None, self._core.resolver.fallback_counter()
        else:
            length, count = resolved.context_length, resolved.count_tokens
        return injection_text(
            record.text,
            locale=self.config.locale,
            budget_tokens=summary_budget_tokens(
                length, self.config.summary_token_ratio
            ),
            count_tokens=count,
            summary_tokens=record.tokens,
        )

    def assemble(self, messages: Sequence[Message], session_id: str) -> list[Message]:
        """Return ``messages`` with the summary injected at the context anchor.

        The summary goes at the end of the leading system block, before the history.
        Idempotent: an injected summary already present is replaced, never doubled.
        """
        text = self.build_prompt(session_id)
        return assemble_messages(
            messages, None if text is None else summary_message(text)
        )

    def clear(
        self,
        scope: Scope = "session",
        session_id: str | None = None,
        types: Collection[str] | None = None,
    ) -> list[ClearResult]:
        """Clear summaries as part of the host's unified memory clear.

        Skips (returns ``[]``) when ``types`` is given without ``"summary"``.
        ``scope="session"`` clears ``session_id``'s summary, ``"all"`` every summary.
        """
        if isinstance(types, str):
            types = (types,)
        if types is not None and "summary" not in types:
            return []
        if scope == "session":
            sid = _check_session_id(session_id)
            try:
                existed = self.memory.delete_metadata(NAMESPACE, sid)
            except StoreError as exc:
                return [ClearResult("summary", False, f"clearing {sid} failed: {exc}")]
            said = "cleared the summary" if existed else "no summary"
            return [ClearResult("summary", True, f"{said} of session {sid}")]
        if scope == "all":
            try:
                keys = self.memory.list_metadata(NAMESPACE)
                for key in keys:
                    self.memory.delete_metadata(NAMESPACE, key)
            except StoreError as exc:
                return [
                    ClearResult(
                        "summary", False, f"clearing all summaries failed: {exc}"
                    )
                ]
            return [ClearResult("summary", True, f"cleared {len(keys)} summaries")]
        raise ValueError(f"scope={scope!r} is invalid; allowed: 'session' / 'all'")

    def subscribe(self, callback: Callable[[object], None]) -> Callable[[], None]:
        """Call ``callback`` with every ``CompressRequested`` and ``Compressing`` event.

        Callbacks run on the engine's threads and must be quick; one that raises is
        logged and never breaks the engine. Returns a function that unsubscribes.
        """
        return self._core.subscribe(callback)

    def summarizer_label(self, session_id: str = "") -> str:
        """Return how summaries' origin is reported (model, or a non-LLM's label)."""
        resolved = self._core.resolve(session_id)
        return resolved if isinstance(resolved, str) else resolved.label

    def live_actors(self) -> int:
        """Return how many session actors are alive (idle ones are reaped)."""
        return self._core.live_actors()
