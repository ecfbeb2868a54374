"""The tiktoken adapter: exact counts offline, vocabularies verified before use."""

from __future__ import annotations

import hashlib
import re
import socket

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_summary import Message, TokenizerError, ToolCall
from memory_summary.adapters import (
    TiktokenCounter,
    counter_factory,
    encoding_name_for,
    tokens,
)
from memory_summary.adapters.tokens import encodings as tiktoken_encodings
from memory_summary.domain import IMAGE_TOKENS
from memory_summary.domain.measure import CALL_OVERHEAD_TOKENS, MESSAGE_OVERHEAD_TOKENS


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network, an empty tiktoken cache, and no encodings loaded yet."""

    def refuse(*args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    tokens.load_encoding.cache_clear()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    yield tmp_path / "cache"
    tokens.load_encoding.cache_clear()


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "hello world", [15339, 1917]),
    ],
)
def test_counts_are_exact_offline_from_an_empty_cache(
    offline, encoding, text, expected
):
    counter = TiktokenCounter(encoding)

    assert counter.count(text) == len(expected)
    assert tokens.load_encoding(encoding).encode_ordinary(text) == expected
    assert not offline.exists()  # nothing was written to tiktoken's cache


def test_the_bundled_vocabulary_matches_tiktokens_published_hash():
    for name in tokens.ENCODINGS:
        url, expected = tokens.published_sources()[name]
        assert url.startswith("https://")
        assert hashlib.sha256(tokens.bundled_vocabulary(name)).hexdigest() == expected


def test_a_vocabulary_failing_verification_is_refused(offline, monkeypatch):
    url, _ = tokens.published_sources()["o200k_base"]
    monkeypatch.setattr(
        tiktoken_encodings,
        "published_sources",
        lambda: {"o200k_base": (url, "0" * 64)},
    )

    with pytest.raises(TokenizerError, match="fails verification"):
        TiktokenCounter("o200k_base")


def test_a_corrupt_tiktoken_cache_entry_is_never_read(offline):
    url, _ = tokens.published_sources()["cl100k_base"]
    offline.mkdir(parents=True)
    (offline / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"garbage")

    assert TiktokenCounter("cl100k_base").count("hello world") == 2


def test_counts_with_tiktokens_cache_disabled(offline, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")

    assert TiktokenCounter("o200k_base").count("hello world") == 2


def test_the_encoding_keeps_tiktokens_special_tokens(offline):
    encoding = tokens.load_encoding("o200k_base")

    assert encoding.encode("<|endoftext|>", allowed_special="all") == [199999]
    assert encoding.name == "o200k_base"


def test_special_token_text_counts_as_plain_text():
    counter = TiktokenCounter("cl100k_base")

    assert counter.count("<|endoftext|>") > 1


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("llama-3-70b", "o200k_base"),
        (None, "o200k_base"),
    ],
)
def test_encoding_is_picked_by_model_name(model, encoding):
    assert encoding_name_for(model) == encoding


def test_the_fallback_encoding_is_configurable():
    assert encoding_name_for("qwen2.5", fallback="cl100k_base") == "cl100k_base"
    assert counter_factory("cl100k_base")("qwen2.5")("hello world") == 2
    with pytest.raises(TokenizerError, match="fallback"):
        counter_factory("p50k_base")


def test_a_message_counts_its_text_exactly_and_its_media_by_estimate():
    counter = TiktokenCounter("o200k_base")
    text = "What is on this receipt? 你好"
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    call = ToolCall("c1", "ocr", '{"page": 1}')

    plain = counter.count_message(Message("user", text))
    with_media = counter.count_message(
        Message("user", [{"type": "text", "text": text}, image])
    )
    with_call = counter.count_message(Message("assistant", None, [call]))

    framing = MESSAGE_OVERHEAD_TOKENS  # what a chat template adds to each message
    assert plain == counter.count(text) + framing
    assert with_media == plain + IMAGE_TOKENS
    assert with_call == (
        framing
        + CALL_OVERHEAD_TOKENS
        + counter.count("ocr")
        + counter.count('{"page": 1}')
    )


# -- counting is linear on any input ---------------------------------------------------

RUN_UNITS = st.text(alphabet="aZ7+/=_-.é中 \n", min_size=1, max_size=5)


class RecordingEncoding:
    """Records the longest unbroken run of every text handed to tiktoken's BPE."""

    def __init__(self, encoding) -> None:
        self._encoding = encoding
        self.longest_runs: list[int] = []

    def encode_ordinary(self, text: str) -> list[int]:
        runs = re.findall(r"\S+|\s+", text)
        self.longest_runs.append(max(map(len, runs), default=0))
        return self._encoding.encode_ordinary(text)


@settings(max_examples=25, deadline=None)
@given(unit=RUN_UNITS, size=st.integers(5_000, 40_000))
def test_bpe_never_sees_a_run_longer_than_the_slice_and_the_count_errs_high(unit, size):
    counter = TiktokenCounter("o200k_base")
    exact = counter._encoding.encode_ordinary
    text = (unit * (size // len(unit) + 1))[:size]
    counter._encoding = recording = RecordingEncoding(counter._encoding)

    counted = counter.count(text)

    assert max(recording.longest_runs) <= tokens.LONG_RUN_CHARS
    assert len(recording.longest_runs) <= size // tokens.LONG_RUN_CHARS + 2
    assert counted >= len(exact(text))
    assert counted <= len(exact(text)) + 2 * (size // tokens.LONG_RUN_CHARS + 1)


@settings(max_examples=25, deadline=None)
@given(text=st.text(max_size=3_000))
def test_text_without_a_long_run_counts_exactly(text):
    counter = TiktokenCounter("o200k_base")

    assert counter.count(text) == len(counter._encoding.encode_ordinary(text))
