"""Truncation: fits the budget, cuts only at safe boundaries, keeps what fits."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from memory_summary.adapters import TiktokenCounter
from memory_summary.domain import injection_text, truncate_to_tokens
from memory_summary.domain.text import safe_boundary
from memory_summary.testing.strategies import clean_texts

COUNTER = TiktokenCounter("o200k_base")
SUFFIX = " [cut]"


@given(text=clean_texts(3000), budget=st.integers(1, 400))
def test_truncation_fits_the_budget_and_is_a_prefix_plus_suffix(text, budget):
    out = truncate_to_tokens(text, budget, COUNTER.count, SUFFIX)

    assert COUNTER.count(out) <= budget
    if out != text and out:
        assert out.endswith(SUFFIX)
        prefix = out[: -len(SUFFIX)]
        assert text.startswith(prefix)
        assert safe_boundary(text, len(prefix)) == len(prefix)
    out.encode("utf-8")  # always valid text


@given(
    text=st.lists(
        st.sampled_from(["👩‍👩‍👧", "漢字", "e\u0301", "🇳🇴", "word ", "\u0915\u094d"]),
        max_size=300,
    ).map("".join),
    budget=st.integers(1, 120),
)
def test_truncation_never_splits_emoji_cjk_or_combining_marks(text, budget):
    out = truncate_to_tokens(text, budget, COUNTER.count, SUFFIX)

    prefix = out[: -len(SUFFIX)] if out.endswith(SUFFIX) and out != text else out
    assert safe_boundary(text, len(prefix)) == len(prefix)
    assert COUNTER.count(out) <= budget


@given(text=clean_texts(3000), slack=st.integers(0, 200))
def test_truncation_keeps_text_that_already_fits(text, slack):
    # The budget is built to fit, so every example checks the property; only an
    # empty text with no slack (a budget of 0, out of range) is left out.
    budget = COUNTER.count(text) + slack
    assume(budget >= 1)

    out = truncate_to_tokens(text, budget, COUNTER.count, SUFFIX)

    assert out == text


@given(
    summary=clean_texts(5000),
    budget=st.integers(512, 900),
    locale=st.sampled_from(["en", "zh"]),
)
def test_injected_text_is_always_within_budget(summary, budget, locale):
    text = injection_text(
        summary, locale=locale, budget_tokens=budget, count_tokens=COUNTER.count
    )

    assert COUNTER.count(text) <= budget
