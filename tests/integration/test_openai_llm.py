"""The real openai client over real HTTP against the loopback test server."""

from __future__ import annotations

import pytest

from memory_summary import Message, SummarizerError, SummarizerTimeout, SummaryEngine
from memory_summary.adapters import OpenAIChatLLM
from tests.integration.helpers import fill
from tests.openai_server import Behaviour, OpenAICompatibleServer

REQUEST = [
    Message("system", "Summarize."),
    Message("user", "<conversation>\nUser: hi\n</conversation>"),
]


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


def make_llm(server, **kwargs):
    kwargs.setdefault("max_retries", 0)
    return OpenAIChatLLM("test-model", base_url=server.base_url, api_key="k", **kwargs)


def test_complete_sends_the_request_and_returns_the_text(server):
    server.then(Behaviour(text="User greeted."))

    text = make_llm(server).complete(REQUEST, max_tokens=321, temperature=0.3)

    assert text == "User greeted."
    body = server.requests[-1]
    assert (body["model"], body["max_tokens"], body["temperature"]) == (
        "test-model",
        321,
        0.3,
    )
    assert body["messages"] == [
        {"role": "system", "content": "Summarize."},
        {"role": "user", "content": REQUEST[1].content},
    ]
    assert "stream" not in body or body["stream"] is False


def test_stream_yields_the_pieces_of_the_answer(server):
    server.then(Behaviour(text="one two three"))

    pieces = list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))

    assert "".join(pieces) == "one two three"
    assert len(pieces) == 3
    assert server.requests[-1]["stream"] is True


def test_a_stream_cut_midway_raises(server):
    server.then(Behaviour(text="one two three four", stream_break_after=2))

    with pytest.raises(SummarizerError):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_stream_that_never_finishes_raises(server):
    server.then(Behaviour(text="one two", finish=False))

    with pytest.raises(SummarizerError, match="ended before it finished"):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_500_maps_to_a_summarizer_error_with_the_providers_message(server, caplog):
    server.then(Behaviour(status=500))

    with pytest.raises(SummarizerError, match="scripted 500"):
        make_llm(server).complete(REQUEST, max_tokens=50, temperature=0.3)
    assert "scripted 500" in caplog.text


def test_the_client_retries_a_500_when_asked(server):
    server.then(Behaviour(status=500), Behaviour(text="second try"))

    text = make_llm(server, max_retries=1).complete(
        REQUEST, max_tokens=50, temperature=0.3
    )

    assert text == "second try"
    assert len(server.requests) == 2


def test_a_slow_reply_times_out(server):
    server.then(Behaviour(delay_s=2.0))

    with pytest.raises(SummarizerTimeout):
        make_llm(server, timeout_s=0.3).complete(
            REQUEST, max_tokens=50, temperature=0.3
        )


def test_context_length_comes_from_config_then_listing_then_known_table(server):
    server.models = {"test-model": {"max_model_len": 16384}, "gpt-4o-mini": {}}
    llm = make_llm(server)

    assert llm.context_length() == 16384  # the endpoint's listing (vLLM style)
    assert llm.context_length("gpt-4o-mini") == 128_000  # listed without a length
    assert llm.context_length("mystery-model") is None
    assert make_llm(server, context_tokens=9000).context_length() == 9000
    assert make_llm(server, context_tokens={"test-model": 777}).context_length() == 777


def test_disable_thinking_sends_the_extra_request_fields(server):
    make_llm(server, disable_thinking=True, extra_body={"top_k": 5}).complete(
        REQUEST, max_tokens=10, temperature=0.3
    )

    body = server.requests[-1]
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["top_k"] == 5


def test_missing_key_and_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    with pytest.raises(SummarizerError, match="API key"):
        OpenAIChatLLM("gpt-4o-mini")


def test_environment_variables_configure_the_adapter(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    monkeypatch.setenv("OPENAI_MODEL", "test-model")
    server.then(Behaviour(text="via env"))

    llm = OpenAIChatLLM(max_retries=0)

    assert llm.complete(REQUEST, max_tokens=10, temperature=0.3) == "via env"
    assert server.requests[-1]["model"] == "test-model"


def test_the_engine_streams_through_the_adapter_and_stores_the_summary(server, store):
    server.then(Behaviour(text="The user counted messages."))
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "compressed"
    assert record.text == "The user counted messages."
    assert record.model == "test-model"
    body = server.requests[-1]
    assert body["stream"] is True
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 819  # 16384 (listed) x 0.05


@pytest.mark.parametrize(
    "fault",
    [
        Behaviour(text="partial summary text", stream_break_after=2),
        Behaviour(status=500),
        Behaviour(text=""),
    ],
    ids=["broken-stream", "500", "empty"],
)
def test_engine_degrades_on_endpoint_faults_and_stores_no_partial_text(
    server, store, fault
):
    server.then(Behaviour(text="first summary"))
    fill(store, "s1", 30)
    with SummaryEngine(store, make_llm(server)) as engine:
        engine.compress("s1").result(timeout=20)
        server.then(fault)
        fill(store, "s1", 30, start=30)

        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "trimmed"
    assert record.text == "first summary"
    assert store.count_history("s1") == 20
