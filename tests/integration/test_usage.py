"""Summarizer usage, reported by the endpoint or counted: outcome, record, engine.

The OpenAI adapter runs with the real client over real HTTP against the loopback
server, which reports usage when asked (prompt tokens: the words of the request;
completion tokens: the pieces it streamed) and records every figure it sent.
"""

from __future__ import annotations

import attrs
import pytest

from memory_summary import Compressing, SummaryConfig
from memory_summary.adapters import InMemoryStore, OpenAIChatLLM, counter_factory
from memory_summary.adapters.tokens import estimate_tokens
from memory_summary.domain import NO_USAGE, SummarizerUsage
from memory_summary.domain.measure import MESSAGE_OVERHEAD_TOKENS
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import every_store
from tests.integration.conversation import fill
from tests.openai_server import Behaviour, OpenAICompatibleServer

SMALL = SummaryConfig(threshold=10, keep_recent=4)
GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."
MESSAGE = [("system", "Summarize."), ("user", "User: hi, it is sunny in Paris today.")]


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        running.then(Behaviour(text=GOOD))
        yield running


@pytest.fixture
def llm(server):
    made = OpenAIChatLLM(
        "test-model", base_url=server.base_url, api_key="k", max_retries=0
    )
    yield made
    made.close()


def reported(sent: dict[str, int]) -> tuple[int, int]:
    return sent["prompt_tokens"], sent["completion_tokens"]


def request_messages():
    from memory_summary import Message

    return [Message(role, text) for role, text in MESSAGE]


# -- the adapter -----------------------------------------------------------------------


def test_a_stream_asks_for_usage_and_reports_what_the_endpoint_sent(server, llm):
    stream = llm.stream(request_messages(), max_tokens=100, temperature=0.3)

    text = "".join(stream)

    assert text == GOOD
    assert server.requests[-1]["stream_options"] == {"include_usage": True}
    assert len(server.usage_sent) == 1
    assert (stream.usage.input_tokens, stream.usage.output_tokens) == reported(
        server.usage_sent[0]
    )
    assert stream.usage.input_tokens == 9  # "Summarize." + 8 words
    assert stream.usage.output_tokens == len(GOOD.split(" "))


def test_a_stream_of_an_endpoint_that_reports_nothing_has_no_usage(server, llm):
    server.then(Behaviour(text=GOOD, report_usage=False))
    stream = llm.stream(request_messages(), max_tokens=100, temperature=0.3)

    assert "".join(stream) == GOOD
    assert stream.usage is None


def test_an_endpoint_that_rejects_stream_options_is_asked_without_them(server, llm):
    server.then(Behaviour(text=GOOD, reject_stream_options=True))

    first = llm.stream(request_messages(), max_tokens=100, temperature=0.3)
    first_text = "".join(first)
    second = llm.stream(request_messages(), max_tokens=100, temperature=0.3)
    second_text = "".join(second)

    assert first_text == second_text == GOOD
    assert first.usage is None
    assert second.usage is None
    asked = ["stream_options" in body for body in server.requests]
    assert asked == [True, False, False]  # refused once, then never asked again


def test_complete_with_usage_returns_the_reported_usage(server, llm):
    reply = llm.complete_with_usage(request_messages(), max_tokens=100, temperature=0.3)

    assert reply.text == GOOD
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == reported(
        server.usage_sent[-1]
    )
    assert llm.complete(request_messages(), max_tokens=100, temperature=0.3) == GOOD


# -- the engine ------------------------------------------------------------------------


