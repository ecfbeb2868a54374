"""The offline summarizer's caches keep nothing the garbage collector scans.

Every cached entry lives long: as ``Fact`` objects (five tracked objects each) they
made a server's full collections, which stop every thread, longer and more frequent;
so did a new ``(kind, text)`` pair per token of every clause ``clause_fold`` reads.
"""

from __future__ import annotations

import gc

from memory_summary.adapters.summarizers.offline import fact_reading
from memory_summary.domain import clause_fold

SAID = "We land in Lisbon on 14 May around 10:40; the whole budget is 1,200 EUR"


def test_cached_facts_are_untracked_and_equal_to_facts_read_afresh():
    fact_reading._fact_parts.cache_clear()
    fact_reading._remembered_said_facts.cache_clear()

    first = fact_reading._fact(SAID, "user", "", None, "")
    said = fact_reading._said_facts(f"user: {SAID}", "facts", "")
    for _ in range(3):  # a collection stops tracking a tuple of untracked items:
        gc.collect()  # nested ones, from the innermost out
    parts = fact_reading._fact_parts(SAID, "user", "", None, "")
    said_parts = fact_reading._remembered_said_facts(f"user: {SAID}", "facts", "")

    assert not gc.is_tracked(parts)
    assert said_parts
    assert not any(gc.is_tracked(p) for p in said_parts)
    assert not gc.is_tracked(said_parts)
    again = fact_reading._fact(SAID, "user", "", None, "")
    assert again == first == fact_reading._read_fact(SAID, "user", "", None, "")
    assert again.words == first.words
    assert again.own == first.own
    assert again.named == first.named
    assert again.salience == first.salience
    assert fact_reading._said_facts(f"user: {SAID}", "facts", "") == said


def test_clauses_share_the_pairs_of_their_common_tokens():
    clause_fold._tokens.cache_clear()
    first = clause_fold._tokens("Step 12, keep within the budget of 300 EUR")
    second = clause_fold._tokens("Step 13, keep within the budget of 450 EUR")

    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        assert a == b or a[0] == b[0] == "slot"
        if a == b:
            assert a is b  # one object per distinct token, not one per clause
    for _ in range(2):  # a collection stops tracking a tuple of untracked items:
        gc.collect()  # nested ones, from the innermost out
    assert not gc.is_tracked(first)


def test_the_shared_pairs_start_afresh_and_tokens_stay_exact(monkeypatch):
    monkeypatch.setattr(clause_fold, "MAX_PAIRS", 4)
    clause_fold._tokens.cache_clear()
    texts = [f"order ORD-{n} shipped to gate {n % 7}, row {n}" for n in range(40)]
    for text in texts:
        tokens = clause_fold._tokens(text)
        assert "".join(t for _, t in tokens) == text
        assert [k for k, _ in tokens].count("slot") == 3
    assert len(clause_fold._PAIRS) <= clause_fold.MAX_PAIRS + len(tokens)
