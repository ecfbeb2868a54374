"""The run of the fact-retention benchmark: conversations through the real engine."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import attrs

from memory_summary.adapters import InMemoryStore
from memory_summary.domain import (
    Compressing,
    ConfigError,
    Summarizer,
    SummaryConfig,
    injection_budget_tokens,
)
from memory_summary.engine import SummaryEngine

from .generator import generate_conversation
from .planted import (
    KEEP_RECENT,
    LOCALES,
    THRESHOLD,
    FactConversation,
    Locale,
)
from .report import ConversationResult, FactsReport

WAIT_IDLE_S = 900.0  # one turn's compressions, a slow endpoint's retries included


class _Compressions:
    """Counts each session's finished and degraded compressions from engine events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done: dict[str, int] = {}
        self.degraded: dict[str, int] = {}

    def on_event(self, event: object) -> None:
        if not isinstance(event, Compressing) or event.status == "start":
            return
        if event.status == "done" and event.detail == "nothing to compress":
            return
        counts = self.done if event.status == "done" else self.degraded
        with self._lock:
            counts[event.session_id] = counts.get(event.session_id, 0) + 1


def _drive(
    engine: SummaryEngine,
    store: InMemoryStore,
    conversation: FactConversation,
    events: _Compressions,
    budget: int,
) -> ConversationResult:
    started = time.perf_counter()
    sid = f"facts-{conversation.locale}-{conversation.index}"
    for turn in conversation.turns:
        for message in turn:
            store.save_message(sid, message)
        engine.turn_after(sid)
        if not engine.wait_idle(timeout=WAIT_IDLE_S):
            raise TimeoutError(
                f"{sid}: the engine did not settle within {WAIT_IDLE_S} s"
            )
    summary = engine.build_prompt(sid) or ""
    record = engine.summary(sid)
    return ConversationResult(
        locale=conversation.locale,
        index=conversation.index,
        messages=len(conversation.messages),
        facts=conversation.facts,
        retained=tuple(fact.is_found_in(summary) for fact in conversation.facts),
        compressions=events.done.get(sid, 0),
        degraded=events.degraded.get(sid, 0),
        summarizer_calls=record.compressions if record else 0,
        summary_tokens=record.tokens if record else 0,
        budget_tokens=budget,
        seconds=time.perf_counter() - started,
        summary=summary,
    )


def run_facts(
    llm: Summarizer | None = None,
    *,
    seed: int = 7,
    conversations: int = 4,
    locales: Sequence[Locale] = LOCALES,
    config: SummaryConfig | None = None,
    progress: Callable[[str], None] | None = None,
    generator: Callable[[int, Locale, int], FactConversation] | None = None,
) -> FactsReport:
    """Drive generated conversations through the engine and score their summaries.

    Args:
        llm: the summarizer; None: the offline ``ExtractiveSummarizer``.
        seed: the conversations' seed.
        conversations: how many conversations per locale.
        locales: which locales (``en``, ``zh``), in order.
        config: other settings (prompt, ratio, ...); threshold, keep_recent and locale
            are the benchmark's own.
        progress: called with one line per finished conversation.
        generator: ``(seed, locale, index) -> FactConversation``; None: the standard
            ``generate_conversation`` (``summary_quality.hard_facts`` has a
            harder one).

    Raises:
        ConfigError: ``conversations`` < 1 or an unknown locale.
        TimeoutError: the engine did not settle after a turn.
    """
    if (
        isinstance(conversations, bool)
        or not isinstance(conversations, int)
        or conversations < 1
    ):
        raise ConfigError("conversations", conversations, "int >= 1")
    if not locales or any(locale not in LOCALES for locale in locales):
        raise ConfigError("locale", list(locales), "en / zh / both")
    results: list[ConversationResult] = []
    label = ""
    for locale in locales:
        settings = attrs.evolve(
            config or SummaryConfig(),
            threshold=THRESHOLD,
            keep_recent=KEEP_RECENT,
            locale=locale,
        )
        store = InMemoryStore()
        events = _Compressions()
        with SummaryEngine(store, llm, config=settings) as engine:
            engine.subscribe(events.on_event)
            budget = injection_budget_tokens(settings, engine.llm.context_length(None))
            label = engine.stats().summarizer
            for index in range(conversations):
                conversation = (generator or generate_conversation)(seed, locale, index)
                result = _drive(engine, store, conversation, events, budget)
                results.append(result)
                if progress is not None:
                    progress(
                        f"facts: {locale} conversation {index + 1}/{conversations}: "
                        f"{sum(result.retained)}/{len(result.facts)} facts kept, "
                        f"{result.compressions} compressions, {result.seconds:.1f} s"
                    )
    name = getattr(generator, "label", "standard") if generator else "standard"
    return FactsReport(
        label, seed, conversations, tuple(locales), tuple(results), str(name)
    )
