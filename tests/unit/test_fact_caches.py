"""The offline summarizer's fact caches keep nothing the garbage collector scans.

Every cached entry lives long: as ``Fact`` objects (five tracked objects each) they
made a server's full collections, which stop every thread, longer and more frequent.
"""

from __future__ import annotations

import gc

from memory_summary.adapters.summarizers.offline import fact_reading

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
