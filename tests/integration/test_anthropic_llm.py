"""The real anthropic client over real HTTP against the loopback Messages API server."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from memory_summary import Message, SummarizerError, SummarizerTimeout, SummaryEngine
from memory_summary.adapters import AnthropicLLM
from memory_summary.domain import SummarizerContextError, TokenUsage
from tests.anthropic_server import (
    OVERLOADED,
    PROMPT_TOO_LONG,
    AnthropicServer,
    Behaviour,
)
from tests.integration.conversation import fill

SUMMARY = (
    "The user sent thirty numbered messages, from message zero to message "
    "twenty-nine, each stating one fact; the assistant acknowledged every one."
)
BOUND_S = 5.0
FOREVER_S = 60.0

REQUEST = [
    Message("system", "Summarize."),
    Message("user", "<conversation>\nUser: hi\n</conversation>"),
]


@pytest.fixture
def server():
    with AnthropicServer() as running:
        yield running


_made: list[AnthropicLLM] = []


@pytest.fixture(autouse=True)
def _close_made_llms():
    yield
    while _made:
        _made.pop().close()


def make_llm(server, **kwargs):
    kwargs.setdefault("max_retries", 0)
    llm = AnthropicLLM(
        "claude-haiku-4-5", base_url=server.base_url, api_key="k", **kwargs
    )
    _made.append(llm)
    return llm


def answer(llm, call):
    if call == "complete":
        return llm.complete(REQUEST, max_tokens=50, temperature=0.3)
    return "".join(llm.stream(REQUEST, max_tokens=50, temperature=0.3))


def test_complete_sends_system_apart_and_max_tokens(server):
    server.then(Behaviour(text="User greeted."))

    text = make_llm(server).complete(REQUEST, max_tokens=321, temperature=0.3)

    assert text == "User greeted."
    body = server.requests[-1]
    assert body["system"] == "Summarize."
    assert body["messages"] == [{"role": "user", "content": REQUEST[1].content}]
    assert (body["model"], body["max_tokens"]) == ("claude-haiku-4-5", 321)
    assert "thinking" not in body
    assert "temperature" not in body  # the SDK no longer takes it
    assert "k" in (
        server.headers[-1].get("x-api-key"),
        server.headers[-1].get("authorization", "").removeprefix("Bearer "),
    )


def test_stream_yields_the_text_deltas(server):
    server.then(Behaviour(text="one two three"))

    pieces = list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))

    assert pieces == ["one ", "two ", "three"]
    assert server.requests[-1]["stream"] is True
    assert server.headers[-1]["connection"] == "close"


def test_stream_usage_counts_cache_reads_and_writes(server):
    server.then(Behaviour(text="a b c", input_tokens=100, cache_read=40, cache_write=7))
    pieces = make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3)

    "".join(pieces)

    assert pieces.usage == TokenUsage(
        147, 3, cache_read_tokens=40, cache_write_tokens=7
    )


def test_complete_with_usage_reports_the_message_usage(server):
    server.then(Behaviour(text="a b", input_tokens=10, cache_read=5, cache_write=1))

    reply = make_llm(server).complete_with_usage(
        REQUEST, max_tokens=50, temperature=0.3
    )

    assert reply.text == "a b"
    assert reply.usage == TokenUsage(16, 2, cache_read_tokens=5, cache_write_tokens=1)


@pytest.mark.parametrize("call", ["complete", "stream"])
def test_overloaded_529_is_retried_within_the_deadline(server, call):
    server.then(
        Behaviour(status=529, error=OVERLOADED, headers={"retry-after": "0"}),
        Behaviour(text="second try"),
    )

    text = answer(make_llm(server, max_retries=1), call)

    assert text == "second try"
    assert len(server.requests) == 2


def test_overloaded_529_without_retries_is_a_summarizer_error(server):
    server.then(Behaviour(status=529, error=OVERLOADED))

    with pytest.raises(SummarizerError, match="overloaded") as caught:
        make_llm(server).complete(REQUEST, max_tokens=50, temperature=0.3)

    assert not isinstance(caught.value, SummarizerContextError)


def test_a_retry_that_does_not_fit_the_deadline_is_not_made(server):
    server.then(Behaviour(status=529, error=OVERLOADED))

    with pytest.raises(SummarizerError):
        make_llm(server, max_retries=10).complete(
            REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.2
        )

    assert len(server.requests) == 1  # the first backoff (about 0.5 s) did not fit


@pytest.mark.parametrize("call", ["complete", "stream"])
def test_prompt_too_long_is_a_context_error(server, call):
    server.then(Behaviour(status=400, error=PROMPT_TOO_LONG))

    with pytest.raises(SummarizerContextError, match="context window"):
        answer(make_llm(server), call)


# How Anthropic words a request longer than the model's context (the API's 400s).
CONTEXT_OVERFLOWS = [
    "prompt is too long: 212043 tokens > 200000 maximum",
    "input length and `max_tokens` exceed context limit: 197357 + 8192 > 200000, "
    "decrease input length or `max_tokens` and try again",
    "Input is too long for requested model.",
]


def _invalid_request(message):
    return {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
    }


@pytest.mark.parametrize("call", ["complete", "stream"])
@pytest.mark.parametrize("message", CONTEXT_OVERFLOWS)
def test_every_context_overflow_wording_is_a_context_error(server, call, message):
    server.then(Behaviour(status=400, error=_invalid_request(message)))

    with pytest.raises(SummarizerContextError, match="context window"):
        answer(make_llm(server), call)


@pytest.mark.parametrize("message", CONTEXT_OVERFLOWS)
def test_a_context_overflow_event_inside_the_stream_is_a_context_error(server, message):
    server.then(Behaviour(text="", stream_error=_invalid_request(message)))

    with pytest.raises(SummarizerContextError):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


@pytest.mark.parametrize(
    "message",
    [
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output "
        "tokens for claude-sonnet-4-5-20250929",
        'messages: roles must alternate between "user" and "assistant"',
    ],
)
def test_other_invalid_requests_are_not_context_errors(server, message):
    server.then(Behaviour(status=400, error=_invalid_request(message)))

    with pytest.raises(SummarizerError) as caught:
        answer(make_llm(server), "complete")

    assert not isinstance(caught.value, SummarizerContextError)


@pytest.mark.parametrize("call", ["complete", "stream"])
def test_a_reply_cut_at_max_tokens_is_refused_as_truncated(server, call):
    server.then(Behaviour(text="The user asked about", stop_reason="max_tokens"))

    with pytest.raises(SummarizerError, match="max_tokens") as caught:
        answer(make_llm(server), call)

    assert not isinstance(caught.value, SummarizerContextError)


@pytest.mark.parametrize("call", ["complete", "stream"])
@pytest.mark.parametrize("reason", ["end_turn", "stop_sequence", None])
def test_a_reply_that_ended_by_itself_is_accepted(server, call, reason):
    server.then(Behaviour(text="one two", stop_reason=reason))

    assert answer(make_llm(server), call) == "one two"


@pytest.mark.parametrize(
    ("start_usage", "delta_usage"),
    [(False, "counts"), (True, None), (False, None), (False, {}), (True, {})],
)
def test_a_stream_without_usage_answers_without_usage(server, start_usage, delta_usage):
    # gateways and local servers leave usage out of message_start, or send it null:
    # a half-known usage is none (the engine counts), never a made-up 0
    server.then(
        Behaviour(text="one two", start_usage=start_usage, delta_usage=delta_usage)
    )
    pieces = make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3)

    assert "".join(pieces) == "one two"
    assert pieces.usage is None


def test_a_stream_whose_delta_brings_the_input_counts_has_usage(server):
    server.then(
        Behaviour(
            text="one two",
            start_usage=False,
            delta_usage={"input_tokens": 30, "output_tokens": 2},
        )
    )
    pieces = make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3)

    "".join(pieces)

    assert pieces.usage == TokenUsage(30, 2)


@pytest.mark.parametrize(
    "body",
    [b"<html>502 Bad Gateway</html>", b"", b'"a string"', b"[1, 2]", b"{}", b"null"],
)
@pytest.mark.parametrize("raw_type", ["application/json", "text/html"])
def test_a_200_answer_that_is_not_a_message_is_a_summarizer_error(
    server, body, raw_type
):
    server.then(Behaviour(raw_body=body, raw_type=raw_type))

    with pytest.raises(SummarizerError):
        make_llm(server).complete_with_usage(REQUEST, max_tokens=50, temperature=0.3)


def test_a_message_without_usage_answers_without_usage(server):
    body = (
        b'{"id": "m", "type": "message", "role": "assistant", "model": "x",'
        b' "content": [{"type": "text", "text": "one two"}],'
        b' "stop_reason": "end_turn"}'
    )
    server.then(Behaviour(raw_body=body))

    reply = make_llm(server).complete_with_usage(
        REQUEST, max_tokens=50, temperature=0.3
    )

    assert (reply.text, reply.usage) == ("one two", None)


def test_an_overloaded_error_event_inside_the_stream_raises(server):
    server.then(Behaviour(text="partial", stream_error=OVERLOADED))

    with pytest.raises(SummarizerError, match="overloaded"):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_context_error_event_inside_the_stream_is_a_context_error(server):
    server.then(Behaviour(text="", stream_error=PROMPT_TOO_LONG))

    with pytest.raises(SummarizerContextError):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_stream_cut_midway_raises(server):
    server.then(Behaviour(text="one two three four", break_after=2))

    with pytest.raises(SummarizerError):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_a_stream_without_message_stop_raises(server):
    server.then(Behaviour(text="one two", finish=False))

    with pytest.raises(SummarizerError, match="ended before it finished"):
        list(make_llm(server).stream(REQUEST, max_tokens=50, temperature=0.3))


def test_the_deadline_closes_a_stream_hanging_on_pings(server):
    # each ping resets the read timeout: only the stream's own deadline ends it
    server.then(Behaviour(text="", pings_s=0.1))
    llm = make_llm(server, timeout_s=FOREVER_S)

    with pytest.raises(SummarizerTimeout, match="deadline"):
        list(llm.stream(REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.5))

    assert server.disconnected.wait(BOUND_S)


def test_the_deadline_bounds_the_wait_for_the_headers(server):
    server.then(Behaviour(delay_s=FOREVER_S))

    with pytest.raises(SummarizerTimeout):
        list(
            make_llm(server, timeout_s=FOREVER_S).stream(
                REQUEST, max_tokens=50, temperature=0.3, timeout_s=0.3
            )
        )


def test_close_from_another_thread_unblocks_a_hanging_stream(server):
    server.then(Behaviour(text="", pings_s=FOREVER_S))
    pieces = make_llm(server, timeout_s=FOREVER_S).stream(
        REQUEST, max_tokens=50, temperature=0.3
    )
    outcome: dict[str, object] = {}

    def drain() -> None:
        try:
            outcome["text"] = "".join(pieces)
        except SummarizerError as exc:
            outcome["error"] = exc

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    assert server.streaming.wait(BOUND_S)

    pieces.close()
    reader.join(BOUND_S)

    assert not reader.is_alive()
    assert "closed before it finished" in str(outcome["error"])
    assert server.disconnected.wait(BOUND_S)


def test_an_endless_reply_is_cut_at_the_cap_and_the_socket_closed(server):
    server.then(Behaviour(text="word", endless=True))

    text = "".join(
        make_llm(server, max_reply_chars=1000).stream(
            REQUEST, max_tokens=50, temperature=0.3
        )
    )

    assert len(text) == 1000
    assert server.disconnected.wait(BOUND_S)


def test_context_length_is_known_for_claude_models_or_given(server):
    assert make_llm(server).context_length() == 200_000
    assert make_llm(server).context_length("claude-opus-4-1") == 200_000
    assert make_llm(server).context_length("mystery") is None
    assert make_llm(server, context_tokens=1_000_000).context_length() == 1_000_000
    assert (
        make_llm(server, context_tokens={"mystery": 9000}).context_length("mystery")
        == 9000
    )


def test_extra_body_fields_are_sent(server):
    make_llm(server, extra_body={"temperature": 0.2}).complete(
        REQUEST, max_tokens=10, temperature=0.3
    )

    assert server.requests[-1]["temperature"] == 0.2


def test_a_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(SummarizerError, match="API key"):
        AnthropicLLM()


def test_the_engine_summarizes_through_claude_with_usage(server, store):
    server.then(Behaviour(text=SUMMARY, input_tokens=50, cache_read=10))
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")
        usage = engine.usage("s1")

    assert outcome.kind == "compressed"
    assert record.text == SUMMARY
    assert (usage.input_tokens, usage.output_tokens, usage.source) == (
        60,
        len(SUMMARY.split(" ")),
        "provider",
    )
    body = server.requests[-1]
    assert body["stream"] is True
    assert 0 < body["max_tokens"] <= 200_000 * 0.05  # the summary budget


def test_the_engine_degrades_to_trim_when_claude_is_overloaded(server, store):
    server.then(Behaviour(status=529, error=OVERLOADED))
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)

    assert outcome.kind == "trimmed"
    assert store.count_history("s1") == 20


def test_the_engine_folds_smaller_chunks_when_claude_says_the_input_is_too_long(
    server, store
):
    overflow = _invalid_request(CONTEXT_OVERFLOWS[1])
    server.then(Behaviour(status=400, error=overflow), Behaviour(text=SUMMARY))
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "compressed"
    assert record is not None
    assert record.text == SUMMARY
    first, second = (len(str(body["messages"])) for body in server.requests[:2])
    assert second < first  # the chunk was halved, not trimmed away


@pytest.mark.parametrize(
    "behaviour",
    [
        Behaviour(text=SUMMARY, start_usage=False, delta_usage=None),
        Behaviour(text=SUMMARY, delta_usage=None),
    ],
)
def test_the_engine_summarizes_through_a_gateway_that_reports_no_usage(
    server, store, behaviour
):
    server.then(behaviour)
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "compressed"
    assert record is not None
    assert record.text == SUMMARY


def test_the_engine_keeps_no_summary_cut_at_max_tokens(server, store):
    server.then(Behaviour(text=SUMMARY, stop_reason="max_tokens"))
    fill(store, "s1", 30)

    with SummaryEngine(store, make_llm(server)) as engine:
        outcome = engine.compress("s1").result(timeout=20)
        record = engine.summary("s1")

    assert outcome.kind == "trimmed"
    assert record is None or record.text != SUMMARY


def run_python(code, tmp_path):
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,  # not the repository, whose folders are not the package
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_format_and_assemble_never_import_the_sdk(tmp_path):
    code = (
        "import sys\n"
        "from memory_summary import SummaryEngine, messages_from_anthropic\n"
        "from memory_summary.adapters import InMemoryStore\n"
        "msgs = [{'role': 'user', 'content': 'hi'}]\n"
        "print(SummaryEngine(InMemoryStore()).assemble_anthropic('s', msgs, 'a'))\n"
        "print(any(m.split('.')[0] == 'anthropic' for m in sys.modules))\n"
    )

    result = run_python(code, tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "('s', [{'role': 'user', 'content': 'hi'}])",
        "False",
    ]


def test_without_the_extra_the_adapter_names_it(tmp_path):
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "from memory_summary.adapters import AnthropicLLM\n"
    )

    result = run_python(code, tmp_path)

    assert result.returncode == 1
    assert "pip install 'memory-summary[anthropic]'" in result.stderr
