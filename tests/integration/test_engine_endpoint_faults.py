"""The engine against a real OpenAI-compatible server on loopback: hangs and limits.

The real ``openai`` client over real HTTP (``tests/openai_server.py``), driven through
``SummaryEngine``: a stream kept open with keep-alives is closed at the engine's
deadline (the server sees the client leave) and holds no slot; a context-length error
is retried at half size; a huge reply is stored within the budget.
"""

from __future__ import annotations

import pytest

from memory_summary import SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, OpenAIChatLLM
from tests.integration.conversation import fill
from tests.openai_server import Behaviour, OpenAICompatibleServer

BOUND_S = 10.0
GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."
CONTEXT_ERROR = {
    "error": {
        "message": "This model's maximum context length is 2048 tokens. However, "
        "you requested 3669 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


@pytest.fixture
def llm(server):
    made = OpenAIChatLLM(
        "test-model", base_url=server.base_url, api_key="k", max_retries=0
    )
    yield made
    made.close()


def test_a_stream_kept_open_by_keepalives_is_closed_at_the_deadline(server, llm):
    server.then(
        Behaviour(text="", finish=False, keepalive_s=0.05), Behaviour(text=GOOD)
    )
    store = InMemoryStore()
    config = SummaryConfig(
        threshold=10, keep_recent=4, summarizer_timeout_s=1, max_concurrent_summaries=1
    )
    fill(store, "stuck", 12)
    fill(store, "next", 12)
    with SummaryEngine(store, llm, config=config) as engine:
        stuck = engine.compress("stuck").result(timeout=BOUND_S)
        assert server.disconnected.wait(BOUND_S)  # the stream was closed
        after = engine.compress("next").result(timeout=BOUND_S)

    assert stuck.kind == "trimmed"
    assert "1 s" in stuck.detail or "deadline" in stuck.detail
    assert after.kind == "compressed"  # the slot was free again


def test_a_context_length_error_is_retried_at_half_size(server, llm):
    server.then(
        Behaviour(status=400, error=CONTEXT_ERROR),
        Behaviour(text=GOOD),
        Behaviour(text=GOOD),
    )
    store = InMemoryStore()
    fill(store, "s1", 30)
    with SummaryEngine(store, llm, config=SummaryConfig()) as engine:
        outcome = engine.compress("s1").result(timeout=BOUND_S)

    assert outcome.kind == "compressed"
    assert outcome.summarizer_calls == 3
    assert store.count_history("s1") == 20


def test_a_huge_reply_is_stored_within_the_budget(server, llm):
    server.then(Behaviour(text="word " * 1_000_000))  # 5 MB
    store = InMemoryStore()
    fill(store, "s1", 30)
    with SummaryEngine(store, llm, config=SummaryConfig()) as engine:
        engine.compress("s1").result(timeout=BOUND_S)
        record = engine.summary("s1")

    assert record.tokens <= 819  # 16,384 listed x 0.05
    assert len(record.text) < 16_000
