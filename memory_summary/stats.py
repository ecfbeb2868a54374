"""What compression cost, per session and overall: the data of `memory-summary stats`.

``collect_stats`` reads every summary record of a store (page by page, unreadable ones
skipped) and returns plain values; ``stats_table``, ``stats_json`` and ``usage_line``
render them (the table shows stored text through ``terminal_text.shown``: a session
id cannot drive the terminal). The totals are the ones ``SummaryEngine.usage()``
returns: they live in the summary records, so a ``clear`` or ``forget`` of a session
drops its share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from memory_summary.actors.records import RecordReader
from memory_summary.domain import (
    CompressionStore,
    SummarizerUsage,
    SummaryRecord,
    total_usage,
)
from memory_summary.terminal_text import shown

if TYPE_CHECKING:
    from rich.table import Table


@attrs.frozen
class SessionStats:
    """One session's summary record, as far as cost and coverage go."""

    session_id: str
    usage: SummarizerUsage
    compressions: int
    summarized: int
    summary_tokens: int
    unsummarized: int
    model: str | None

    @classmethod
    def of(cls, session_id: str, record: SummaryRecord) -> SessionStats:
        """Return the stats of ``record``, the summary record of ``session_id``."""
        return cls(
            session_id=session_id,
            usage=record.usage,
            compressions=record.compressions,
            summarized=record.summarized_count,
            summary_tokens=record.tokens,
            unsummarized=sum(last - first + 1 for first, last in record.unsummarized),
            model=record.model,
        )


@attrs.frozen
class UsageStats:
    """Every session's stats (most summarizer tokens first) and their totals."""

    sessions: tuple[SessionStats, ...]

    @property
    def total(self) -> SummarizerUsage:
        """Return the summarizer usage of all sessions together."""
        return total_usage(s.usage for s in self.sessions)


def collect_stats(store: CompressionStore) -> UsageStats:
    """Return the stats of every session with a readable summary record in ``store``.

    Example:
        >>> from memory_summary.adapters import InMemoryStore
        >>> collect_stats(InMemoryStore()).total.calls
        0
    """
    sessions = [SessionStats.of(sid, r) for sid, r in RecordReader(store).scan()]
    sessions.sort(key=lambda s: (-s.usage.total_tokens, s.session_id))
    return UsageStats(tuple(sessions))


def usage_line(usage: SummarizerUsage) -> str:
    """Return one line saying what a session's (or all) summarizing cost.

    >>> usage_line(SummarizerUsage(1200, 300, 2, 0, 3.5))
    'usage: 1,200 input + 300 output tokens in 2 call(s) (reported by the provider), 3.5 s in the summarizer'
    """  # noqa: E501 - the doctest's expected output is one line
    if usage.calls == 0:
        return "usage: no summarizer call recorded"
    source = {
        "provider": "reported by the provider",
        "counted": "counted with the engine's tokenizer",
        "mixed": f"{usage.counted_calls} call(s) counted, the rest reported",
    }[usage.source or "counted"]
    return (
        f"usage: {usage.input_tokens:,} input + {usage.output_tokens:,} output "
        f"tokens in {usage.calls:,} call(s) ({source}), "
        f"{usage.summarizer_s:.1f} s in the summarizer"
    )


def _usage_json(usage: SummarizerUsage) -> dict[str, object]:
    return {**usage.to_mapping(), "source": usage.source}


def stats_json(stats: UsageStats, *, limit: int | None = None) -> dict[str, object]:
    """Return the stats as JSON-compatible data: the sessions, then the total.

    ``limit`` keeps the costliest sessions only; the total counts all of them
    (``session_count``), and ``sessions_shown`` says how many are listed.
    """
    listed = stats.sessions if limit is None else stats.sessions[:limit]
    return {
        "sessions": [
            {
                "session_id": s.session_id,
                "usage": _usage_json(s.usage),
                "compressions": s.compressions,
                "summarized": s.summarized,
                "summary_tokens": s.summary_tokens,
                "unsummarized": s.unsummarized,
                "model": s.model,
            }
            for s in listed
        ],
        "total": {
            **_usage_json(stats.total),
            "session_count": len(stats.sessions),
            "sessions_shown": len(listed),
        },
    }


def stats_table(stats: UsageStats, *, limit: int | None = None) -> Table:
    """Return a table: the ``limit`` costliest sessions, then the total of all."""
    from rich.table import Table  # the CLI's table library, loaded when rendering

    listed = stats.sessions if limit is None else stats.sessions[:limit]
    table = Table(
        title="summarizer usage per session",
        title_justify="left",
        box=None,
        padding=(0, 1),
        show_footer=True,
    )
    total = stats.total
    hidden = len(stats.sessions) - len(listed)
    footer = f"all {len(stats.sessions)}" + (f" ({hidden} not shown)" if hidden else "")
    rows = [
        (
            shown(s.session_id),
            f"{s.usage.calls:,}",
            f"{s.usage.input_tokens:,}",
            f"{s.usage.output_tokens:,}",
            shown(s.usage.source or "-"),
            f"{s.usage.summarizer_s:.1f}",
            f"{s.summarized:,}",
            f"{s.summary_tokens:,}",
        )
        for s in listed
    ]
    columns = (
        ("session", footer),
        ("calls", f"{total.calls:,}"),
        ("input", f"{total.input_tokens:,}"),
        ("output", f"{total.output_tokens:,}"),
        ("source", total.source or "-"),
        ("seconds", f"{total.summarizer_s:.1f}"),
        ("folded", f"{sum(s.summarized for s in stats.sessions):,}"),
        ("summary", ""),
    )
    for index, (name, foot) in enumerate(columns):
        width = max(len(name), len(foot), *(len(row[index]) for row in rows))
        table.add_column(
            name,
            footer=foot,
            justify="left" if name in ("session", "source") else "right",
            no_wrap=True,
            min_width=min(width, 40),
            max_width=40,
            overflow="ellipsis",
        )
    for row in rows:
        table.add_row(*row)
    return table
