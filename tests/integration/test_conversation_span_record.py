"""A turn asks the store once whether its transcript is current and what the record is.

With a ``SpanRecordStore`` the span and the summary record come from one read; without
it (or when the record cannot be decoded) they are read apart, and the requests are
the same. When the transcript is not current the history is read again and the
record after it, so a compression committed in between is never half seen.
"""

from __future__ import annotations

import contextlib

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import write_raw_metadata
from tests.integration.test_conversation import completion, reference

CONFIG = SummaryConfig(threshold=12, keep_recent=6)


class CountingReads(InMemoryStore):
    """Counts the reads a turn makes; runs ``hook`` before the next history read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = {"span_and_metadata": 0, "get_metadata": 0, "active_span": 0}
        self.hook = None

    def span_and_metadata(self, session_id, namespace):
        self.reads["span_and_metadata"] += 1
        return super().span_and_metadata(session_id, namespace)

    def get_metadata(self, namespace, key):
        self.reads["get_metadata"] += 1
        return super().get_metadata(namespace, key)

    def active_span(self, session_id):
        self.reads["active_span"] += 1
        return super().active_span(session_id)

    def get_history(self, session_id, limit=None):
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().get_history(session_id, limit)


class ReadsApart:
    """A store without ``SpanRecordStore``: everything else delegated."""

    def __init__(self, inner: CountingReads) -> None:
        self._inner = inner

    def __getattr__(self, name):
        if name == "span_and_metadata":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_current_turn_reads_the_span_and_the_record_in_one_call():
    store = CountingReads()
    config = SummaryConfig(threshold=400, keep_recent=20)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        store.save_metadata("summary", "ann", {"text": "old", "generation": "g"})
        chat = engine.conversation("ann")
        for turn in range(10):
            chat.prepare(f"question {turn}")
            chat.record(completion(f"answer {turn}"))
        assert store.reads == {
            "span_and_metadata": 10,
            "get_metadata": 0,
            "active_span": 0,
        }


@pytest.mark.parametrize("apart", [False, True], ids=["together", "apart"])
def test_a_compression_committed_while_the_history_is_read_is_seen(apart):
    inner = CountingReads()
    store = ReadsApart(inner) if apart else inner
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("bea")
        for turn in range(5):
            chat.prepare(f"q{turn}")
            chat.record(completion(f"a{turn}"))
        assert engine.wait_idle(timeout=10)
        inner.save_message("bea", Message("user", "beside"))  # not current any more
        compressed = []
        inner.hook = lambda: compressed.append(
            engine.compress("bea").result(timeout=10).kind
        )

        request = chat.prepare()

        assert compressed == ["compressed"]
        assert request == reference(engine, "bea", system=None)
        assert engine.summary("bea").text in request[0]["content"]
        if apart:
            assert inner.reads["span_and_metadata"] == 0


def test_an_undecodable_record_is_read_apart_and_ignored(tmp_path):
    store = SqliteStore(tmp_path / "store.sqlite3")
    with (
        contextlib.closing(store),  # never left to the collector (3.13 warns)
        SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine,
    ):
        chat = engine.conversation("cy")
        chat.prepare("hello")
        chat.record(completion("hi"))
        write_raw_metadata(store, "summary", "cy", "not json")
        assert chat.prepare("again") == [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "again"},
        ]
        store.save_metadata("summary", "cy", {"bogus": True})  # foreign, decodable
        assert chat.prepare() == reference(engine, "cy", system=None)
