"""One compression, decided: what to fold, in which chunks, and what it produced.

The compression job (``actors.compression``) reads the store, calls these functions,
calls the summarizer per chunk, and commits each chunk's record together with the
archive of exactly the messages it folded (by id, fenced), so messages saved while the
summarizer works stay active.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import attrs

from .budget import fair_shares, plan_chunks
from .config import Locale
from .content import carries_compaction
from .model import EVENT_MARKER, Message
from .native import NativeArtifact
from .render import render_message, result_names
from .summary import SummaryRecord
from .trigger import Reason
from .truncate import truncate_to_tokens
from .usage import NO_USAGE, SummarizerUsage
from .window import is_summarized, safe_cuts

OutcomeKind = Literal["compressed", "trimmed", "skipped", "fenced", "failed"]
SkipReason = Literal["lease_held", "breaker_open", "nothing_to_fold", "loop_guard"]
"""Why a trigger did not compress (each is a ``Skipped`` event): ``lease_held``: a
compression of the session already runs (this engine, or another worker sharing the
store); ``breaker_open``: the summarizer's circuit breaker is open and
``on_summarizer_failure="keep"`` leaves nothing to do; ``nothing_to_fold``: no message
outside the kept part; ``loop_guard``: folding cannot bring the session under its
trigger, so it waits for enough new tokens."""
SKIP_REASONS: tuple[SkipReason, ...] = (
    "lease_held",
    "breaker_open",
    "nothing_to_fold",
    "loop_guard",
)
OutcomeCode = Literal[
    "summary_written",
    "below_threshold",
    "lease_held",
    "breaker_open",
    "nothing_to_fold",
    "loop_guard",
    "model_unresolved",
    "summarizer_failed",
    "summary_rejected",
    "recovery_paused",
    "fenced",
    "store_failed",
    "engine_stopped",
    "thread_start_failed",
    "internal_error",
]
"""A compression's outcome as a closed code (``Outcome.detail`` says it in words):
the ``SkipReason`` codes and ``below_threshold`` for ``skipped``; ``summary_written``
for ``compressed``; ``summarizer_failed``, ``summary_rejected`` and ``breaker_open``
for a summary that failed (``trimmed``, or ``failed`` in keep mode); the rest for
``fenced`` and ``failed``."""
OVERSIZED_SUFFIX = " […]"


def _floats(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(values)


@attrs.frozen
class Outcome:
    """What one compression request came to.

    ``compressed``: a summary was written; ``trimmed``: the summary failed and the
    engine archived without one (trim-only degrade, the ranges recorded for recovery);
    ``skipped``: nothing to compress, or another worker holds the session;
    ``fenced``: a clear, a forget, a lost lease or another writer changed the session
    meanwhile, so the compression committed nothing more; ``failed``: nothing was
    applied (model unresolved, summarizer down with ``on_summarizer_failure="keep"``,
    store failure, engine stopped). Chunks committed before a fence or failure stay.

    ``summarized`` counts messages folded into the summary (``recovered`` of them
    from ranges archived earlier without one), ``archived`` messages archived.
    ``tokens_before`` and ``tokens_after`` count the active context the compression
    read (the summary plus the active messages of its window) before and after it,
    in the summary model's encoding (None when it never read them); ``usage`` is what
    its summarizer calls consumed and ``duration_s`` its wall-clock time; ``model``
    is the summary model (or a non-LLM summarizer's label) once it was resolved;
    ``call_durations_s`` the seconds each answered summarizer call took, in order.
    ``tokens_estimated``: the messages in ``tokens_before``/``tokens_after`` were
    estimated, not counted (no decision needed their exact count: no
    ``context_window`` and no ``keep_recent_tokens``); the estimate is meant to
    never undercount. The summary's own tokens are always exact.
    """

    session_id: str
    kind: OutcomeKind
    reason: Reason
    detail: str = ""
    summarized: int = 0
    archived: int = 0
    chunks: int = 0
    summarizer_calls: int = 0
    recovered: int = 0
    code: OutcomeCode | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    usage: SummarizerUsage = NO_USAGE
    duration_s: float = 0.0
    model: str | None = None
    call_durations_s: tuple[float, ...] = attrs.field(default=(), converter=_floats)
    tokens_estimated: bool = False

    @property
    def ok(self) -> bool:
        """Tell whether the request ended as the seed's ``done`` (not ``error``)."""
        return self.kind in ("compressed", "skipped")

    @property
    def tokens_saved(self) -> int:
        """Return how many tokens the active context shrank by (0 when unknown)."""
        if self.tokens_before is None or self.tokens_after is None:
            return 0
        return self.tokens_before - self.tokens_after

    @property
    def skip_reason(self) -> SkipReason | None:
        """Return why the request did not compress, when that is a ``SkipReason``."""
        if self.kind == "skipped":
            for reason in SKIP_REASONS:
                if self.code == reason:
                    return reason
        return None


@attrs.frozen
class FoldChunk:
    """Messages one summarizer call folds, their transcript, and the id it covers."""

    messages: tuple[Message, ...]
    transcript: tuple[str, ...]

    @property
    def through_id(self) -> int:
        """Return the id of the last message this chunk archives."""
        last = self.messages[-1].id
        if last is None:
            raise ValueError("a stored message has an id")
        return last


def compacted(page: Sequence[Message], lookup: Sequence[Message]) -> list[bool]:
    """Tell, for each message of ``page``, whether a provider's compaction replaced it.

    A message older than the newest one carrying a ``compaction`` part (Anthropic's
    server-side compaction: a summary of everything before it) is in that summary
    already: the engine never summarizes it again. Stored messages compare by id
    (``lookup`` may hold ``page`` twice); messages without ids by position in ``page``.
    """
    ids = [
        m.id
        for m in lookup
        if isinstance(m.content, tuple)  # text content carries no parts
        and m.id is not None
        and carries_compaction(m.content)
    ]
    if ids:
        newest = max(ids)
        return [m.id is not None and m.id < newest for m in page]
    at = [i for i, m in enumerate(page) if carries_compaction(m.content)]
    return [i < at[-1] for i in range(len(page))] if at else [False] * len(page)


def fold_chunks(
    page: Sequence[Message],
    *,
    lookup: Sequence[Message],
    locale: Locale,
    cut_chars: int,
    count_tokens: Callable[[str], int],
    limit_tokens: int,
    max_count: int,
) -> list[FoldChunk]:
    """Split ``page`` (oldest first) into chunks one summarizer call each can read.

    ``lookup`` (the window) starts with ``page``, so a result's tool name is found in
    ``page`` itself. Messages the summarizer never sees ride along in their chunk
    with no transcript line, so they are archived with it: among them, those before
    the newest message of ``lookup`` carrying a ``compaction`` part, which the
    provider's compaction summary already covers. A chunk never splits a tool-call
    group (``safe_cuts``), so a commit never archives a call and leaves its result
    active. A message, or a group, too long for ``limit_tokens`` is cut to it, never
    dropped.
    """
    names = result_names(page)
    replaced = compacted(page, lookup)
    lines = [
        render_message(m, found, locale=locale, cut=cut_chars)
        if is_summarized(m) and not replaced[index]
        else None
        for index, (m, found) in enumerate(zip(page, names, strict=False))
    ]
    # A token spans at least one UTF-8 byte: a page whose bytes fit needs no count.
    sizes = [len(line.encode("utf-8")) if line is not None else 0 for line in lines]
    exact = sum(sizes) > limit_tokens or len(page) > max_count
    costs = [
        (count_tokens(line) if exact else size) if line is not None else 0
        for line, size in zip(lines, sizes, strict=True)
    ]
    chunks = []
    for span in plan_chunks(costs, max_count, limit_tokens, safe_cuts(page)):
        read = [
            (line, costs[i])
            for i in range(span.start, span.stop)
            if (line := lines[i]) is not None
        ]
        kept = [line for line, _ in read]
        if span.oversized:  # one message, or a group: each line gets its share
            shares = fair_shares([cost for _, cost in read], limit_tokens)
            kept = [
                truncate_to_tokens(line, share, count_tokens, OVERSIZED_SUFFIX)
                for line, share in zip(kept, shares, strict=True)
            ]
        chunks.append(FoldChunk(tuple(page[span.start : span.stop]), tuple(kept)))
    return chunks


def next_record(
    previous: SummaryRecord | None,
    *,
    text: str,
    tokens: int,
    chunk: FoldChunk,
    model: str | None,
    now: float,
    generation: str,
    native: NativeArtifact | None = None,
) -> SummaryRecord:
    """Return the record after ``chunk`` was folded into ``text`` (empty: no call).

    ``native``: the provider's block ``text`` came from; a text summary drops the
    previous one (it no longer holds what the text does).
    """
    base = previous or SummaryRecord(text="", covered_through_id=None, tokens=0)
    if not chunk.transcript:  # only messages the summarizer never reads
        return attrs.evolve(
            base,
            covered_through_id=chunk.through_id,
            generation=generation,
            updated_at=now,
        )
    return attrs.evolve(
        base,
        text=text,
        tokens=tokens,
        covered_through_id=chunk.through_id,
        summarized_count=base.summarized_count + len(chunk.messages),
        compressions=base.compressions + 1,
        model=model,
        updated_at=now,
        generation=generation,
        native=native,
    )


SEPARATOR_TEXTS: dict[Locale, dict[OutcomeKind, str]] = {
    "en": {
        "compressed": (
            "[Conversation compressed: {n} earlier messages summarized and archived]"
        ),
        "trimmed": (
            "[Conversation trimmed: {n} earlier messages archived without a summary]"
        ),
    },
    "zh": {
        "compressed": "[对话已压缩：{n} 条较早的消息已摘要并归档]",
        "trimmed": "[对话已裁剪：{n} 条较早的消息已归档，未生成摘要]",
    },
}


def separator_message(
    outcome: Outcome, *, locale: Locale, now: float
) -> Message | None:
    """Return the archive's separator message for ``outcome``, if it archived any."""
    texts = SEPARATOR_TEXTS[locale]
    if outcome.archived == 0 or outcome.kind not in texts:
        return None
    return Message(
        "system",
        texts[outcome.kind].format(n=outcome.archived),
        kind=EVENT_MARKER,
        timestamp=now,
        metadata={"compression": outcome.kind, "archived": outcome.archived},
    )
