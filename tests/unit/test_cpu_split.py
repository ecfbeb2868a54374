"""``benchmarks/cpu_split.py``: what it wraps still exists, and it undoes its wrapping.

The CPU split wraps module functions by name; a refactor that moves one would
otherwise surface only when CI runs the benchmarks.
"""

from __future__ import annotations

import threading

from cpu_split import ComponentClock, engine_components

from memory_summary.adapters import InMemoryStore, tokens
from memory_summary.domain import compression_fold


def test_every_component_it_names_is_wrapped_and_restored():
    store = InMemoryStore()
    before = (compression_fold.with_pins, compression_fold.check_summary, store.commit)
    clock = ComponentClock(threading.current_thread())

    with engine_components(clock, store):
        assert compression_fold.with_pins is not before[0]
        assert compression_fold.check_summary is not before[1]
        assert store.commit is not before[2]
        tokens.estimate_tokens("a few words to count")

    assert clock.calls["host.counting"] == 1
    assert clock.ns["host.counting"] > 0
    after = (compression_fold.with_pins, compression_fold.check_summary, store.commit)
    assert after == before
