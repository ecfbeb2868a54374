"""The report of a fact-retention run: per conversation, per locale and kind."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

import attrs

from memory_summary.domain.redundancy import redundancy
from summary_quality.text_table import render_table

from .planted import HARD_KINDS, KEEP_RECENT, KINDS, THRESHOLD, Locale, PlantedFact


@attrs.frozen
class ConversationResult:
    """What one conversation's final summary kept, and what it took."""

    locale: Locale
    index: int
    messages: int
    facts: tuple[PlantedFact, ...]
    retained: tuple[bool, ...]
    compressions: int
    degraded: int
    summarizer_calls: int
    summary_tokens: int
    budget_tokens: int
    seconds: float
    summary: str = ""  # the final injected summary

    def to_mapping(self) -> dict[str, object]:
        return {
            "locale": self.locale,
            "index": self.index,
            "messages": self.messages,
            "compressions": self.compressions,
            "degraded": self.degraded,
            "summarizer_calls": self.summarizer_calls,
            "summary_tokens": self.summary_tokens,
            "budget_tokens": self.budget_tokens,
            "seconds": round(self.seconds, 3),
            "redundancy": redundancy([self.summary]),
            "facts": [
                {
                    "kind": f.kind,
                    "key": f.label,
                    "message_index": f.message_index,
                    "retained": kept,
                }
                for f, kept in zip(self.facts, self.retained, strict=True)
            ],
        }


def _share(retained: int, planted: int) -> dict[str, object]:
    ratio = round(retained / planted, 3) if planted else None
    return {"retained": retained, "planted": planted, "ratio": ratio}


@attrs.frozen
class FactsReport:
    """The retention of a run, per locale and kind, and what the run took."""

    summarizer: str
    seed: int
    conversations_per_locale: int
    locales: tuple[Locale, ...]
    results: tuple[ConversationResult, ...]
    generator: str = "standard"

    @property
    def compressions(self) -> int:
        """Return the compressions that wrote a summary, over every conversation."""
        return sum(r.compressions for r in self.results)

    def to_mapping(self) -> dict[str, object]:
        """Return the report as JSON-compatible data (what ``table_rows`` reads)."""
        groups: dict[str, list[ConversationResult]] = {
            locale: [r for r in self.results if r.locale == locale]
            for locale in self.locales
        }
        groups["all"] = list(self.results)
        planted = {f.kind for r in self.results for f in r.facts}
        kinds = [*KINDS, *(kind for kind in HARD_KINDS if kind in planted)]
        retention: dict[str, dict[str, object]] = {}
        runs: dict[str, dict[str, object]] = {}
        for name, results in groups.items():
            pairs = [
                (f.kind, kept)
                for r in results
                for f, kept in zip(r.facts, r.retained, strict=True)
            ]
            retention[name] = {
                kind: _share(
                    sum(kept for k, kept in pairs if k == kind),
                    sum(1 for k, _ in pairs if k == kind),
                )
                for kind in kinds
            }
            retention[name]["all"] = _share(sum(kept for _, kept in pairs), len(pairs))
            tokens = [r.summary_tokens for r in results]
            runs[name] = {
                "conversations": len(results),
                "compressions": sum(r.compressions for r in results),
                "degraded": sum(r.degraded for r in results),
                "summarizer_calls": sum(r.summarizer_calls for r in results),
                "summary_tokens_mean": round(statistics.fmean(tokens), 1)
                if tokens
                else 0,
                "summary_tokens_max": max(tokens, default=0),
                "budget_tokens": max((r.budget_tokens for r in results), default=0),
                "redundancy": redundancy([r.summary for r in results]),
            }
        return {
            "summarizer": self.summarizer,
            "generator": self.generator,
            "seed": self.seed,
            "conversations_per_locale": self.conversations_per_locale,
            "locales": list(self.locales),
            "threshold": THRESHOLD,
            "keep_recent": KEEP_RECENT,
            "retention": retention,
            "runs": runs,
            "conversations": [r.to_mapping() for r in self.results],
        }

    def render(self) -> str:
        """Return the printed report: a heading and the per-kind table."""
        data = self.to_mapping()
        heading = (
            f"fact retention: {self.summarizer}, {self.generator} conversations, "
            f"seed {self.seed}, "
            f"{self.conversations_per_locale} conversation(s) per locale, "
            f"threshold {THRESHOLD}, keep_recent {KEEP_RECENT}"
        )
        return heading + "\n" + render_table(table_rows(data))


def _cell(share: Mapping[str, object]) -> str:
    ratio = share["ratio"]
    percent = "-" if not isinstance(ratio, float) else f"{ratio:.0%}"
    return f"{share['retained']}/{share['planted']} ({percent})"


def table_rows(data: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return the table (one row per kind, then the run's figures) of ``to_mapping``."""
    retention, runs = data["retention"], data["runs"]
    columns = [*data["locales"], "all"]
    rows = [
        {
            "kind": kind if kind != "all" else "all facts",
            **{c: _cell(retention[c][kind]) for c in columns},
        }
        for kind in (*(k for k in retention["all"] if k != "all"), "all")
    ]
    figures = {
        "summary tokens (mean/max/budget)": lambda r: (
            f"{r['summary_tokens_mean']:.0f}/{r['summary_tokens_max']}/"
            f"{r['budget_tokens']}"
        ),
        "compressions (degraded)": lambda r: f"{r['compressions']} ({r['degraded']})",
        "summarizer calls": lambda r: str(r["summarizer_calls"]),
        "redundancy of the summaries": lambda r: f"{r['redundancy']:.1%}",
    }
    rows += [
        {"kind": name, **{c: show(runs[c]) for c in columns}}
        for name, show in figures.items()
    ]
    return rows
