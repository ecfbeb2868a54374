"""``token_ceiling`` never counts fewer tokens than tiktoken, on any text.

Unlike ``estimate_tokens`` (chat text only), a ceiling may decide: a summary whose
ceiling fits its budget is injected without running the tokenizer, so it must hold
for character soup, long runs counted in slices and lone surrogates too.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters import TiktokenCounter
from memory_summary.adapters.tokens import (
    ENCODINGS,
    LONG_RUN_CHARS,
    CountMemo,
    counter_factory,
    token_ceiling,
    with_margin,
)
from memory_summary.domain import injection_text

_RUNS = st.tuples(
    st.text(min_size=1, max_size=3),
    st.integers(LONG_RUN_CHARS // 2, 3 * LONG_RUN_CHARS),
).map(lambda pair: (pair[0] * pair[1])[: pair[1]])  # long runs: counted in slices
_TEXTS = (
    st.text()
    | st.text(alphabet=st.characters(categories=["Cs", "So", "Lo", "Mn"]))
    | _RUNS
    | st.lists(_RUNS | st.text(max_size=30), max_size=4).map(" ".join)
)


@pytest.mark.parametrize("encoding", ENCODINGS)
@given(text=_TEXTS)
def test_the_ceiling_is_never_below_the_count(encoding: str, text: str) -> None:
    assert token_ceiling(text) >= TiktokenCounter(encoding).count(text)


@given(text=_TEXTS, margin=st.floats(0.01, 1.0))
def test_a_margin_scales_the_ceiling_with_the_count(text: str, margin: float) -> None:
    count = with_margin(CountMemo(len, ceiling=lambda t: len(t) + 1), margin)

    assert count.ceiling(text) >= count(text)  # type: ignore[attr-defined]


def test_the_engine_counters_carry_their_ceiling() -> None:
    counters = counter_factory(margin=0.2)

    assert counters("gpt-4o").ceiling is token_ceiling  # type: ignore[attr-defined]
    assert counters("llama-3.1-8b").ceiling("x" * 10) == 12  # type: ignore[attr-defined]


@given(
    summary=_TEXTS,
    budget=st.integers(1, 4_000),
    locale=st.sampled_from(["en", "zh"]),
    hint=st.booleans(),
)
def test_the_injected_text_is_the_same_with_and_without_the_ceiling(
    summary: str, budget: int, locale, hint: bool
) -> None:
    count = TiktokenCounter().count

    def injected(**ceiling):
        return injection_text(
            summary,
            locale=locale,
            budget_tokens=budget,
            count_tokens=count,
            recall_hint=hint,
            **ceiling,
        )

    assert injected(ceiling=token_ceiling) == injected()


def test_a_summary_whose_ceiling_fits_is_injected_without_the_tokenizer() -> None:
    def no_tokenizer(text: str) -> int:
        raise AssertionError("the tokenizer ran")

    text = injection_text(
        "Ada ordered ORD-2041.",
        locale="en",
        budget_tokens=512,
        count_tokens=no_tokenizer,
        ceiling=token_ceiling,
    )

    assert text.endswith("\nAda ordered ORD-2041.")
    with pytest.raises(AssertionError, match="the tokenizer ran"):
        injection_text(
            "x" * 600,
            locale="en",
            budget_tokens=512,
            count_tokens=no_tokenizer,
            ceiling=token_ceiling,
        )
