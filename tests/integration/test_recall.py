"""The engine's recall API on every store: search, read, ranges and lineage."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from memory_summary import (
    HistoryNotFound,
    Message,
    QueryError,
    RecallUnsupported,
    SummaryConfig,
)
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import STORE_KINDS, store_for

SEARCHABLE_KINDS = STORE_KINDS


@pytest.fixture(params=SEARCHABLE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


CONFIG = SummaryConfig(threshold=10, keep_recent=4, summary_versions_kept=2)


def _talk(engine, store, sid: str, count: int, start: int = 0) -> list[Message]:
    saved = []
    for i in range(start, start + count):
        role = "user" if i % 2 == 0 else "assistant"
        saved.append(store.save_message(sid, Message(role, f"turn {i} word{i}x")))
        engine.turn_after(sid)
        assert engine.wait_idle(timeout=20)
    return saved


def test_a_question_naming_a_speaker_finds_what_that_speaker_said_first(
    store, make_engine
) -> None:
    engine = make_engine(store, ScriptedSummarizer("Summary."), config=CONFIG)
    said = [
        Message("user", "I painted a lighthouse last week", name="Ana"),
        Message("assistant", "Nice, Ana! I painted a barn and painted it", name="Ben"),
    ]
    chat = ["How was work?", "Busy, thanks.", "Talk soon!", "Bye for now."]
    saved = [store.save_message("s1", m) for m in said]
    for i, text in enumerate(chat):
        store.save_message("s1", Message("user", text, name=("Ana", "Ben")[i % 2]))

    hits = engine.search_history("s1", "What did Ana paint?", limit=2)
    unnamed = engine.search_history("s1", "What was painted?", limit=2)

    # Ben's message says "painted" twice and names Ana: it ranks first by BM25
    # alone; Ana said the other one, which a question about Ana puts first.
    assert [h.message.id for h in hits] == [saved[0].id, saved[1].id]
    assert hits[0].score > hits[1].score
    assert [h.message.id for h in unnamed] == [saved[1].id, saved[0].id]


def test_a_question_naming_a_day_finds_what_was_said_that_day_first(
    store, make_engine
) -> None:
    engine = make_engine(store, ScriptedSummarizer("Summary."), config=CONFIG)
    day = 86_400.0
    october_13 = 19_643 * day  # 2023-10-13, UTC
    said = [
        Message("user", "I painted a lighthouse", timestamp=october_13 + 3600),
        Message(
            "user", "I painted a barn and painted it", timestamp=october_13 + 9 * day
        ),
    ]
    saved = [store.save_message("s1", m) for m in said]
    for i, text in enumerate(["How was work?", "Busy, thanks.", "Talk soon!"]):
        store.save_message("s1", Message("user", text, timestamp=october_13 + i * day))

    hits = engine.search_history("s1", "What was painted on October 13, 2023?", limit=2)
    undated = engine.search_history("s1", "What was painted?", limit=2)

    # The barn says "painted" twice: BM25 alone ranks it first; the lighthouse
    # was painted on the day the question names.
    assert [h.message.id for h in hits] == [saved[0].id, saved[1].id]
    assert hits[0].score > hits[1].score
    assert [h.message.id for h in undated] == [saved[1].id, saved[0].id]


def test_a_folded_message_is_found_with_the_version_that_folded_it(
    store, make_engine
) -> None:
    engine = make_engine(
        store, ScriptedSummarizer("Summary one.", "Summary two."), config=CONFIG
    )
    saved = _talk(engine, store, "s1", 20)
    _talk(engine, store, "s2", 12)

    hits = engine.search_history("s1", "word2x")
    versions = engine.summary_history("s1")

    assert hits[0].message.id == saved[2].id
    assert hits[0].archived is True
    folded_by = [v for v in versions if v.folded(saved[2].id)]
    assert [v.version for v in folded_by] == [hits[0].summary_version]
    assert versions[-1].current
    assert versions[-1].summary == "Summary two."
    active = engine.search_history("s1", "word19x")
    assert active[0].archived is False
    assert active[0].summary_version is None
    assert engine.search_history("s2", "word2x")[0].message.id != saved[2].id


def test_versions_are_bounded_and_ranges_are_disjoint(store, make_engine) -> None:
    llm = ScriptedSummarizer(*[f"Summary {i}." for i in range(10)])
    engine = make_engine(store, llm, config=CONFIG)
    _talk(engine, store, "s1", 40)

    versions = engine.summary_history("s1")

    assert len(versions) == CONFIG.summary_versions_kept + 1
    assert [v.version for v in versions] == sorted(v.version for v in versions)
    assert sum(v.current for v in versions) == 1
    ranges = [(v.first_id, v.last_id) for v in versions]
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    # an archived message older than the kept versions still names its version
    first = engine.search_history("s1", "word0x")[0]
    assert first.archived
    assert first.summary_version == 1


def test_read_history_around_and_range(store, make_engine) -> None:
    engine = make_engine(store, ScriptedSummarizer("S."), config=CONFIG)
    saved = _talk(engine, store, "s1", 14)
    other = _talk(engine, store, "s2", 2)

    around = engine.read_history("s1", saved[5].id, before=2, after=1)
    ranged = engine.read_history_range("s1", saved[0].id, saved[-1].id, limit=5)

    assert [e.message for e in around] == saved[3:7]
    assert [e.message for e in ranged] == saved[:5]
    assert all(e.archived for e in ranged)
    with pytest.raises(HistoryNotFound):
        engine.read_history("s1", other[0].id)
    with pytest.raises(HistoryNotFound):
        engine.read_history_range("s1", other[0].id, other[-1].id)
    with pytest.raises(ValueError, match="before"):
        engine.read_history("s1", saved[0].id, before=-1)


@pytest.mark.parametrize("query", ["", "?!", 42, "x" * 200_000])
def test_a_query_that_cannot_be_searched_is_a_clear_error(
    store, make_engine, query
) -> None:
    engine = make_engine(store)

    with pytest.raises(QueryError):
        engine.search_history("s1", query)


def test_forget_erases_index_and_versions_clear_keeps_the_index(
    store, make_engine
) -> None:
    engine = make_engine(store, ScriptedSummarizer("S."), config=CONFIG)
    _talk(engine, store, "s1", 12)
    _talk(engine, store, "s2", 12)

    engine.clear("session", "s1", types=["summary"])
    engine.forget("s2")

    assert engine.summary_history("s1") == []
    assert engine.search_history("s1", "word1x")[0].archived
    assert engine.search_history("s2", "word1x") == []
    assert engine.summary_history("s2") == []
    assert store.get_metadata("summary.versions", "s2") is None


def test_a_store_without_search_is_a_clear_error(make_engine) -> None:
    from memory_summary.adapters import InMemoryStore

    class Plain(InMemoryStore):
        search_messages = None  # type: ignore[assignment]

    engine = make_engine(Plain())

    with pytest.raises(RecallUnsupported, match="SearchableStore"):
        engine.search_history("s1", "anything")


def test_the_async_twins_answer_alike(store, make_engine) -> None:
    engine = make_engine(store, ScriptedSummarizer("S."), config=CONFIG)
    saved = _talk(engine, store, "s1", 12)
    aio = AsyncSummaryEngine(engine)

    async def main():
        return (
            await aio.search_history("s1", "word3x"),
            await aio.read_history("s1", saved[3].id, before=0, after=0),
            await aio.read_history_range("s1", saved[3].id, saved[3].id),
            await aio.summary_history("s1"),
        )

    hits, around, ranged, versions = asyncio.run(main())

    assert hits == engine.search_history("s1", "word3x")
    assert [e.message for e in around] == [saved[3]] == [e.message for e in ranged]
    assert versions == engine.summary_history("s1")


def test_a_range_recovered_after_an_outage_names_its_version(store, make_engine):
    from memory_summary import SummarizerError

    recovered_text = (
        "The user wrote twelve numbered notes, each naming a word, and asked the "
        "assistant to keep every one of them in mind for later questions."
    )
    llm = ScriptedSummarizer(SummarizerError("down"), recovered_text)
    engine = make_engine(store, llm, config=CONFIG)
    saved = [
        store.save_message("s1", Message("user", f"note {i} word{i}x"))
        for i in range(12)
    ]

    trimmed = engine.compress("s1").result(timeout=20)
    before = engine.search_history("s1", "word1x")[0]
    recovered = engine.resummarize("s1").result(timeout=20)
    after = engine.search_history("s1", "word1x")[0]
    versions = engine.summary_history("s1")

    assert trimmed.kind == "trimmed"
    assert before.archived
    assert before.summary_version is None  # archived without a summary
    assert recovered.recovered > 0
    assert versions[-1].summary == recovered_text
    assert versions[-1].folded(saved[1].id)
    assert after.summary_version == versions[-1].version


def test_clearing_all_summaries_erases_every_lineage(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer("S."), config=CONFIG)
    _talk(engine, store, "s1", 12)
    _talk(engine, store, "s2", 12)

    engine.clear("all")

    assert engine.summary_history("s1") == engine.summary_history("s2") == []
    assert store.list_metadata("summary.versions") == []
    assert engine.search_history("s2", "word3x")[0].archived
