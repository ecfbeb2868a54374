"""The answer-matching rule (``summary_quality.matching``)."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st
from summary_quality import matching
from summary_quality.matching import (
    MatchText,
    answer_parts,
    contains_answer,
    words_of,
)


def test_the_modules_doctests_pass():
    result = doctest.testmod(matching)

    assert result.attempted >= 8
    assert result.failed == 0


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("I STARTED DOING AERIAL YOGA!!!", "aerial yoga"),
        ("we adopted two puppies last May", "2 puppy"),
        ("Melanie's kids love the beach.", "kids, beach"),
        ("Mostly found bottle caps with the metal detector", "bottle caps"),
        ("signed as a shooting-guard with the team", "shooting guard"),
        ("Aerosmith was the favourite band at the festival", "Aerosmith"),
        ("I went on 7 May 2023", "7 May, 2023"),
    ],
)
def test_spelling_differences_still_match(text, answer):
    assert contains_answer(text, answer)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("I love yoga", "aerial yoga"),
        (
            "a guard at the gate, and later that night we went shooting",
            "shooting guard",
        ),
        ("she has 3 cats", "2 cats"),
        ("", "anything"),
        ("anything at all", ""),
        ("caterpillar", "cat"),
    ],
)
def test_missing_words_or_far_apart_words_do_not_match(text, answer):
    assert not contains_answer(text, answer)


def test_every_part_of_a_list_answer_is_needed():
    text = MatchText("She does painting and pottery on weekends.")

    assert text.contains("pottery, painting")
    assert not text.contains("pottery, camping")


def test_an_answer_of_stopwords_only_keeps_its_words():
    assert answer_parts("The") == [["the"]]


def test_cjk_characters_are_words_of_their_own():
    assert words_of("我喜欢瑜伽") == ["我", "喜", "欢", "瑜", "伽"]
    assert contains_answer("她最近开始练空中瑜伽了", "空中瑜伽")
    assert not contains_answer("她最近开始练瑜伽了", "空中瑜伽")


words = st.lists(
    st.text(alphabet="abcdefghijklmnop", min_size=1, max_size=8), min_size=1, max_size=6
)


@given(before=words, answer=words, after=words)
def test_an_answer_quoted_in_a_text_is_always_found(before, answer, after):
    phrase = " ".join(answer)

    assert contains_answer(" ".join([*before, phrase, *after]), phrase)


@given(text=st.text(max_size=200), answer=st.text(max_size=40))
def test_any_text_is_read_without_error_and_deterministically(text, answer):
    assert contains_answer(text, answer) == contains_answer(text, answer)
