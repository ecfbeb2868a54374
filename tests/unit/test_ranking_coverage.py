"""Ranking step 6: a passage covering more of the query ranks first."""

from __future__ import annotations

from collections import Counter
from unittest import mock

from memory_summary.domain import ranking
from memory_summary.domain.recall import query_terms, text_terms

# One message says "camping" three times; another says "family" and "camping" once
# each, "family" being commoner (nine messages of forty).
TEXTS = [
    "camping camping camping",
    *["hello"] * 3,
    "family camping",
    *["hello"] * 3,
    *["family dinner", "hello", "hello", "hello"] * 8,
]


def _ranked() -> list[int]:
    documents = [(i + 1, text_terms(text)) for i, text in enumerate(TEXTS)]
    return [
        i
        for i, _ in ranking.reference_search(
            documents, query_terms("family camping"), 2
        )
    ]


def test_the_message_holding_every_query_term_beats_one_repeating_the_rarest() -> None:
    assert _ranked() == [5, 1]


def test_without_coverage_bm25_alone_ranks_the_repetition_first() -> None:
    # The factor taken away (every share to the power 0 is 1): the rule is what
    # puts "family camping" first.
    with mock.patch.object(ranking, "COVERAGE_POWER", 0.0):
        assert _ranked() == [1, 5]


def test_coverage_records_which_terms_each_returned_match_holds() -> None:
    coverage = ranking.Coverage()
    found = ranking.bm25_search(
        ["famili", "camp"],
        {
            1: Counter(camp=3),
            5: Counter(famili=1, camp=1),
            9: Counter(famili=1),
        },
        {"famili": 9, "camp": 2},
        {1: 3, 5: 2, 9: 2},
        documents=40,
        total_length=60,
        limit=2,
        coverage=coverage,
    )

    assert coverage.weights == [ranking.idf(40, 9), ranking.idf(40, 2)]
    assert coverage.held == {id_: {1: 0b10, 5: 0b11}[id_] for id_, _ in found}
    assert len(coverage.held) == 2  # only what is returned
