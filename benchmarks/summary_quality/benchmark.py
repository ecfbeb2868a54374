"""The real-conversation benchmark: replay, score, and report (``replay``).

``run_quality`` replays each conversation once per budget factor (the summary budget
times 1 and 4 by default) and reports, for the questions of categories 1, 2 and 4
whose answers the history holds, the share each kept text contains: at the end
(``headline``), per half of the shared conversations (``halves``), per checkpoint,
per category (3 included) and per speaker; and the ``redundancy`` of the final
summaries (``memory_summary.domain.redundancy``).

The halves: the shared development file holds five LoCoMo conversations; rules are
tuned on ``TUNING_IDS`` (conv-26, conv-30) only, and every other conversation is in
the ``measuring`` half (conv-41, conv-42, conv-43, and any conversation the file
adds, such as the held-out ones).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from memory_summary.domain import ConfigError, Summarizer, SummaryConfig
from memory_summary.domain.redundancy import redundancy

from .locomo import CATEGORIES, DatePrefix, LocomoConversation
from .replay import (
    CHECKPOINTS,
    HEADLINE_CATEGORIES,
    TEXTS,
    Scored,
    Snapshot,
    replay,
    score,
)

BUDGET_FACTORS = (1, 4)
TUNING_IDS = ("conv-26", "conv-30")
"""The conversations rules are tuned on; the others measure (module docstring)."""


def half_of(sample_id: str) -> str:
    """Return the half a conversation belongs to: ``tuning`` or ``measuring``.

    >>> half_of("conv-26"), half_of("conv-41")
    ('tuning', 'measuring')
    """
    return "tuning" if sample_id in TUNING_IDS else "measuring"


def _shares(scored: Sequence[Scored]) -> dict[str, dict[str, object]]:
    shares: dict[str, dict[str, object]] = {}
    for name in TEXTS:
        kept = sum(1 for s in scored if dict(s.kept)[name])
        shares[name] = {
            "kept": kept,
            "of": len(scored),
            "share": round(kept / len(scored), 3) if scored else None,
        }
    return shares


def _percent(share: float) -> str:
    return f"{round(share * 100)}%"


def summarize_run(
    scored: Sequence[Scored], checkpoints: Sequence[float] = CHECKPOINTS
) -> dict[str, Any]:
    """Return one run's tables: headline, per checkpoint, category and speaker."""
    final = [s for s in scored if s.checkpoint == checkpoints[-1]]
    headline = [s for s in final if s.category in HEADLINE_CATEGORIES]
    halves = {half_of(s.sample_id) for s in headline}
    return {
        "headline": _shares(headline),
        "halves": {
            half: _shares([s for s in headline if half_of(s.sample_id) == half])
            for half in ("tuning", "measuring")
            if half in halves
        },
        "checkpoints": {
            _percent(share): _shares(
                [
                    s
                    for s in scored
                    if s.checkpoint == share and s.category in HEADLINE_CATEGORIES
                ]
            )
            for share in checkpoints
        },
        "categories": {
            CATEGORIES[category]: _shares([s for s in final if s.category == category])
            for category in sorted({s.category for s in final})
        },
        "speakers": {
            speaker: _shares([s for s in headline if s.speaker == speaker])
            for speaker in ("first", "second", "both")
        },
    }


def run_quality(
    conversations: Sequence[LocomoConversation],
    *,
    llm: Summarizer | None = None,
    config: SummaryConfig | None = None,
    budget_factors: Sequence[float] = BUDGET_FACTORS,
    dates: DatePrefix = "session",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Replay ``conversations`` once per budget factor; return the JSON report.

    Args:
        conversations: LoCoMo conversations (``locomo.load_locomo``).
        llm: the summarizer; None: the offline ``ExtractiveSummarizer``.
        config: the engine's settings (default: the defaults); each factor multiplies
            its ``summary_token_ratio``.
        budget_factors: the budgets to run, as multiples of the configured one.
        dates: where session dates appear in the text (``LocomoConversation.messages``).
        progress: called with one line per replayed conversation.

    Raises:
        ConfigError: no conversation, or a budget factor that is not a finite
            positive number.
    """
    if not conversations:
        raise ConfigError("conversations", 0, "at least one conversation")
    if not budget_factors or any(
        isinstance(f, bool)
        or not isinstance(f, (int, float))
        or not math.isfinite(f)
        or f <= 0
        for f in budget_factors
    ):
        raise ConfigError("budget_factors", list(budget_factors), "finite numbers > 0")
    base = config or SummaryConfig()
    runs = []
    label = ""
    for factor in budget_factors:
        settings = attrs.evolve(
            base, summary_token_ratio=min(base.summary_token_ratio * factor, 1.0)
        )
        snapshots: list[list[Snapshot]] = []
        calls, failures, cpu_s, budget = 0, 0, 0.0, 0
        for conversation in conversations:
            snaps, timed, budget = replay(
                conversation, config=settings, llm=llm, dates=dates
            )
            snapshots.append(snaps)
            calls, cpu_s, label = calls + timed.calls, cpu_s + timed.cpu_s, timed.label
            failures += timed.failures
            if progress is not None:
                progress(
                    f"quality: x{factor:g} {conversation.sample_id}: "
                    f"{len(conversation.messages(dates=dates))} messages, "
                    f"{timed.calls} summarizer calls"
                )
        scored: list[Scored] = []
        for index, conversation in enumerate(conversations):
            other = (
                [s.summary for s in snapshots[(index + 1) % len(conversations)]]
                if len(conversations) > 1
                else [""] * len(snapshots[index])
            )
            scored += score(conversation, snapshots[index], other)
        runs.append(
            {
                "budget_factor": factor,
                "budget_tokens": budget,
                "summarizer_calls": calls,
                "summarizer_failures": failures,
                "cpu_ms_per_call": round(1000 * cpu_s / calls, 3) if calls else 0.0,
                "redundancy": redundancy([snaps[-1].summary for snaps in snapshots]),
                **summarize_run(scored),
            }
        )
    return {
        "summarizer": label,
        "conversations": [c.sample_id for c in conversations],
        "threshold": base.threshold,
        "keep_recent": base.keep_recent,
        "dates": dates,
        "texts": list(TEXTS),
        "runs": runs,
    }


def _cell(share: Mapping[str, Any]) -> str:
    value = share["share"]
    return "-" if value is None else f"{value:.1%} ({share['kept']}/{share['of']})"


def table_rows(report: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return the printed table: one row per run and view, one column per text."""
    rows = []
    for run in report["runs"]:
        views: list[tuple[str, Mapping[str, Any]]] = [
            ("end, cat 1/2/4", run["headline"])
        ]
        views += [(f"end, {k} half", v) for k, v in run.get("halves", {}).items()]
        views += [(f"at {k}", v) for k, v in run["checkpoints"].items()]
        views += [(f"cat {k}", v) for k, v in run["categories"].items()]
        views += [(f"said by {k}", v) for k, v in run["speakers"].items()]
        for view, shares in views:
            rows.append(
                {
                    "budget": f"x{run['budget_factor']:g} ({run['budget_tokens']})",
                    "view": view,
                    **{name: _cell(shares[name]) for name in report["texts"]},
                }
            )
        rows.append(
            {
                "budget": f"x{run['budget_factor']:g} ({run['budget_tokens']})",
                "view": "redundancy, end",
                **{
                    name: f"{run['redundancy']:.1%}" if name == "summary" else "-"
                    for name in report["texts"]
                },
            }
        )
    return rows
