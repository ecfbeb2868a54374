"""A host's reply that carries server-side compaction: its tokens are the summarizer's.

Anthropic's threshold compaction lists its sampling step in ``usage.iterations``
(``type: "compaction"``), outside the top-level usage. ``record`` adds those tokens
to the session's summarizer usage (one provider-reported call) and measures the
context on the last non-compaction iteration; a reply without one adds nothing.
Through the real ``anthropic`` SDK against the loopback server.
"""

from __future__ import annotations

import threading

import anthropic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import TokenUsage
from memory_summary.domain.replies import compaction_usage
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.anthropic_server import AnthropicServer, Behaviour

COMPACTION = {
    "type": "compaction",
    "input_tokens": 180_000,
    "output_tokens": 3_500,
    "cache_read_input_tokens": 1_000,
    "cache_creation_input_tokens": 0,
}
ANSWER = {
    "type": "message",
    "input_tokens": 23_000,
    "output_tokens": 1_000,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
CONFIG = SummaryConfig(threshold=400, keep_recent=4)


@pytest.fixture
def server():
    with AnthropicServer() as running:
        yield running


def reply_from(server, iterations):
    server.then(Behaviour(text="Noted.", iterations=iterations))
    with anthropic.Anthropic(
        api_key="k", base_url=server.base_url, max_retries=0
    ) as client:
        return client.beta.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            messages=[{"role": "user", "content": "go on"}],
        )


def test_the_compaction_iteration_goes_to_the_summarizer_usage(server):
    reply = reply_from(server, [COMPACTION, ANSWER])
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s1", model="claude-sonnet-4-6")
        chat.prepare("go on")
        chat.record(reply)
        usage = engine.usage("s1")
        by_session = engine.usage_by_session()
        history = store.get_history("s1")

    assert (usage.input_tokens, usage.output_tokens) == (181_000, 3_500)
    assert usage.calls == 1
    assert usage.source == "provider"
    assert by_session == {"s1": usage}
    assert [m.text for m in history] == ["go on", "Noted."]


def test_a_reply_without_compaction_adds_nothing_and_commits_nothing(server):
    reply = reply_from(server, [ANSWER])
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s1", model="claude-sonnet-4-6")
        chat.prepare("go on")
        chat.record(reply)

        assert engine.summary("s1") is None
        assert engine.usage("s1").calls == 0


def test_the_usage_adds_to_a_summary_and_keeps_it():
    store = InMemoryStore()
    summarizer = InstrumentedSummarizer()
    with SummaryEngine(store, summarizer, config=CONFIG) as engine:
        for i in range(12):
            role = "user" if i % 2 == 0 else "assistant"
            store.save_message("s1", Message(role, f"message {i} " + "word " * 40))
        engine.compress("s1").result(timeout=20)
        before = engine.summary("s1")
        chat = engine.conversation("s1")
        chat.prepare("go on")
        chat.record(
            {
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "Noted."}],
                "usage": {
                    "input_tokens": 5,
                    "output_tokens": 1,
                    "iterations": [COMPACTION, ANSWER],
                },
            }
        )
        after = engine.summary("s1")

    assert before is not None
    assert after is not None
    assert after.text == before.text
    assert after.covered_through_id == before.covered_through_id
    assert after.usage.calls == before.usage.calls + 1
    assert after.usage.input_tokens == before.usage.input_tokens + 181_000


def test_a_usage_passed_by_the_host_is_read_the_same_way():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("s1")
        chat.prepare("go on")
        chat.record(
            Message("assistant", "Noted."),
            usage={"input_tokens": 5, "iterations": [COMPACTION, ANSWER]},
        )

        assert engine.usage("s1").output_tokens == 3_500


steps = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["compaction", "message"]),
            "input_tokens": st.integers(0, 10**9),
            "output_tokens": st.integers(0, 10**9),
            "cache_read_input_tokens": st.integers(0, 10**9),
        }
    ),
    max_size=6,
)


