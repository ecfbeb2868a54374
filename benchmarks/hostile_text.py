"""Hostile text: CPU of the heavy steps on one long unbroken word, at n and 8n.

A pasted base64 blob, a run of digits, a letter-only message and a path-like word go
through pin extraction (``extract_pins``), token counting (``TiktokenCounter.count``)
and a whole compression of a session holding that message (``SummaryEngine``, offline
summarizer). Each figure is the p50 of a few runs (``time.perf_counter_ns``);
``growth`` is the 8n time over the n time: linear work stays near 8.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable
from typing import Any

from report import percentile_us

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import InMemoryStore, TiktokenCounter
from memory_summary.domain import extract_pins

QUICK_SIZE = 50_000
FULL_SIZE = 500_000
REPEATS = {True: 1, False: 3}  # quick, full


def _families(size: int) -> dict[str, str]:
    rng = random.Random(7)
    blob = base64.b64encode(rng.randbytes(size * 3 // 4 + 3)).decode()
    return {
        "base64": blob[:size],
        "digits": "7" * size,
        "letters": "a" * size,
        "path": ("ab/" * size)[:size],
    }


def _p50_ms(step: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        began = time.perf_counter_ns()
        step()
        samples.append(time.perf_counter_ns() - began)
    return round(percentile_us(samples, 0.5) / 1000, 3)


def _compression(text: str) -> Callable[[], object]:
    def compress() -> object:
        store = InMemoryStore()
        store.save_message("s", Message("user", text))
        for i in range(29):
            role = "user" if i % 2 == 0 else "assistant"
            store.save_message("s", Message(role, f"turn {i} about order ORD-{i}"))
        with SummaryEngine(store) as engine:
            return engine.compress("s").result(timeout=600)

    return compress


def run(quick: bool) -> list[dict[str, Any]]:
    """Time each step on each family at size n and 8n."""
    size = QUICK_SIZE if quick else FULL_SIZE
    counter = TiktokenCounter()
    small, large = _families(size), _families(8 * size)
    results = []
    for family in small:
        for step, make in (
            ("extract_pins", lambda t: lambda: extract_pins(["User: " + t])),
            ("count_tokens", lambda t: lambda: counter.count(t)),
            ("compression", _compression),
        ):
            at_n = _p50_ms(make(small[family]), REPEATS[quick])
            at_8n = _p50_ms(make(large[family]), REPEATS[quick])
            results.append(
                {
                    "family": family,
                    "step": step,
                    "chars": size,
                    "ms_at_n": at_n,
                    "ms_at_8n": at_8n,
                    "growth": round(at_8n / max(at_n, 0.001), 2),
                }
            )
    return results
