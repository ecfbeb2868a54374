"""Summarizer cost: input tokens sent per token of archived history, against the ideal.

The ideal sends each archived message once, plus the previous summary once per call.
"""

from __future__ import annotations

from fakes import LatencySummarizer

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, TiktokenCounter

CONFIGS = {
    "default 30/20": SummaryConfig(),
    "threshold 60/20": SummaryConfig(threshold=60),
    "threshold 100/10": SummaryConfig(threshold=100, keep_recent=10),
    "keep_recent 0": SummaryConfig(keep_recent=0),
}


class SmallContextSummarizer(LatencySummarizer):
    """A summarizer with an 8k window: large folds are chunked."""

    def context_length(self, model: str | None = None) -> int:
        return 8192


def measure(name: str, config: SummaryConfig, turns: int, small: bool = False) -> dict:
    """Drive one session for ``turns`` turns and compare sent tokens to the ideal."""
    """Drive one session for ``turns`` turns and compare sent tokens to the ideal."""
    count = TiktokenCounter("o200k_base").count
    store = InMemoryStore()
    llm = (SmallContextSummarizer if small else LatencySummarizer)(
        0.0, count_tokens=count
    )
    with SummaryEngine(store, llm, config=config) as engine:
        for turn in range(turns):
            store.save_message(
                "s",
                Message(
                    "user",
                    f"Question {turn}: what about item {turn}? "
                    "I would like a detailed comparison please.",
                ),
            )
            store.save_message(
                "s",
                Message(
                    "assistant",
                    f"Answer {turn}: item {turn} costs "
                    f"{turn * 3} euros and ships in {turn % 7} days.",
                ),
            )
            engine.turn_after("s")
            engine.wait_idle(timeout=60)
        active = {m.id for m in store.get_history("s")}
        archived = [m for m in store.get_full_history("s") if m.id not in active]
    archived_tokens = sum(
        count(f"{m.role.capitalize()}: {m.content}") for m in archived
    )
    ideal = archived_tokens + llm.previous_tokens
    return {
        "config": name,
        "turns": turns,
        "calls": llm.calls,
        "archived": len(archived),
        "input_tokens": llm.input_tokens,
        "archived_tokens": archived_tokens,
        "ideal_tokens": ideal,
        "ratio_to_ideal": round(llm.input_tokens / ideal, 3) if ideal else None,
    }


def run(quick: bool) -> list[dict]:
    """Measure each configuration over one long session."""
    turns = 80 if quick else 400
    rows = [measure(name, config, turns) for name, config in CONFIGS.items()]
    rows.append(measure("default, 8k summarizer", SummaryConfig(), turns, small=True))
    return rows
