"""Irregular forms: "met" is found by "meet", and the forms rank as one term."""

from __future__ import annotations

from collections import Counter

from memory_summary import Message
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import ranking
from memory_summary.domain.forms import form_of, with_forms
from memory_summary.domain.recall import query_terms, text_terms
from memory_summary.engine import SummaryEngine

FILLER = [f"filler line {i}" for i in range(20)]


def _documents(*texts: str) -> list[tuple[int, list[str]]]:
    return [(i + 1, text_terms(text)) for i, text in enumerate(texts)]


def test_a_query_gets_the_other_forms_of_its_irregular_words() -> None:
    assert with_forms(query_terms("When did we meet the children?")) == (
        "meet",
        "children",
        "met",
        "child",
    )
    assert with_forms(("camp",)) == ("camp",)
    assert {form_of(t) for t in with_forms(("went",))} == {"go"}


def test_a_message_saying_met_scores_as_one_saying_meet() -> None:
    documents = _documents("we met at the park", *FILLER, "we meet at the park")

    found = dict(ranking.reference_search(documents, with_forms(("meet",)), 5))

    assert found[1] == found[22] > 0


def test_the_forms_count_their_messages_together() -> None:
    # "met" alone is in 2 of 24 messages, "meet" in 10: together the word is
    # common, and weighs what a term in 12 messages weighs.
    texts = ["we met", "met again", *["meet up"] * 10, *FILLER[:12]]
    documents = _documents(*texts)
    coverage = ranking.Coverage()

    ranking.bm25_search(
        ["met", "meet"],
        {1: Counter(met=1), 3: Counter(meet=1)},
        {"met": 2, "meet": 10},
        {1: 2, 3: 2},
        documents=len(documents),
        total_length=sum(len(t) for _, t in documents),
        coverage=coverage,
    )

    assert coverage.weights == [ranking.idf(24, 12)]
    counts = {"met": 2, "meet": 10, "lake": 1}
    assert ranking.informative(["met", "meet", "lake"], counts, 24) == ["lake"]
    assert ranking.informative(["met", "lake"], counts, 24) == ["met", "lake"]


def test_the_forms_of_a_word_seed_as_rare_as_the_word_each_in_a_place() -> None:
    rare = [f"w{i}" for i in range(ranking.SEED_TERMS)]
    matching = dict.fromkeys(rare, 5)

    common = ranking.seed_terms(
        [*rare, "met", "meet"], matching | {"met": 1, "meet": 10}
    )
    rarest = ranking.seed_terms(
        [*rare, "met", "meet"], matching | {"met": 1, "meet": 1}
    )

    # "met" alone is the rarest term, but its word counts "meet" too: 11 messages.
    assert common == rare
    # Together in 2 messages: the rarest word, whose two forms take two places.
    assert rarest == ["met", "meet", *rare[:-2]]


def test_search_history_finds_met_for_a_question_asking_when_we_meet() -> None:
    store = InMemoryStore()
    with SummaryEngine(store) as engine:
        for text in ("We met at the lake last June.", *FILLER):
            store.save_message("s", Message("user", text))

        hits = engine.search_history("s", "When did we meet?", limit=3)

    assert hits
    assert hits[0].message.text == "We met at the lake last June."
