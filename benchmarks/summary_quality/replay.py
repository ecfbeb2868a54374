"""Replay LoCoMo conversations through the engine and score what the summary keeps.

Each conversation is saved message by message into an ``InMemoryStore`` and driven
with ``turn_after`` (the engine's defaults: threshold 30, keep_recent 20, the summary
budget at ``summary_token_ratio`` of the summarizer's context). At each checkpoint
(25/50/75/100% of its messages) the texts below are scored on the questions of
categories 1 to 4 whose evidence has been said by then and whose answer the history
so far contains (``matching``): a question counts as kept by a text that contains its
answer too.

- ``summary``: the injected summary (``build_prompt``);
- ``summary+active``: the summary and the messages still active;
- ``lead``/``tail``: the first/last ``budget`` tokens of the folded (archived) text;
- ``keep_last``: the newest ``keep_recent`` messages alone;
- ``chance``: another conversation's summary at the same checkpoint (a control).

What it does not measure: whether a model could answer from the summary (temporal
answers like "7 May 2023" are rarely said as such, so they seldom count as present),
nor paraphrases (a kept fact in other words is a miss).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from memory_summary.adapters import ExtractiveSummarizer, InMemoryStore, counter_factory
from memory_summary.domain import (
    Message,
    Summarizer,
    SummaryConfig,
    injection_budget_tokens,
)
from memory_summary.engine import SummaryEngine

from .locomo import DatePrefix, LocomoConversation
from .matching import MatchText

CHECKPOINTS = (0.25, 0.5, 0.75, 1.0)
SCORED_CATEGORIES = (1, 2, 3, 4)
HEADLINE_CATEGORIES = (1, 2, 4)
TEXTS = ("summary", "summary+active", "lead", "tail", "keep_last", "chance")
WAIT_IDLE_S = 900.0


class TimedSummarizer:
    """Wraps a summarizer: adds up its ``complete`` calls, failures and CPU time."""

    def __init__(self, inner: Summarizer) -> None:
        self.inner = inner
        self.label = str(getattr(inner, "label", type(inner).__name__))
        self.calls = 0
        self.failures = 0  # calls that raised: the engine trimmed instead
        self.cpu_s = 0.0
        self._lock = threading.Lock()

    def context_length(self, model: str | None = None) -> int | None:
        return self.inner.context_length(model)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        started = time.thread_time()
        failed = True
        try:
            reply = self.inner.complete(messages, **options)
            failed = False
            return reply
        finally:
            spent = time.thread_time() - started
            with self._lock:
                self.calls += 1
                self.failures += failed
                self.cpu_s += spent


@attrs.frozen
class Snapshot:
    """What one conversation keeps at one checkpoint."""

    seen: int  # messages replayed so far
    history: str  # every turn so far as said (no date the replay added)
    summary: str
    active: str
    lead: str
    tail: str
    keep_last: str


def _cut_tokens(
    texts: Sequence[str], budget: int, count: Callable[[str], int], *, tail: bool
) -> str:
    """Return the first (or last) ``budget`` tokens of ``texts`` joined by lines."""
    pieces = list(reversed(texts)) if tail else list(texts)
    kept: list[str] = []
    used = 0
    for piece in pieces:
        cost = count(piece + "\n")
        if used + cost > budget:
            low, high = 0, len(piece)
            while low < high:  # the longest cut of the piece that fits
                middle = (low + high + 1) // 2
                cut = piece[-middle:] if tail else piece[:middle]
                if used + count(cut) <= budget:
                    low = middle
                else:
                    high = middle - 1
            if low:
                kept.append(piece[-low:] if tail else piece[:low])
            break
        kept.append(piece)
        used += cost
    return "\n".join(reversed(kept) if tail else kept)


def replay(
    conversation: LocomoConversation,
    *,
    config: SummaryConfig,
    llm: Summarizer | None = None,
    dates: DatePrefix = "session",
    checkpoints: Sequence[float] = CHECKPOINTS,
) -> tuple[list[Snapshot], TimedSummarizer, int]:
    """Drive one conversation through an engine; return its snapshots.

    Returns the snapshots (one per checkpoint, whatever the length: checkpoints that
    fall on one message share its snapshot, and a conversation with no turn keeps
    nothing at any), the timed summarizer (its calls, failures and CPU seconds) and
    the summary budget in tokens.
    """
    counter = counter_factory()
    count = counter(None)
    timed = TimedSummarizer(llm or ExtractiveSummarizer(count))
    messages = conversation.messages(dates=dates)
    texts = [m.text for m in messages]
    said = [turn.said for turn in conversation.turns]  # the history, undated
    marks = [max(1, round(len(messages) * share)) for share in checkpoints]
    store = InMemoryStore()
    sid = conversation.sample_id
    snapshots: list[Snapshot] = []
    with SummaryEngine(store, timed, config=config) as engine:
        budget = injection_budget_tokens(config, timed.context_length(None))
        for seen, message in enumerate(messages, start=1):
            store.save_message(sid, message)
            engine.turn_after(sid)
            if not engine.wait_idle(timeout=WAIT_IDLE_S):
                raise TimeoutError(f"{sid}: the engine did not settle")
            if seen not in marks:
                continue
            active = [m.text for m in store.get_history(sid)]
            folded = texts[: seen - len(active)]
            snapshot = Snapshot(
                seen=seen,
                history="\n".join(said[:seen]),
                summary=engine.build_prompt(sid) or "",
                active="\n".join(active),
                lead=_cut_tokens(folded, budget, count, tail=False),
                tail=_cut_tokens(folded, budget, count, tail=True),
                keep_last="\n".join(texts[max(0, seen - config.keep_recent) : seen]),
            )
            snapshots += [snapshot] * marks.count(seen)  # short: marks coincide
    if not messages:  # nothing said, nothing kept
        snapshots = [Snapshot(0, "", "", "", "", "", "")] * len(marks)
    return snapshots, timed, budget


@attrs.frozen
class Scored:
    """One question at one checkpoint: what it is and which texts keep its answer."""

    sample_id: str
    checkpoint: float
    category: int
    speaker: str  # "first", "second" or "both": who said its evidence
    kept: tuple[tuple[str, bool], ...]


def score(
    conversation: LocomoConversation,
    snapshots: Sequence[Snapshot],
    other_summaries: Sequence[str],
    checkpoints: Sequence[float] = CHECKPOINTS,
) -> list[Scored]:
    """Return every eligible question of every checkpoint, scored on each text.

    ``other_summaries``: another conversation's summary per checkpoint (chance).
    """
    order = {turn.dia_id: i for i, turn in enumerate(conversation.turns)}
    speaker_of = {turn.dia_id: turn.speaker for turn in conversation.turns}
    first = conversation.speakers[0]
    scored = []
    for share, snap, other in zip(checkpoints, snapshots, other_summaries, strict=True):
        history = MatchText(snap.history)
        texts = {
            "summary": MatchText(snap.summary),
            "summary+active": MatchText(snap.summary + "\n" + snap.active),
            "lead": MatchText(snap.lead),
            "tail": MatchText(snap.tail),
            "keep_last": MatchText(snap.keep_last),
            "chance": MatchText(other),
        }
        for question in conversation.questions:
            evidence = [e for e in question.evidence if e in order]
            if (
                question.category not in SCORED_CATEGORIES
                or not evidence
                or max(order[e] for e in evidence) >= snap.seen
                or not history.contains(question.answer)
            ):
                continue
            speakers = {speaker_of[e] == first for e in evidence}
            speaker = (
                "both"
                if len(speakers) > 1
                else ("first" if True in speakers else "second")
            )
            scored.append(
                Scored(
                    conversation.sample_id,
                    share,
                    question.category,
                    speaker,
                    tuple(
                        (name, text.contains(question.answer))
                        for name, text in texts.items()
                    ),
                )
            )
    return scored