def test_provider_usage_reaches_the_outcome_the_record_and_engine_usage(
    store, make_engine, server, llm
):
    engine = make_engine(store, llm, config=SMALL)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 12)
    fill(store, "s2", 12)

    first = engine.compress("s1").result(timeout=10)
    second = engine.compress("s2").result(timeout=10)

    assert first.kind == second.kind == "compressed"
    sent = [reported(u) for u in server.usage_sent]
    assert len(sent) == 2
    for outcome, (prompt, completion) in zip((first, second), sent, strict=True):
        assert outcome.usage.input_tokens == prompt
        assert outcome.usage.output_tokens == completion
        assert outcome.usage.calls == 1
        assert outcome.usage.source == "provider"
        assert outcome.usage.summarizer_s > 0
        assert outcome.duration_s >= outcome.usage.summarizer_s
    assert engine.summary("s1").usage == first.usage
    assert engine.usage("s1") == first.usage
    assert engine.usage("s2") == second.usage
    total = engine.usage()
    assert (total.input_tokens, total.output_tokens, total.calls) == (
        sent[0][0] + sent[1][0],
        sent[0][1] + sent[1][1],
        2,
    )
    done = [e for e in events if isinstance(e, Compressing) and e.status == "done"]
    assert [e.outcome for e in done] == [first, second]


@pytest.mark.parametrize("window", [None, 100_000])
def test_usage_is_counted_and_marked_when_the_endpoint_reports_none(
    store, make_engine, server, llm, window
):
    server.then(Behaviour(text=GOOD, reject_stream_options=True))
    engine = make_engine(store, llm, config=attrs.evolve(SMALL, context_window=window))
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    # Exact only where a budget reads it (context_window); else estimated, never fewer.
    # "test-model" is unknown to tiktoken: the engine counts with its safety margin.
    exact = counter_factory(margin=SummaryConfig().token_safety_margin)("test-model")
    count = exact if window else estimate_tokens
    sent = server.requests[-1]["messages"]
    assert outcome.kind == "compressed"
    assert server.usage_sent == []
    assert outcome.usage.source == "counted"
    assert outcome.usage.counted_calls == outcome.usage.calls == 1
    assert outcome.usage.estimated_calls == (0 if window else 1)
    assert outcome.usage.input_tokens == sum(count(m["content"]) for m in sent)
    assert outcome.usage.output_tokens == count(GOOD)
    if window is None:
        assert outcome.usage.input_tokens >= sum(exact(m["content"]) for m in sent)
    assert engine.usage("s1") == outcome.usage


@pytest.mark.parametrize("window", [None, 100_000])
def test_a_summarizer_without_usage_is_counted_with_the_engines_tokenizer(
    store, make_engine, window
):
    llm = ScriptedSummarizer(GOOD)
    engine = make_engine(store, llm, config=attrs.evolve(SMALL, context_window=window))
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    count = counter_factory()(None) if window else estimate_tokens
    assert outcome.usage.source == "counted"
    assert outcome.usage.is_estimate == (window is None)
    assert outcome.usage.input_tokens == sum(count(m.content) for m in llm.calls[0])
    assert outcome.usage.output_tokens == count(GOOD)
    assert engine.summary("s1").usage == outcome.usage


def test_totals_carry_forward_across_commits_and_go_with_clear_and_forget(
    store, make_engine
):
    llm = ScriptedSummarizer(GOOD, f"{GOOD} Then they planned a trip to Lyon.")
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)
    first = engine.compress("s1").result(timeout=10)
    fill(store, "s1", 10, start=12)

    second = engine.compress("s1").result(timeout=10)

    assert second.kind == "compressed"
    assert engine.usage("s1") == first.usage.plus(second.usage)
    assert engine.usage("s1").calls == 2
    engine.clear("session", "s1")
    assert engine.usage("s1") == NO_USAGE
    fill(store, "s1", 12, start=22)
    third = engine.compress("s1").result(timeout=10)
    assert engine.usage("s1") == third.usage
    engine.forget("s1")
    assert engine.usage("s1") == NO_USAGE
    assert engine.usage() == NO_USAGE


