"""Round-trip fidelity of Anthropic requests, measured: 1,000 per store, all exact.

Slow: ``pytest -m slow -s tests/property/test_anthropic_fidelity.py`` prints the share
of generated requests (hostile text, every block type) that come back exactly after
``messages_from_anthropic``, a store, and ``messages_to_anthropic``.
"""

from __future__ import annotations

from uuid import uuid4

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from memory_summary.domain import messages_from_anthropic, messages_to_anthropic
from memory_summary.testing.anthropic_strategies import anthropic_requests
from memory_summary.testing.strategies import normalized

REQUESTS = 1_000


@pytest.mark.slow
def test_every_generated_request_round_trips_exactly_through_the_store(store):
    counts = {"requests": 0, "exact": 0, "turns": 0}

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
        sid = f"s-{uuid4().hex[:8]}"
        for message in messages_from_anthropic(system, messages):
            store.save_message(sid, message)
        back = messages_to_anthropic(store.get_history(sid))
        counts["requests"] += 1
        counts["turns"] += len(messages)
        counts["exact"] += back == (normalized(system), normalized(messages))

    measure()

    print(
        f"\n{type(store).__name__}: {counts['exact']}/{counts['requests']} requests "
        f"({counts['turns']} turns) round-tripped exactly"
    )
    assert counts["requests"] == REQUESTS
    assert counts["exact"] == counts["requests"]
