from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain.clear import clears_summary, is_near_summary, near_misses


@pytest.mark.parametrize(
    ("types", "clears"),
    [(None, True), (["summary"], True), (["memory", "summary"], True), ([], False)],
)
def test_a_clear_includes_the_summary_when_its_types_name_it(types, clears):
    assert clears_summary(types) is clears


@pytest.mark.parametrize(
    "name", ["memory", "history", "notes", "episodic", "", "  ", 5, b"summary"]
)
def test_another_sources_type_skips(name):
    assert clears_summary([name]) is False
    assert near_misses([name]) == []


@pytest.mark.parametrize(
    "name", ["summry", "Summary", "SUMMARY", "summaries", "sumary"]
)
def test_a_misspelled_summary_skips_and_is_named_as_a_near_miss(name):
    assert clears_summary(["memory", name]) is False
    assert near_misses(["memory", name]) == [name]


@given(st.lists(st.one_of(st.text(max_size=20), st.integers()), max_size=4))
def test_the_summary_is_cleared_exactly_when_a_type_is_summary(types):
    assert clears_summary(types) is ("summary" in types)
    assert all(is_near_summary(name) for name in near_misses(types))
    assert "summary" not in near_misses(types)
