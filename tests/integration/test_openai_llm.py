"""The real openai client over real HTTP against the loopback test server."""

from __future__ import annotations

import math
import socket
import sys
import threading

import pytest

from memory_summary import Message, SummarizerError, SummarizerTimeout, SummaryEngine
from memory_summary.adapters import OpenAIChatLLM, TiktokenCounter
from memory_summary.domain import SummarizerContextError
from memory_summary.domain.injection import HEADERS
from tests.integration.conversation import fill
from tests.openai_server import (
    LLAMA_CPP_CONTEXT_ERROR,
    LLAMA_CPP_PYTHON_CONTEXT_ERROR,
    OLLAMA_CONTEXT_ERROR,
    OPENAI_CONTEXT_ERROR,
    TGI_CONTEXT_ERROR,
    VLLM_CONTEXT_ERROR,
    Behaviour,
    OpenAICompatibleServer,
)

BOUND_S = 5.0  # every wait on another thread or on the server ends by then
FOREVER_S = 60.0  # longer than any test: a keep-alive interval or request timeout
FIRST = "First summary: the user and the assistant exchanged thirty numbered messages."

REQUEST = [
    Message("system", "Summarize."),
    Message("user", "<conversation>\nUser: hi\n</conversation>"),
]


@pytest.fixture
def server():
    with OpenAICompatibleServer() as running:
        yield running


_made: list[OpenAIChatLLM] = []


@pytest.fixture(autouse=True)
def _close_made_llms():
    yield
    while _made:
        _made.pop().close()


def make_llm(server, **kwargs):
    kwargs.setdefault("max_retries", 0)
    llm = OpenAIChatLLM("test-model", base_url=server.base_url, api_key="k", **kwargs)
    _made.append(llm)
    return llm


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

    with pytest.raises(SummarizerError, match="ended before it finished") as caught:
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))
    assert not isinstance(caught.value, SummarizerContextError)


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
    # "test-model" is not a model tiktoken knows: counts carry the 15% safety margin
    exact = TiktokenCounter.for_model("test-model").count(HEADERS["en"] + "\n")
    header = math.ceil(exact * 1.15)
    assert header > exact
    assert body["max_tokens"] == 819 - header  # 16384 (listed) x 0.05, less the header


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
    server.then(Behaviour(text=FIRST))
    fill(store, "s1", 30)
    with SummaryEngine(store, make_llm(server)) as engine:
        engine.compress("s1").result(timeout=20)
        server.then(fault)
        fill(store, "s1", 30, start=30)

        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "trimmed"
    assert record.text == FIRST
    assert store.count_history("s1") == 20


def drain_in_thread(pieces) -> tuple[threading.Thread, dict[str, object]]:
    """Join ``pieces`` on another thread; the outcome lands in the returned dict."""
    outcome: dict[str, object] = {}

    def drain() -> None:
        try:
            outcome["text"] = "".join(pieces)
        except SummarizerError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread, outcome


def test_close_from_another_thread_unblocks_a_stream_stuck_on_keepalives(server):
    server.then(Behaviour(text="", keepalive_s=FOREVER_S))
    pieces = make_llm(server, timeout_s=FOREVER_S).stream(
        REQUEST, max_tokens=50, temperature=0.3
    )
    reader, outcome = drain_in_thread(pieces)
    assert server.streaming.wait(BOUND_S)

    pieces.close()
    reader.join(BOUND_S)

    assert not reader.is_alive()
    assert isinstance(outcome["error"], SummarizerError)
    assert "closed before it finished" in str(outcome["error"])
    assert server.disconnected.wait(BOUND_S)


def test_close_is_safe_from_many_threads_at_once_and_repeated(server):
    server.then(Behaviour(text="", keepalive_s=FOREVER_S))
    pieces = make_llm(server, timeout_s=FOREVER_S).stream(
        REQUEST, max_tokens=50, temperature=0.3
    )
    reader, outcome = drain_in_thread(pieces)
    assert server.streaming.wait(BOUND_S)
    start = threading.Barrier(4)

    def close() -> None:
        start.wait(BOUND_S)
        pieces.close()

    closers = [threading.Thread(target=close) for _ in range(4)]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(BOUND_S)
    reader.join(BOUND_S)
    pieces.close()

    assert not any(thread.is_alive() for thread in (*closers, reader))
    assert isinstance(outcome["error"], SummarizerError)
    with pytest.raises(SummarizerError, match="closed"):
        next(pieces)


def test_stream_timeout_closes_a_stream_stuck_on_keepalives(server):
    # each comment resets the read timeout: only the stream's own deadline ends it
    server.then(Behaviour(text="", keepalive_s=0.1))
    llm = make_llm(server, timeout_s=FOREVER_S)

    with pytest.raises(SummarizerTimeout, match="deadline"):
        list(llm.stream(REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.5))

    assert server.disconnected.wait(BOUND_S)


def test_stream_timeout_bounds_the_wait_for_the_headers(server):
    server.then(Behaviour(delay_s=FOREVER_S))  # only the timeout can end it
    llm = make_llm(server, timeout_s=FOREVER_S)

    with pytest.raises(SummarizerTimeout):
        list(llm.stream(REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.3))


def test_close_before_iterating_sends_nothing(server):
    pieces = make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3)

    pieces.close()

    with pytest.raises(SummarizerError, match="closed"):
        next(pieces)
    assert server.requests == []


def test_close_after_the_end_changes_nothing(server):
    server.then(Behaviour(text="one two"))
    pieces = make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3)

    text = "".join(pieces)
    pieces.close()

    assert text == "one two"
    assert list(pieces) == []


