"""One rule decides what a store, summarizer or archive can do, on every Python.

The rule reads a Protocol's own members and looks each up on the object, so a
delegating wrapper (``__getattr__``) has what it delegates to; ``isinstance``
against a runtime-checkable Protocol misses them from Python 3.12 on.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest

from memory_summary import Message, SummaryEngine
from memory_summary.adapters import ExtractiveSummarizer, InMemoryArchive, InMemoryStore
from memory_summary.domain import RecallUnsupported, ports
from memory_summary.domain.capabilities import (
    ArchiveCapabilities,
    StoreCapabilities,
    SummarizerCapabilities,
    archive_capabilities,
    has_capability,
    missing_members,
    protocol_members,
    store_capabilities,
    summarizer_capabilities,
)
from memory_summary.testing.fakes import ScriptedSummarizer, StreamingScripted

PROTOCOLS = [
    value
    for value in vars(ports).values()
    if isinstance(value, type)
    and getattr(value, "_is_protocol", False)
    and value is not typing.Protocol
]


class Proxy:
    """Delegates every attribute it does not have; can hide some."""

    def __init__(self, inner: object, *hidden: str) -> None:
        self._inner = inner
        self._hidden = set(hidden)

    def __getattr__(self, name: str) -> Any:
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_every_port_is_found():
    assert {p.__name__ for p in PROTOCOLS} >= {
        "MemoryStore",
        "CompressionStore",
        "CompactingStore",
        "WindowReadingStore",
        "SearchableStore",
        "MetadataPages",
        "LocallyCountingStore",
        "StreamingSummarizer",
        "StoreArchive",
    }


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_members_are_the_protocols_own(protocol):
    names = {name for name, _ in protocol_members(protocol)}

    if hasattr(typing, "get_protocol_members"):  # Python 3.13
        assert names == set(typing.get_protocol_members(protocol))
    for base in protocol.__mro__[1:]:
        if base in PROTOCOLS:
            assert {n for n, _ in protocol_members(base)} <= names
    assert names
    assert not any(name.startswith("_") for name in names)


def test_methods_and_attributes_are_told_apart():
    members = dict(protocol_members(ports.PoppingStore))

    assert members["pop_message"] is True
    assert members["save_message"] is True  # from MemoryStore
    assert "commit" not in members  # popping needs no commit: a store of old pops too
    assert dict(protocol_members(ports.LocallyCountingStore)) == {
        "counts_locally": False
    }
    assert dict(protocol_members(ports.StoreArchive)) == {
        "save_message": True,
        "store": False,
    }


def test_a_delegating_proxy_has_what_it_delegates_to():
    store = InMemoryStore()

    for protocol in PROTOCOLS:
        assert has_capability(Proxy(store), protocol) == has_capability(store, protocol)
    assert store_capabilities(Proxy(store)) == store_capabilities(store)
    assert store_capabilities(store) == StoreCapabilities(
        reads_window=True,
        pages_metadata=True,
        searchable=True,
        counts_locally=True,
        spans=True,
        reads_span_record=True,
        saves_batches=True,
        sets_recall_index=True,
    )


def test_a_hidden_method_is_a_missing_capability():
    store = Proxy(InMemoryStore(), "pop_message", "count_history")

    assert missing_members(store, ports.PoppingStore) == ["pop_message"]
    assert missing_members(store, ports.CompressionStore) == ["count_history"]
    assert store_capabilities(store).reads_window is True  # read_window alone


def test_a_member_that_is_not_callable_is_not_a_method():
    class Odd(InMemoryStore):
        read_window = None
        counts_locally = False  # type: ignore[assignment]

    assert missing_members(Odd(), ports.WindowReadingStore) == ["read_window"]
    assert store_capabilities(Odd()) == StoreCapabilities(
        pages_metadata=True,
        searchable=True,
        spans=True,
        reads_span_record=True,
        saves_batches=True,
        sets_recall_index=True,
    )


def test_counting_locally_needs_the_flag_set_true():
    class Bare:
        pass

    assert not store_capabilities(Bare()).counts_locally
    assert not store_capabilities(
        Proxy(InMemoryStore(), "counts_locally")
    ).counts_locally


def test_summarizers_through_a_proxy():
    streaming = StreamingScripted("x")
    extractive = ExtractiveSummarizer(len)

    assert summarizer_capabilities(Proxy(streaming)) == summarizer_capabilities(
        streaming
    )
    assert summarizer_capabilities(Proxy(streaming)).streams
    assert not summarizer_capabilities(ScriptedSummarizer("x")).streams
    assert summarizer_capabilities(Proxy(extractive)) == SummarizerCapabilities(
        label=extractive.label, starts=True
    )
    assert not summarizer_capabilities(Proxy(streaming, "stream")).streams


def test_archives_through_a_proxy():
    store, archive = InMemoryStore(), InMemoryArchive()

    class Shared:
        def __init__(self, store: object) -> None:
            self.store = store

        def save_message(self, session_id: str, message: object) -> object:
            return message

    assert archive_capabilities(None, store) == ArchiveCapabilities()
    assert archive_capabilities(Proxy(archive), store) == ArchiveCapabilities(
        forgets=True
    )
    assert archive_capabilities(Proxy(Shared(store)), store) == ArchiveCapabilities(
        shares_store=True
    )
    assert archive_capabilities(Shared(InMemoryStore()), store) == (
        ArchiveCapabilities()
    )


def test_the_engine_refuses_a_store_naming_what_it_lacks():
    store = Proxy(InMemoryStore(), "break_lease", "renew_lease")

    with pytest.raises(TypeError) as caught:
        SummaryEngine(store)  # type: ignore[arg-type]

    message = str(caught.value)
    assert "lacks renew_lease, break_lease" in message
    assert "CompressionStore" in message


def test_the_engine_refuses_a_store_without_any_commit():
    store = Proxy(InMemoryStore(), "commit", "commit_compaction")

    with pytest.raises(TypeError, match="lacks commit;"):
        SummaryEngine(store)  # type: ignore[arg-type]


def test_a_store_with_only_the_deprecated_commit_is_wired_with_a_warning(
    make_engine,
):
    store = Proxy(InMemoryStore(), "commit")

    with pytest.deprecated_call(match="commits through commit_compaction"):
        make_engine(store)


def test_the_engine_decides_through_a_proxy_once_when_wired(make_engine):
    store = InMemoryStore()
    store.save_message("s", Message("user", "the blue heron"))
    hiding = Proxy(store, "search_messages")
    engine = make_engine(Proxy(store))
    refusing = make_engine(hiding)
    hiding._hidden.clear()  # decided at wiring: showing it later changes nothing

    hits = engine.search_history("s", "heron")

    assert [h.message.content for h in hits] == ["the blue heron"]
    with pytest.raises(RecallUnsupported, match="cannot search"):
        refusing.search_history("s", "heron")
