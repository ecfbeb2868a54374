"""Resolving the summary model: bounded at start, backed off during an outage.

While the model cannot be resolved, ``build_prompt`` neither starts a thread nor asks
the endpoint per call; whatever is known of the model, the injected text fits its
budget (the seed's floor while the length is unknown) in the encoding of the model
the request goes to.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import (
    LLMRef,
    SummaryConfig,
    SummaryEngine,
    SummaryRecord,
)
from memory_summary.actors.summary_model import ModelResolver
from memory_summary.adapters import InMemoryStore, counter_factory
from memory_summary.domain import NAMESPACE, injection_budget_tokens
from memory_summary.domain.backoff import MAX_DELAY_S
from memory_summary.domain.budget import MIN_SUMMARY_TOKENS
from memory_summary.domain.injection import TRUNCATION_SUFFIXES
from memory_summary.injected_prompts import InjectedPrompts
from memory_summary.testing.strategies import clean_texts

LOCAL_LOOKUP_S = 0.05  # well inside start()'s bound of 0.5 s
SUMMARY = "会话摘要：用户在规划去成都的旅行，预算一万元，偏好火锅和熊猫基地。" * 30


class DownEndpoint:
    """A summarizer whose endpoint is down: every lookup fails; records each one."""

    model = "gpt-4o-mini"

    def __init__(self) -> None:
        self.lookups: list[threading.Thread] = []  # keeps the threads alive: distinct

    def context_length(self, model: str | None = None) -> int | None:
        self.lookups.append(threading.current_thread())
        raise ConnectionError("connection refused")

    def complete(self, messages, **kwargs) -> str:
        raise ConnectionError("connection refused")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def thread_starts(monkeypatch) -> Iterator[list[threading.Thread]]:
    """Record every thread started while the test runs."""
    started: list[threading.Thread] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self)
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    return started


def with_summary(store, session_id: str = "s") -> None:
    record = SummaryRecord(
        SUMMARY, covered_through_id=None, tokens=len(SUMMARY), generation="g1"
    )
    store.save_metadata(NAMESPACE, session_id, record.to_mapping())


def test_an_outage_costs_no_thread_and_no_request_per_build_prompt(thread_starts):
    store = InMemoryStore()
    with_summary(store)
    llm = DownEndpoint()
    with SummaryEngine(store, llm) as engine:
        thread_starts.clear()

        for _ in range(200):
            assert engine.build_prompt("s") is not None
            for thread in thread_starts:  # a lookup a call started has ended
                if thread.name.endswith("resolve"):
                    thread.join(timeout=5)

    assert len(llm.lookups) <= 3  # the start-up lookup, then backed-off retries
    assert len(thread_starts) <= 1  # at most the pool's one worker


def test_an_unregistered_custom_provider_never_starts_a_thread(thread_starts):
    store = InMemoryStore()
    with_summary(store)
    config = SummaryConfig(
        summary_model_mode="custom", summary_llm=LLMRef("missing", "some-model")
    )
    with SummaryEngine(store, config=config) as engine:
        thread_starts.clear()

        for _ in range(200):
            assert engine.build_prompt("s") is not None

    assert thread_starts == []


def test_a_failed_lookup_is_retried_after_a_doubling_bounded_delay():
    llm = DownEndpoint()
    clock = FakeClock()
    resolver = ModelResolver(SummaryConfig(), llm, {}, counter_factory(), clock=clock)
    retried_after: list[float] = []
    last = clock.now
    resolver.resolution(None)

    for _ in range(14):
        calls = len(llm.lookups)
        while not resolver.is_due(None):
            assert resolver.resolution(None).context_length is None  # the fallback
            assert len(llm.lookups) == calls  # no request while backing off
            clock.now += 0.5
        resolver.resolution(None)
        retried_after.append(clock.now - last)
        last = clock.now

    assert retried_after[:4] == [1.0, 2.0, 4.0, 8.0]
    assert max(retried_after) == MAX_DELAY_S
    assert resolver.peek(None) is not None  # build_prompt gets the fallback at once


# -- the budget holds whatever is known of the model --------------------------------


class SlowEndpoint:
    """A summarizer whose context-length lookup waits until the test lets it answer."""

    model = "gpt-4o-mini"

    def __init__(self, length: int | None = 128_000) -> None:
        self.length = length
        self.answer = threading.Event()
        self.lookups = 0

    def context_length(self, model: str | None = None) -> int | None:
        self.lookups += 1
        self.answer.wait(30)
        return self.length

    def complete(self, messages, **kwargs) -> str:
        return "A summary."


def committed(
    store, session_id: str = "s", text: str = SUMMARY, model: str = "gpt-4o-mini"
) -> SummaryRecord:
    """Store a summary as an engine commits it: counted in ``model``'s encoding."""
    tokens = counter_factory()(model)(text)
    record = SummaryRecord(
        text, covered_through_id=None, tokens=tokens, generation="g1"
    )
    store.save_metadata(NAMESPACE, session_id, record.to_mapping())
    return record


