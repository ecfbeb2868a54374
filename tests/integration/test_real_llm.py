"""OpenAIChatLLM against a real OpenAI-compatible server with a real model (opt-in).

Runs when ``MEMORY_SUMMARY_REAL_LLM_URL`` names a running server (its context window in
``MEMORY_SUMMARY_REAL_LLM_CONTEXT``, default 2048; its model in
``MEMORY_SUMMARY_REAL_LLM_MODEL``), or when ``REALLLM_PY`` and ``REALLLM_MODEL`` are set
(``. ../shared/real-llm/realllm.sh``): then it starts llama-cpp-python's server itself
on a free port. Written against llama-cpp-python with SmolLM2-135M-Instruct; the
model is too small to judge summaries, so these tests check protocol behaviour only.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from memory_summary import Message, SummarizerError, SummarizerTimeout
from memory_summary.adapters import OpenAIChatLLM
from memory_summary.domain import SummarizerContextError

START_S = 120.0  # the server loads its model within this
BOUND_S = 10.0  # a freed server answers a one-token request within this
LONG_TOKENS = 1500  # 20-60 s of generation on 2 cores: far past BOUND_S
# SmolLM2's end tokens (<|endoftext|>, <|im_start|>, <|im_end|>), banned so that a
# "long" reply really is long
NEVER_STOP = {"logit_bias": {"0": -100, "1": -100, "2": -100}}
STORY = [Message("user", "Write a very long story about a lighthouse keeper.")]
HELLO = [Message("user", "Hi")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def warmed_up(endpoint: tuple[str, str, int]) -> tuple[str, str, int]:
    """Return ``endpoint`` once it has answered: a cold first answer takes seconds."""
    llm = OpenAIChatLLM(endpoint[1], base_url=endpoint[0], api_key="none")
    try:
        llm.complete(HELLO, max_tokens=1, temperature=0.0, timeout_s=START_S)
    finally:
        llm.close()
    return endpoint


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[tuple[str, str, int]]:
    """Yield a real server's base URL, model and context window; skip without one."""
    model = os.environ.get("MEMORY_SUMMARY_REAL_LLM_MODEL", "smollm2-135m-instruct")
    context = int(os.environ.get("MEMORY_SUMMARY_REAL_LLM_CONTEXT", "2048"))
    url = os.environ.get("MEMORY_SUMMARY_REAL_LLM_URL")
    if url:
        yield warmed_up((url.rstrip("/"), model, context))
        return
    python, gguf = os.environ.get("REALLLM_PY"), os.environ.get("REALLLM_MODEL")
    if not (python and gguf):
        pytest.skip("set MEMORY_SUMMARY_REAL_LLM_URL, or REALLLM_PY and REALLLM_MODEL")
    port = free_port()
    args = [python, "-m", "llama_cpp.server", "--model", gguf]
    args += ["--model_alias", model, "--n_ctx", str(context), "--n_threads", "2"]
    args += ["--interrupt_requests", "False", "--host", "127.0.0.1"]
    args += ["--port", str(port)]
    log_path = tmp_path_factory.mktemp("real-llm") / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_S
        while not answers(base_url):
            assert time.monotonic() < deadline, f"no server in time; see {log_path}"
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=0.2)  # returns at once if the server exits
                pytest.fail(f"the server exited; see {log_path}")
        yield warmed_up((base_url, model, context))
    finally:
        server.terminate()
        server.wait(timeout=30)


_made: list[OpenAIChatLLM] = []


@pytest.fixture(autouse=True)
def _close_made_llms():
    yield
    while _made:
        _made.pop().close()


def make_llm(endpoint: tuple[str, str, int], **kwargs: object) -> OpenAIChatLLM:
    base_url, model, context = endpoint
    kwargs.setdefault("max_retries", 0)
    llm = OpenAIChatLLM(
        model, base_url=base_url, api_key="none", context_tokens=context, **kwargs
    )
    _made.append(llm)
    return llm


def assert_server_is_free(endpoint: tuple[str, str, int]) -> None:
    """Assert a one-token request is answered at once: nothing is generating."""
    started = time.monotonic()

    make_llm(endpoint).complete(HELLO, max_tokens=1, temperature=0.0)

    assert time.monotonic() - started < BOUND_S


def over_context(endpoint: tuple[str, str, int]) -> list[Message]:
    """Return a request about twice as long as the server's context window."""
    return [
        Message("system", "Summarize."),
        Message("user", "The cat sat on the mat. " * (endpoint[2] // 3)),
    ]


def test_a_short_request_is_answered(endpoint):
    text = make_llm(endpoint).complete(HELLO, max_tokens=8, temperature=0.0)

    assert isinstance(text, str)


def test_an_over_long_prompt_is_a_context_error_without_streaming(endpoint):
    with pytest.raises(SummarizerContextError, match="context"):
        make_llm(endpoint).complete(
            over_context(endpoint), max_tokens=50, temperature=0.0
        )


def test_an_over_long_prompt_is_a_context_error_when_streamed(endpoint):
    pieces = make_llm(endpoint).stream(
        over_context(endpoint), max_tokens=50, temperature=0.0
    )

    with pytest.raises(SummarizerContextError):
        "".join(pieces)


def test_close_from_another_thread_stops_the_generation(endpoint):
    pieces = make_llm(endpoint, extra_body=NEVER_STOP).stream(
        STORY, max_tokens=LONG_TOKENS, temperature=0.0
    )
    reading = threading.Event()
    outcome: dict[str, object] = {}

    def read() -> None:
        try:
            for _ in pieces:
                reading.set()
        except SummarizerError as exc:
            outcome["error"] = exc
        reading.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert reading.wait(START_S)

    pieces.close()
    reader.join(BOUND_S)

    assert not reader.is_alive()
    assert isinstance(outcome.get("error"), SummarizerError)
    assert_server_is_free(endpoint)


def test_stream_timeout_ends_the_call_and_frees_the_server(endpoint):
    llm = make_llm(endpoint, extra_body=NEVER_STOP)
    started = time.monotonic()

    with pytest.raises(SummarizerTimeout):
        "".join(llm.stream(STORY, max_tokens=LONG_TOKENS, temperature=0.0, timeout_s=2))

    assert time.monotonic() - started < 2 + BOUND_S
    assert_server_is_free(endpoint)


def test_a_reply_past_the_cap_is_cut_and_the_server_freed(endpoint):
    llm = make_llm(endpoint, extra_body=NEVER_STOP, max_reply_chars=200)

    text = "".join(llm.stream(STORY, max_tokens=LONG_TOKENS, temperature=0.0))

    assert len(text) == 200
    assert_server_is_free(endpoint)
