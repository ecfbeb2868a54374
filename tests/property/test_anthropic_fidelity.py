"""Round-trip fidelity of Anthropic requests, measured per store, all exact.

Slow: ``pytest -m slow -s tests/property/test_anthropic_fidelity.py`` prints the share
of generated requests (hostile text, every block type) that come back exactly after
``messages_from_anthropic``, a store, and ``messages_to_anthropic``. Each generated
request goes through every store: generating them is most of the cost. A CI run sends
250 requests; ``HYPOTHESIS_PROFILE=thorough`` sends 1,000.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from memory_summary.domain import messages_from_anthropic, messages_to_anthropic
from memory_summary.testing.anthropic_strategies import anthropic_requests
from memory_summary.testing.strategies import normalized
from tests.contract.stores import store_for

REQUESTS = 1_000 if os.environ.get("HYPOTHESIS_PROFILE") == "thorough" else 250
KINDS = ("memory", "sqlite", "postgres", "redis")


@pytest.fixture
def stores(request, tmp_path) -> Iterator[list[object]]:
    """One store of each kind; one that skips (no server, outside CI) is left out."""
    built: list[object] = []
    opened: list[Iterator[object]] = []
    for kind in KINDS:
        made = store_for(request, kind, tmp_path)
        try:
            built.append(next(made))
        except pytest.skip.Exception:
            continue
        opened.append(made)
    yield built
    for made in opened:
        next(made, None)


@pytest.mark.slow
def test_every_generated_request_round_trips_exactly_through_every_store(stores):
    names = [type(store).__name__ for store in stores]
    counts = {name: {"requests": 0, "exact": 0, "turns": 0} for name in names}

    @settings(
        max_examples=REQUESTS,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(request=anthropic_requests())
    def measure(request):
        system, messages = request
        expected = (normalized(system), normalized(messages))
        for name, store in zip(names, stores, strict=True):
            sid = f"s-{uuid4().hex[:8]}"
            for message in messages_from_anthropic(system, messages):
                store.save_message(sid, message)
            back = messages_to_anthropic(store.get_history(sid))
            counts[name]["requests"] += 1
            counts[name]["turns"] += len(messages)
            counts[name]["exact"] += back == expected

    measure()

    for name, count in counts.items():
        print(
            f"\n{name}: {count['exact']}/{count['requests']} requests "
            f"({count['turns']} turns) round-tripped exactly"
        )
    assert "InMemoryStore" in names
    for count in counts.values():
        assert count["requests"] == REQUESTS
        assert count["exact"] == count["requests"]