@given(steps)
def test_compaction_usage_sums_exactly_the_compaction_entries(iterations):
    found = compaction_usage({"input_tokens": 1, "iterations": iterations})

    compactions = [s for s in iterations if s["type"] == "compaction"]
    if not compactions:
        assert found is None
    else:
        assert found == TokenUsage(
            sum(s["input_tokens"] + s["cache_read_input_tokens"] for s in compactions),
            sum(s["output_tokens"] for s in compactions),
            cache_read_tokens=sum(s["cache_read_input_tokens"] for s in compactions),
        )


@given(st.recursive(st.none() | st.integers() | st.text(), st.lists, max_leaves=8))
def test_compaction_usage_never_raises(junk):
    found = compaction_usage({"iterations": junk})

    assert found is None or found.input_tokens >= 0


def test_a_compression_the_turn_starts_commits_beside_the_usage():
    """The usage is committed before the turn is reported: it fences no fold."""
    store = InMemoryStore()
    summarizer = InstrumentedSummarizer()
    config = SummaryConfig(threshold=10, keep_recent=4)
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s1", Message(role, f"message {i} " + "word " * 40))
    with SummaryEngine(store, summarizer, config=config) as engine:
        chat = engine.conversation("s1")
        chat.prepare("go on")
        chat.record(
            {
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "Noted."}],
                "usage": {"input_tokens": 5, "iterations": [COMPACTION, ANSWER]},
            }
        )
        assert engine.wait_idle(timeout=20)
        record = engine.summary("s1")

    assert record is not None
    assert record.text
    assert record.compressions >= 1
    assert record.usage.calls == record.compressions + 1
    assert record.usage.input_tokens >= 181_000


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
def test_a_compression_already_running_is_not_fenced_by_the_usage(store_kind, tmp_path):
    """The usage waits for the running compression and commits right after it."""
    from memory_summary.adapters import SqliteStore

    store = (
        InMemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "s.db")
    )
    gate = threading.Event()
    summarizer = InstrumentedSummarizer(gate=gate)
    config = SummaryConfig(threshold=10, keep_recent=4)
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s1", Message(role, f"message {i} " + "word " * 40))
    with SummaryEngine(store, summarizer, config=config) as engine:
        running = engine.compress("s1")  # an earlier turn's compression, in flight
        assert summarizer.entered.wait(10)
        chat = engine.conversation("s1")
        chat.prepare("go on")
        chat.record(
            {
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "Noted."}],
                "usage": {"input_tokens": 5, "iterations": [COMPACTION, ANSWER]},
            }
        )
        assert engine.summary("s1") is None  # not yet: the compression still runs
        gate.set()
        outcome = running.result(timeout=20)
        assert engine.wait_idle(timeout=20)
        record = engine.summary("s1")
        failure = engine.health().last_failure
    if store_kind == "sqlite":
        store.close()

    assert outcome.kind != "fenced", outcome
    assert record is not None
    assert record.text
    assert record.usage.calls == summarizer.calls + 1  # every call, and the server's
    assert record.usage.input_tokens >= 181_000
    assert failure is None or "fenced" not in str(failure)


def test_a_compression_queued_but_not_yet_counted_is_not_fenced_either():
    """Between the pool's submit and the job's start the session is busy already."""
    store = InMemoryStore()
    gate = threading.Event()
    summarizer = InstrumentedSummarizer(gate=gate)
    config = SummaryConfig(threshold=10, keep_recent=4)
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        store.save_message("s1", Message(role, f"message {i} " + "word " * 40))
    with SummaryEngine(store, summarizer, config=config) as engine:
        jobs = engine._core._jobs
        real_submit = jobs.submit

        def submit_then_report_usage(*args, **kwargs):
            future = real_submit(*args, **kwargs)
            assert summarizer.entered.wait(10)  # it read the record, it is folding
            usage = {"input_tokens": 5, "iterations": [COMPACTION, ANSWER]}
            engine._account_compaction("s1", compaction_usage(usage))
            return future

        jobs.submit = submit_then_report_usage
        running = engine.compress("s1")
        gate.set()
        outcome = running.result(timeout=20)
        jobs.submit = real_submit
        assert engine.wait_idle(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind != "fenced", outcome
    assert record is not None
    assert record.usage.calls == summarizer.calls + 1