def test_a_committed_summary_gets_the_floor_before_the_model_resolves(store):
    committed(store)
    llm = SlowEndpoint()
    try:
        with SummaryEngine(store, llm) as engine:
            text = engine.build_prompt("s")
            assert llm.lookups == 1  # still unresolved: the endpoint has not answered
    finally:
        llm.answer.set()

    assert text is not None
    assert counter_factory()("gpt-4o-mini")(text) <= MIN_SUMMARY_TOKENS
    assert text.endswith(TRUNCATION_SUFFIXES["en"])


def test_a_summary_committed_under_gpt_4o_is_cut_in_gpt_4s_encoding(store):
    summary = SUMMARY[: len(SUMMARY) // 30] * 17
    record = committed(store, text=summary, model="gpt-4o")
    assert record.tokens < MIN_SUMMARY_TOKENS < counter_factory()("gpt-4")(summary)
    llm = SlowEndpoint()
    config = SummaryConfig(summary_model_mode="session")
    try:
        with SummaryEngine(store, llm, config=config) as engine:
            text = engine.build_prompt("s", model="gpt-4")
    finally:
        llm.answer.set()

    assert text is not None
    assert counter_factory()("gpt-4")(text) <= MIN_SUMMARY_TOKENS
    assert text.endswith(TRUNCATION_SUFFIXES["en"])


class LengthEndpoint:
    """A summarizer that knows one context length (or None) for every model."""

    model = "gpt-4o-mini"

    def __init__(self, length: int | None) -> None:
        self.length = length

    def context_length(self, model: str | None = None) -> int | None:
        return self.length

    def complete(self, messages, **kwargs) -> str:
        return "A summary."


class HeldPool:
    """A summarizer-call pool that never runs what it gets: nothing resolves."""

    def __init__(self) -> None:
        self.submitted: list[object] = []

    def submit(self, work) -> None:
        self.submitted.append(work)


MODELS = [None, "gpt-4o", "gpt-4o-mini", "gpt-4", "gpt-3.5-turbo", "llama-3.1-8b"]
COUNTER = counter_factory(margin=0.15)


@given(
    summary=st.tuples(clean_texts(), st.integers(1, 40)).map(lambda p: p[0] * p[1]),
    committed_under=st.sampled_from(MODELS),
    mode=st.sampled_from(["global", "session"]),
    resolved_for=st.sampled_from(["nothing", *MODELS]),
    session_model=st.sampled_from(MODELS),
    request_model=st.sampled_from(MODELS),
    length=st.one_of(st.none(), st.integers(1, 300_000)),
    ratio=st.floats(0.01, 1.0),
)
def test_the_injected_text_fits_its_budget_in_the_requests_encoding(
    summary,
    committed_under,
    mode,
    resolved_for,
    session_model,
    request_model,
    length,
    ratio,
):
    count = COUNTER(committed_under)
    record = SummaryRecord(
        summary, covered_through_id=None, tokens=max(count(summary), 1), generation="g"
    )
    config = SummaryConfig(summary_model_mode=mode, summary_token_ratio=ratio)
    resolver = ModelResolver(config, LengthEndpoint(length), {}, COUNTER)
    if resolved_for != "nothing":  # resolved earlier: maybe for the session's old model
        resolver.resolution(resolved_for)
    prompts = InjectedPrompts(
        config, resolver, lambda _: session_model, COUNTER, HeldPool(), lambda: False
    )
    known = resolved_for != "nothing" and (
        mode == "global" or resolved_for == session_model
    )

    text = prompts.text("s", request_model, record)

    budget = injection_budget_tokens(config, length if known else None)
    assert COUNTER(request_model or session_model)(text) <= budget


def test_a_summary_no_engine_committed_still_gets_the_floor_before_it_resolves(store):
    store.save_metadata(NAMESPACE, "s", {"summary": SUMMARY, "coveredUpTo": 3})
    llm = SlowEndpoint()
    try:
        with SummaryEngine(store, llm) as engine:
            text = engine.build_prompt("s")
    finally:
        llm.answer.set()

    assert text is not None
    assert text.endswith(TRUNCATION_SUFFIXES["en"])


def test_start_resolves_a_summary_model_that_needs_no_network(store):
    store.save_metadata(NAMESPACE, "s", {"summary": SUMMARY, "coveredUpTo": 3})
    llm = SlowEndpoint()
    llm.answer.wait = lambda timeout: threading.Event().wait(LOCAL_LOOKUP_S)  # no I/O

    with SummaryEngine(store, llm) as engine:
        resolved = engine._resolver.peek(None)
        text = engine.build_prompt("s")

    assert resolved is not None
    assert resolved.context_length == 128_000
    assert text is not None
    assert text.endswith(SUMMARY)  # the real budget (6,400 tokens), not the floor
