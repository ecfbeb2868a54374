"""What each summarizer backend sends and costs per compaction, on a recorded workload.

Replays one recorded conversation (LoCoMo conv-26, ``../shared/datasets/locomo``;
a generated one when the file is absent) through one engine per backend, with the
default config, and reports per compaction: the calls made, the request and reply
bytes, the tokens sent and received as the fake provider counts them (o200k over
every text field of the request and of the reply's summary), and the CPU seconds
of this process (engine, SDK client, tokenizer) per compaction.

The providers are one loopback fake (``compaction_fake.py``) in a process of its
own, so its CPU is not counted here. It answers chat completions, Anthropic
messages (a ``compaction`` block when asked for one) and ``/responses/compact``
(the user messages and one sealed ``compaction`` item) with a summary of about 200
tokens. The LLM text backends are called without streaming (the same request body).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import openai
from summary_quality.locomo import default_locomo_path

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import (
    AnthropicCompactingLLM,
    AnthropicLLM,
    ExtractiveSummarizer,
    InMemoryStore,
    OpenAIChatLLM,
    OpenAICompactingLLM,
)

FAKE = Path(__file__).with_name("compaction_fake.py")


def workload(quick: bool) -> tuple[str, list[Message]]:
    """Return the recorded conversation's name and its messages (user/assistant)."""
    limit = 240 if quick else 10_000
    path = default_locomo_path()
    if path is not None:
        sample = json.loads(path.read_text(encoding="utf-8"))[0]
        talk = sample["conversation"]
        first = talk["speaker_a"]
        turns = [
            turn
            for key in sorted(
                (k for k in talk if k.startswith("session_") and k[8:].isdigit()),
                key=lambda k: int(k[8:]),
            )
            for turn in talk[key]
        ]
        messages = [
            Message("user" if t["speaker"] == first else "assistant", t["text"])
            for t in turns[:limit]
        ]
        return str(sample.get("sample_id", "locomo")), messages
    messages = [
        Message(
            "user" if i % 2 == 0 else "assistant",
            f"Turn {i}: item {i} costs {i * 3} euros and ships in {i % 7} days.",
        )
        for i in range(min(limit, 400))
    ]
    return "generated", messages


class Unstreamed:
    """An LLM summarizer called without streaming (the same request body)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.model = llm.model

    def context_length(self, model: str | None = None) -> int | None:
        return self._llm.context_length(model)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        return self.complete_with_usage(messages, **options).text

    def complete_with_usage(self, messages: Sequence[Message], **options: Any) -> Any:
        return self._llm.complete_with_usage(messages, **options)


@contextmanager
def fake_provider() -> Iterator[str]:
    """Run the fake provider in a process of its own; yield its base URL."""
    process = subprocess.Popen(
        [sys.executable, str(FAKE)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _stats(base: str, reset: bool = False) -> dict[str, Any]:
    path = "/reset" if reset else "/stats"
    with urllib.request.urlopen(base + path, timeout=10) as answer:
        stats: dict[str, Any] = json.loads(answer.read())
        return stats


def _backends(base: str) -> dict[str, Callable[[], tuple[Any, Callable[[], None]]]]:
    v1 = f"{base}/v1"

    def extractive() -> tuple[Any, Callable[[], None]]:
        return ExtractiveSummarizer(), lambda: None

    def openai_text() -> tuple[Any, Callable[[], None]]:
        llm = OpenAIChatLLM(
            "gpt-5.4-mini", base_url=v1, api_key="k", context_tokens=128_000
        )
        return Unstreamed(llm), llm.close

    def anthropic_text() -> tuple[Any, Callable[[], None]]:
        llm = AnthropicLLM(
            "claude-haiku-4-5", base_url=base, api_key="k", context_tokens=200_000
        )
        return Unstreamed(llm), llm.close

    def anthropic_native() -> tuple[Any, Callable[[], None]]:
        llm = AnthropicCompactingLLM(
            "claude-haiku-4-5", base_url=base, api_key="k", context_tokens=200_000
        )
        return llm, llm.close

    def openai_native() -> tuple[Any, Callable[[], None]]:
        client = openai.OpenAI(api_key="k", base_url=v1, max_retries=0)
        return OpenAICompactingLLM(client, model="gpt-5.4-mini"), client.close

    return {
        "text: extractive (offline)": extractive,
        "text: OpenAI chat": openai_text,
        "text: Anthropic messages": anthropic_text,
        "native: Anthropic compaction": anthropic_native,
        "native: OpenAI compact + extractive": openai_native,
    }


def measure(
    name: str,
    make: Callable[[], tuple[Any, Callable[[], None]]],
    base: str,
    quick: bool,
) -> dict[str, object]:
    """Replay the workload through one backend; return its figures per compaction."""
    source, messages = workload(quick)
    llm, close = make()
    store = InMemoryStore()
    _stats(base, reset=True)
    try:
        with SummaryEngine(store, llm) as engine:
            started = time.process_time()
            for message in messages:
                store.save_message("s", message)
                engine.turn_after("s")
                engine.wait_idle(timeout=60)
            cpu_s = time.process_time() - started
            record = engine.summary("s")
            usage = engine.usage("s")
    finally:
        close()
    sent = _stats(base)
    compactions = record.compressions if record is not None else 0
    per = max(compactions, 1)
    return {
        "backend": name,
        "workload": source,
        "messages": len(messages),
        "compactions": compactions,
        "native_kept": record is not None and record.native is not None,
        "calls_per_compaction": round(sent["calls"] / per, 2),
        "request_bytes_per_compaction": round(sent["request_bytes"] / per),
        "reply_bytes_per_compaction": round(sent["reply_bytes"] / per),
        "tokens_sent_per_compaction": round(sent["tokens_in"] / per),
        "tokens_received_per_compaction": round(sent["tokens_out"] / per),
        "engine_cpu_ms_per_compaction": round(cpu_s * 1000 / per, 2),
        "summary_chars": len(record.text) if record is not None else 0,
        "usage_source": usage.source or "none",
    }


def run(quick: bool) -> list[dict[str, object]]:
    """Measure every backend on the same workload."""
    anthropic.Anthropic  # noqa: B018 - the extra must be installed (fail early)
    with fake_provider() as base:
        return [
            measure(name, make, base, quick) for name, make in _backends(base).items()
        ]


def rows(results: list[dict[str, object]]) -> list[dict[str, object]]:
    """Return the table printed for a run (the figures per compaction)."""
    keys = (
        "backend",
        "compactions",
        "calls_per_compaction",
        "request_bytes_per_compaction",
        "tokens_sent_per_compaction",
        "tokens_received_per_compaction",
        "engine_cpu_ms_per_compaction",
    )
    return [{key: row[key] for key in keys} for row in results]
