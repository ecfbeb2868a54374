"""A turn that comes while its session compresses is counted again before it runs.

Its trigger was counted before the running compression committed; the follow-up it
leaves goes back through the gate once that compression is done, as a new
``turn_after`` would: it runs only if the session still reaches the threshold, so a
stale one takes no lease and reads nothing. Turns the compression measures itself
(``context_window`` without usage reports) still run as follow-ups.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import attrs
import pytest

from memory_summary import Message, SummaryConfig
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import STORE_KINDS, store_for

CONFIG = SummaryConfig(threshold=10, keep_recent=4)


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


def _counting_leases(store: Any) -> Counter[str]:
    taken: Counter[str] = Counter()
    acquire = store.acquire_lease

    def counted(session_id: str, **kwargs: Any) -> Any:
        taken[session_id] += 1
        return acquire(session_id, **kwargs)

    store.acquire_lease = counted
    return taken


def _save(store: Any, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s", Message(role, f"message {i}"))


def _turn_during_a_compression(store, make_engine, saved_meanwhile: int, **config):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm, config=attrs.evolve(CONFIG, **config))
    taken = _counting_leases(store)
    _save(store, 12)
    engine.turn_after("s")
    assert llm.entered.wait(10)  # the compression holds the lease, summarizing
    _save(store, saved_meanwhile, start=12)
    engine.turn_after("s")  # counted now: 12 + saved, above the threshold
    gate.set()
    assert engine.wait_idle(timeout=30)
    return llm, taken


def test_a_turn_the_compression_left_below_the_threshold_does_not_run(
    store, make_engine
):
    llm, taken = _turn_during_a_compression(store, make_engine, saved_meanwhile=1)

    assert llm.calls == 1
    assert taken["s"] == 1  # the follow-up took no lease
    assert store.count_history("s") == 5  # 4 kept + 1 saved meanwhile


def test_a_turn_still_above_the_threshold_runs_after_the_compression(
    store, make_engine
):
    llm, taken = _turn_during_a_compression(store, make_engine, saved_meanwhile=10)

    assert llm.calls == 2
    assert taken["s"] == 2
    assert store.count_history("s") == 4