def test_a_rejected_reply_in_keep_mode_still_records_its_usage(store, make_engine):
    llm = ScriptedSummarizer("")  # empty: rejected, nothing archived in keep mode
    config = SummaryConfig(threshold=10, keep_recent=4, on_summarizer_failure="keep")
    engine = make_engine(store, llm, config=config)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "failed"
    assert outcome.code == "summary_rejected"
    assert store.count_history("s1") == 12
    assert outcome.usage.calls == 1
    assert engine.usage("s1") == outcome.usage
    assert engine.summary("s1").text == ""


def test_a_failed_call_reports_no_usage(store, make_engine):
    from memory_summary import SummarizerError

    engine = make_engine(store, ScriptedSummarizer(SummarizerError("down")))
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "trimmed"
    assert outcome.code == "summarizer_failed"
    assert outcome.summarizer_calls == 1
    assert outcome.usage == NO_USAGE
    assert engine.usage("s1") == NO_USAGE


def test_outcomes_count_the_active_context_when_a_token_keep_decides(
    store, make_engine
):
    config = attrs.evolve(SMALL, keep_recent_tokens=100_000)  # the count still binds
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=config)
    fill(store, "s1", 12)
    count = counter_factory()(None)

    outcome = engine.compress("s1").result(timeout=10)

    framing = MESSAGE_OVERHEAD_TOKENS  # what each message costs in a request
    before = sum(count(f"message {i} of s1.") + framing for i in range(12))
    after = engine.summary("s1").tokens + sum(
        count(m.content) + framing for m in store.get_history("s1")
    )
    assert not outcome.tokens_estimated
    assert outcome.tokens_before == before
    assert outcome.tokens_after == after
    assert outcome.tokens_saved == before - after


def test_outcomes_estimate_the_active_context_when_no_decision_counts_it(
    store, make_engine
):
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    framing = MESSAGE_OVERHEAD_TOKENS
    texts = [f"message {i} of s1." for i in range(12)]
    before = sum(estimate_tokens(text) + framing for text in texts)
    after = engine.summary("s1").tokens + sum(
        estimate_tokens(m.content) + framing for m in store.get_history("s1")
    )
    count = counter_factory()(None)
    exact = sum(count(text) + framing for text in texts)
    assert outcome.tokens_estimated
    assert outcome.tokens_before == before
    assert outcome.tokens_before >= exact  # an estimate never undercounts
    assert outcome.tokens_after == after


@every_store
def test_usage_reads_every_session_of_the_store(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    for sid in ("a", "b", "c"):
        fill(store, sid, 12)
        engine.compress(sid).result(timeout=10)

    by_session = engine.usage_by_session()

    assert sorted(by_session) == ["a", "b", "c"]
    assert all(usage.calls == 1 for usage in by_session.values())
    assert engine.usage() == SummarizerUsage().plus(by_session["a"]).plus(
        by_session["b"]
    ).plus(by_session["c"])


@every_store
def test_usage_of_all_sessions_skips_records_it_cannot_read(store, make_engine):
    from tests.contract.stores import kind_of, write_raw_metadata

    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "a", 12)
    outcome = engine.compress("a").result(timeout=10)
    store.save_metadata("summary", "b", {"no": "summary here"})
    if kind_of(store) != "memory":  # only a SQL store can hold undecodable rows
        write_raw_metadata(store, "summary", "c", "{not json")

    by_session = engine.usage_by_session()

    assert by_session == {"a": outcome.usage}
    assert engine.usage() == outcome.usage


class StoreWithoutPages(InMemoryStore):
    """A host's store that predates ``metadata_page``."""

    metadata_page = None


def test_usage_of_all_sessions_works_on_a_store_without_pages(make_engine):
    from memory_summary.domain import MetadataPages

    store = StoreWithoutPages()
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    for sid in ("a", "b"):
        fill(store, sid, 12)
        engine.compress(sid).result(timeout=10)

    by_session = engine.usage_by_session()

    assert not isinstance(store, MetadataPages)
    assert sorted(by_session) == ["a", "b"]
    assert engine.usage().calls == 2
