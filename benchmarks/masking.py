"""Masking old tool results: tokens sent and summarizer calls on a tool-heavy agent.

One agent session: each user turn runs a few tool calls whose results are long (logs,
query rows, file reads: 300 to 2,500 tokens), then a short answer. The engine measures
usage itself (``context_window``, the token trigger; the count trigger is set out of
reach) and the host sends ``engine.assemble(...)`` of the active history each turn.
Every configuration replays the same seeded conversation; the rows compare masking
off with ``mask_tool_results_after`` = 1, 2 and 4 user turns: the tokens of every
request sent to the chat model (summary included), the summarizer's calls and input.
"""

from __future__ import annotations

import random
from typing import Any

from fakes import LatencySummarizer

from memory_summary import Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import InMemoryStore, TiktokenCounter
from memory_summary.domain import message_tokens

WINDOW = 32_000
SETTINGS = (None, 1, 2, 4)
TOOLS = ("read_file", "run_query", "grep_logs", "http_get")


def conversation(turns: int, seed: int = 7) -> list[list[Message]]:
    """Return the session's turns: user, tool calls with long results, an answer."""
    rng = random.Random(seed)
    out = []
    for turn in range(turns):
        messages = [Message("user", f"Step {turn}: check component c{turn} please.")]
        for call_no in range(rng.randint(1, 3)):
            tool = rng.choice(TOOLS)
            call_id = f"call_{turn}_{call_no}"
            call = ToolCall(call_id, tool, f'{{"target": "c{turn}", "n": {call_no}}}')
            messages.append(Message("assistant", None, tool_calls=[call]))
            rows = rng.randint(40, 330)
            body = "\n".join(
                f"{tool} c{turn} row {r}: status=ok latency={rng.randint(1, 900)}ms"
                for r in range(rows)
            )
            messages.append(Message("tool", body, tool_call_id=call_id))
        messages.append(Message("assistant", f"Component c{turn} looks healthy."))
        out.append(messages)
    return out


def measure(after: int | None, turns: list[list[Message]]) -> dict[str, Any]:
    """Replay ``turns`` with masking after ``after`` user turns (None: off)."""
    count = TiktokenCounter("o200k_base").count
    config = SummaryConfig(
        threshold=10_000,
        keep_recent=30,
        context_window=WINDOW,
        mask_tool_results_after=after,
    )
    store = InMemoryStore()
    llm = LatencySummarizer(0.0, count_tokens=count)
    sent: list[int] = []
    system = Message("system", "You are an operations agent.")
    with SummaryEngine(store, llm, config=config) as engine:
        for messages in turns:
            for message in messages:
                store.save_message("s", message)
            request = engine.assemble([system, *store.get_history("s")], "s")
            sent.append(sum(message_tokens(m, count) for m in request))
            engine.turn_after("s")
            engine.wait_idle(timeout=120)
        stored = sum(message_tokens(m, count) for m in store.get_full_history("s"))
    return {
        "mask_after": "off" if after is None else after,
        "turns": len(turns),
        "stored_tokens": stored,
        "request_tokens_total": sum(sent),
        "request_tokens_mean": round(sum(sent) / len(sent)),
        "request_tokens_max": max(sent),
        "summarizer_calls": llm.calls,
        "summarizer_input_tokens": llm.input_tokens,
    }


def run(quick: bool) -> list[dict[str, Any]]:
    """Measure each setting on the same conversation; add savings against off."""
    turns = conversation(30 if quick else 120)
    rows = [measure(after, turns) for after in SETTINGS]
    base = rows[0]
    for row in rows:
        saved = base["request_tokens_total"] - row["request_tokens_total"]
        row["tokens_saved_share"] = round(saved / base["request_tokens_total"], 3)
        row["summarizer_calls_avoided"] = (
            base["summarizer_calls"] - row["summarizer_calls"]
        )
    return rows
