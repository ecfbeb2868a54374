from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import ConfigError
from memory_summary.domain.clear import clears_summary, is_near_summary


@pytest.mark.parametrize(
    ("types", "clears"),
    [(None, True), (["summary"], True), (["memory", "summary"], True), ([], False)],
)
def test_a_clear_includes_the_summary_when_its_types_name_it(types, clears):
    assert clears_summary(types) is clears


@pytest.mark.parametrize("name", ["memory", "history", "notes", "episodic"])
def test_another_sources_type_skips(name):
    assert clears_summary([name]) is False


@pytest.mark.parametrize(
    "name", ["summry", "Summary", "SUMMARY", "summaries", "sumary"]
)
def test_a_misspelled_summary_is_an_error_naming_it(name):
    with pytest.raises(ConfigError, match="did you mean 'summary'") as info:
        clears_summary(["memory", name])

    assert info.value.value == name


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_type_name_is_an_error(name):
    with pytest.raises(ConfigError, match="non-empty"):
        clears_summary([name])


@given(st.text(max_size=20))
def test_a_name_is_summary_a_near_miss_or_another_type_never_two(name):
    if name == "summary":
        assert not is_near_summary(name)
        assert clears_summary([name])
    elif is_near_summary(name):
        with pytest.raises(ConfigError):
            clears_summary([name])
    elif name.strip():
        assert clears_summary([name]) is False
