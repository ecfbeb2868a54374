"""One contract for every summarizer we ship and every test double that claims one.

The suite is the kit's ``SummarizerContract`` (``memory_summary.testing``), the one an
outside adapter runs: each class below says how to build one summarizer. The HTTP
adapters run their real SDK clients over real HTTP against the loopback servers in
``tests/`` (``OpenAIChatLLM``, ``AnthropicLLM``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import openai
import pytest

import memory_summary.testing.fakes as kit_fakes
from memory_summary.adapters import (
    AnthropicCompactingLLM,
    AnthropicLLM,
    ExtractiveSummarizer,
    OpenAIChatLLM,
    OpenAICompactingLLM,
    TiktokenCounter,
)
from memory_summary.testing.fakes import (
    InstrumentedSummarizer,
    ScriptedSummarizer,
    StreamingScripted,
)
from memory_summary.testing.summarizer_contract import SummarizerContract
from tests.anthropic_server import AnthropicServer
from tests.anthropic_server import Behaviour as AnthropicBehaviour
from tests.openai_server import Behaviour, OpenAICompatibleServer

REPLY = "The user asked about Oslo; the assistant listed three museums."
COUNT_O200K = TiktokenCounter("o200k_base").count


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.fixture(scope="module")
def openai_server() -> Iterator[OpenAICompatibleServer]:
    with OpenAICompatibleServer({"test-model": {"max_model_len": 16384}}) as server:
        server.then(Behaviour(text=REPLY))
        yield server


@pytest.fixture(scope="module")
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        server.then(AnthropicBehaviour(text=REPLY))
        yield server


@pytest.fixture(scope="module")
def failing_servers() -> Iterator[tuple[OpenAICompatibleServer, AnthropicServer]]:
    with OpenAICompatibleServer() as openai, AnthropicServer() as anthropic:
        openai.then(Behaviour(status=500))
        anthropic.then(AnthropicBehaviour(status=529))
        yield openai, anthropic


class TestExtractive(SummarizerContract):
    def make_summarizer(self, request):
        return ExtractiveSummarizer()

    def answer_tokens(self, text):
        return utf8_bytes(text)


@pytest.fixture(scope="module")
def in_worker() -> Iterator[ExtractiveSummarizer]:
    summarizer = ExtractiveSummarizer(worker="process")
    yield summarizer
    summarizer.close()


class TestExtractiveInWorker(SummarizerContract):
    """The same summarizer folding in its child process (one for the module)."""

    def make_summarizer(self, request):
        return request.getfixturevalue("in_worker")

    def dispose_summarizer(self, summarizer):
        """The module's fixture closes it, once: close() is final."""

    def answer_tokens(self, text):
        return utf8_bytes(text)


class TestExtractiveO200k(SummarizerContract):
    def make_summarizer(self, request):
        return ExtractiveSummarizer(COUNT_O200K)

    def answer_tokens(self, text):
        return COUNT_O200K(text)


class TestOpenAIChatLLM(SummarizerContract):
    def make_summarizer(self, request):
        server = request.getfixturevalue("openai_server")
        return OpenAIChatLLM(
            "test-model", base_url=server.base_url, api_key="k", max_retries=0
        )

    def make_failing_summarizer(self, request):
        server = request.getfixturevalue("failing_servers")[0]
        return OpenAIChatLLM("m", base_url=server.base_url, api_key="k", max_retries=0)


class TestAnthropicLLM(SummarizerContract):
    def make_summarizer(self, request):
        server = request.getfixturevalue("anthropic_server")
        return AnthropicLLM(
            "claude-haiku-4-5", base_url=server.base_url, api_key="k", max_retries=0
        )

    def make_failing_summarizer(self, request):
        server = request.getfixturevalue("failing_servers")[1]
        return AnthropicLLM("m", base_url=server.base_url, api_key="k", max_retries=0)


class TestAnthropicCompactingLLM(SummarizerContract):
    """The text path (``complete``, ``stream``) a native summarizer keeps."""

    def make_summarizer(self, request):
        server = request.getfixturevalue("anthropic_server")
        return AnthropicCompactingLLM(
            "claude-haiku-4-5", base_url=server.base_url, api_key="k", max_retries=0
        )

    def make_failing_summarizer(self, request):
        server = request.getfixturevalue("failing_servers")[1]
        return AnthropicCompactingLLM(
            "m", base_url=server.base_url, api_key="k", max_retries=0
        )


class TestOpenAICompactingLLM(SummarizerContract):
    """The text path (``complete``) a native summarizer keeps: the offline one's."""

    def make_summarizer(self, request):
        server = request.getfixturevalue("openai_server")
        client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
        request.addfinalizer(client.close)
        return OpenAICompactingLLM(client, model="test-model")

    def answer_tokens(self, text):
        return utf8_bytes(text)


class TestScriptedSummarizer(SummarizerContract):
    check_signature = False  # a double takes **kwargs

    def make_summarizer(self, request):
        return ScriptedSummarizer(REPLY)


class TestStreamingScripted(SummarizerContract):
    check_signature = False

    def make_summarizer(self, request):
        return StreamingScripted(REPLY)


class TestInstrumentedSummarizer(SummarizerContract):
    check_signature = False
    deterministic = False

    def make_summarizer(self, request):
        return InstrumentedSummarizer()


def test_every_fake_summarizer_of_the_kit_is_under_contract():
    fakes = {
        name
        for name, value in vars(kit_fakes).items()
        if inspect.isclass(value)
        and value.__module__ == kit_fakes.__name__
        and callable(getattr(value, "complete", None))
    }
    covered = {
        name.removeprefix("Test")
        for name, value in globals().items()
        if inspect.isclass(value) and issubclass(value, SummarizerContract)
    }

    assert fakes, "no fake found: the check itself is broken"
    assert fakes <= covered, f"add a contract class for: {sorted(fakes - covered)}"