def test_a_stream_is_never_pooled_so_closing_it_cannot_hit_another_request(server):
    server.then(Behaviour(text="one two"))

    with make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3) as pieces:
        list(pieces)

    assert server.headers[-1]["connection"] == "close"


def test_timeout_s_bounds_complete(server):
    server.then(Behaviour(delay_s=FOREVER_S))  # only the timeout can end it
    llm = make_llm(server, timeout_s=FOREVER_S)

    with pytest.raises(SummarizerTimeout):
        llm.complete(REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.3)


def test_retries_stay_within_timeout_s(server):
    server.then(Behaviour(status=500))
    llm = make_llm(server, max_retries=10)

    with pytest.raises(SummarizerError, match="scripted 500"):
        llm.complete(REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.2)

    assert len(server.requests) == 1  # the first backoff (about 0.5 s) did not fit


@pytest.mark.skipif(sys.platform != "linux", reason="relies on Linux dropping SYNs")
def test_the_connect_timeout_is_short_when_the_request_timeout_is_long():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        # nobody accepts: once the queue is full, Linux drops further SYNs
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        llm = OpenAIChatLLM(
            "m",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="k",
            max_retries=0,
            timeout_s=FOREVER_S,
            connect_timeout_s=0.3,
        )
        try:
            with pytest.raises(SummarizerTimeout):
                llm.complete(REQUEST, max_tokens=10, temperature=0.3)
        finally:
            for filler in fillers:
                filler.close()


def answer(llm: OpenAIChatLLM, call: str) -> str:
    """Return the whole answer to ``REQUEST`` by ``complete()`` or ``stream()``."""
    if call == "complete":
        return llm.complete(REQUEST, max_tokens=50, temperature=0.3)
    return "".join(llm.stream(REQUEST, max_tokens=50, temperature=0.3))


CONTEXT_ERRORS = {
    "openai": Behaviour(status=400, error=OPENAI_CONTEXT_ERROR),
    "vllm": Behaviour(status=400, error=VLLM_CONTEXT_ERROR),
    "llama.cpp": Behaviour(status=400, error=LLAMA_CPP_CONTEXT_ERROR),
    "llama-cpp-python": Behaviour(status=400, error=LLAMA_CPP_PYTHON_CONTEXT_ERROR),
    "ollama": Behaviour(status=400, error=OLLAMA_CONTEXT_ERROR),
    "tgi-422": Behaviour(status=422, error=TGI_CONTEXT_ERROR),
    "proxy-413": Behaviour(status=413, error={"error": "Request Entity Too Large"}),
}


@pytest.mark.parametrize("fault", CONTEXT_ERRORS.values(), ids=CONTEXT_ERRORS.keys())
@pytest.mark.parametrize("call", ["complete", "stream"])
def test_context_length_errors_raise_summarizer_context_error(server, fault, call):
    server.then(fault)
    llm = make_llm(server)

    with pytest.raises(SummarizerContextError, match="context window"):
        answer(llm, call)


@pytest.mark.parametrize(
    "fault",
    [
        Behaviour(status=400, error={"error": {"message": "max_tokens is too large"}}),
        Behaviour(status=500, error=OPENAI_CONTEXT_ERROR),  # not the client's request
        Behaviour(status=429, error={"error": {"message": "too many tokens per min"}}),
    ],
    ids=["other-400", "500", "429"],
)
def test_other_errors_are_not_context_errors(server, fault):
    server.then(fault)

    with pytest.raises(SummarizerError) as caught:
        make_llm(server).complete(REQUEST, max_tokens=50, temperature=0.3)

    assert not isinstance(caught.value, SummarizerContextError)


def test_a_context_error_event_inside_a_stream_is_a_context_error(server):
    server.then(Behaviour(text="", stream_error=OPENAI_CONTEXT_ERROR))

    with pytest.raises(SummarizerContextError):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_stream_that_ends_with_no_text_and_no_finish_is_a_context_error(server):
    server.then(Behaviour(stream_events=False))  # llama.cpp on an over-long prompt

    with pytest.raises(SummarizerContextError, match="neither text nor a finish"):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_an_endless_reply_is_cut_at_the_cap_and_the_stream_closed(server):
    server.then(Behaviour(text="word " * 200, endless=True))

    text = "".join(
        make_llm(server, max_reply_chars=10_000).stream(
            REQUEST, max_tokens=50, temperature=0.3
        )
    )

    assert len(text) == 10_000
    assert server.disconnected.wait(BOUND_S)


def test_the_default_cap_is_eight_characters_per_requested_token(server):
    server.then(Behaviour(text="word " * 200, endless=True))

    text = "".join(make_llm(server).stream(REQUEST, max_tokens=2000, temperature=0.3))

    assert len(text) == 16_000
    assert server.disconnected.wait(BOUND_S)


def test_a_huge_complete_reply_is_cut_to_the_cap(server):
    server.then(Behaviour(text="x" * 5_000_000))

    text = make_llm(server).complete(REQUEST, max_tokens=2000, temperature=0.3)

    assert len(text) == 16_000


@pytest.mark.parametrize("call", ["complete", "stream"])
def test_a_reply_cut_at_max_tokens_is_refused_as_truncated(server, call):
    server.then(Behaviour(text="The user asked about", finish_reason="length"))
    llm = make_llm(server)

    def answer():
        if call == "complete":
            return llm.complete(REQUEST, max_tokens=50, temperature=0.3)
        return "".join(llm.stream(REQUEST, max_tokens=50, temperature=0.3))

    with pytest.raises(SummarizerError, match="max_tokens") as caught:
        answer()

    assert not isinstance(caught.value, SummarizerContextError)
