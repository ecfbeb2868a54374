"""Near-duplicate folding (``domain.clause_fold``): idempotent, stable, lossless."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import clause_fold
from memory_summary.domain.argument_fold import fold_arguments
from memory_summary.domain.clause_fold import MAX_CANDIDATES, fold_clauses, values_of

TEMPLATES = [
    "Step {}, please keep within budget",
    "entry #{} rated well",
    "booked room {} near the station",
    "希望第{}步能尽快完成",
    "订单{}已经发货",
]
LISTS = [
    "trip Lisbon: can you help with {}?",
    "todo list: {}",
    "关于去成都旅行，我想了解{}",
]
MEMBERS = [
    "flights",
    "hotel near Alfama",
    "the tram 28 schedule",
    "kitchen tiles",
    "高铁车票",
    "宽窄巷子附近的酒店",
    "大熊猫基地",
]
OTHER = [
    "I like cats",
    "I don't like cats",
    "went to the beach",
    "deploy on Friday 10:30",
    "预算不超过500元",
    "",
    "a; b",
]

valued = st.builds(str.format, st.sampled_from(TEMPLATES), st.integers(0, 60).map(str))
listed = st.builds(str.format, st.sampled_from(LISTS), st.sampled_from(MEMBERS))
clauses = st.lists(
    st.one_of(valued, listed, st.sampled_from(OTHER), st.text(max_size=30)),
    max_size=30,
)
_VALUE = re.compile(r"\d+")


def _numbers(texts: list[str]) -> set[int]:
    found: set[int] = set()
    for text in texts:
        for slot in re.findall(r"[\d\u2013, ]*\d", text):
            for value in values_of(slot.strip(", ")):
                found.update(int(n) for n in _VALUE.findall(value))
    return found


@given(clauses, st.integers(20, 400))
def test_folding_is_idempotent(texts: list[str], max_chars: int) -> None:
    once = fold_clauses(texts, max_chars)
    assert fold_clauses(once, max_chars) == once


@given(clauses)
def test_no_distinct_value_or_member_is_lost(texts: list[str]) -> None:
    folded = fold_clauses(texts)
    assert _numbers([t for t in texts if t.strip()]) <= _numbers(folded)
    joined = "\n".join(folded)
    for text in texts:
        for member in MEMBERS:
            if member in text:
                assert member in joined


@given(clauses, clauses)
def test_refolding_a_fold_with_more_clauses_keeps_it_folded(
    first: list[str], second: list[str]
) -> None:
    """The next compression reads the previous fold back and never unfolds it."""
    once = fold_clauses(first)
    again = fold_clauses([*once, *second])
    assert len(again) <= len(once) + len([t for t in second if t.strip()])
    assert _numbers(once) <= _numbers(again)
    assert fold_clauses(again) == again


@given(st.lists(st.integers(0, 200), min_size=1, max_size=40), st.integers(1, 39))
def test_a_range_widens_across_compressions(numbers: list[int], cut: int) -> None:
    """English and Chinese: one clause per template, whatever the compressions."""
    for template in ("Step {}, please keep within budget", "希望第{}步能尽快完成"):
        texts = [template.format(n) for n in numbers]
        previous = fold_clauses(texts[:cut])
        folded = fold_clauses([*previous, *texts[cut:]])
        assert len(folded) == 1
        assert folded == fold_clauses(texts)
        assert _numbers(folded) == set(numbers)


@given(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=12), st.integers(1, 11))
def test_a_set_grows_across_compressions(members: list[str], cut: int) -> None:
    texts = [f"todo list: {m}" for m in members]
    folded = fold_clauses([*fold_clauses(texts[:cut]), *texts[cut:]])
    assert len(folded) == 1
    for member in members:
        assert member in folded[0]


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["todos", "query", "path"]),
            st.one_of(
                st.sampled_from(MEMBERS),
                st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=4),
            ),
            min_size=1,
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(1, 7),
)
def test_repeated_calls_fold_into_each_keys_distinct_values(
    calls: list[dict[str, object]], cut: int
) -> None:
    texts = [json.dumps(c, ensure_ascii=False) for c in calls]
    lines = fold_arguments(texts)
    assert lines is not None
    again = fold_arguments([*(fold_arguments(texts[:cut]) or []), *texts[cut:]])
    assert again == lines
    for call in calls:
        for key, value in call.items():
            for member in value if isinstance(value, list) else [value]:
                line = next(x for x in lines if x.startswith(f"{key}: "))
                assert member in line.split(": ", 1)[1].split(", ")
    assert len(lines) == len({k for c in calls for k in c})


@given(st.integers(50, 400))
def test_folding_tries_each_clause_against_a_bounded_number_of_others(n: int) -> None:
    """Clauses that share an opening but never fold: linear work, not quadratic."""
    texts = [
        f"I went to see {'x' * (i % 7 + 1)} {i} with {i + 1}, {i + 2}" for i in range(n)
    ]
    calls = 0
    merge = clause_fold._merged_middles

    def counted(a: str, b: str, max_chars: int) -> str | None:
        nonlocal calls
        calls += 1
        return merge(a, b, max_chars)

    clause_fold._merged_middles = counted  # type: ignore[assignment]
    try:
        folded = clause_fold.fold_clauses(texts)
    finally:
        clause_fold._merged_middles = merge  # type: ignore[assignment]
    assert len(folded) == n
    assert calls <= 2 * 3 * MAX_CANDIDATES * n  # two passes, three anchors per clause


@given(
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.lists(
        st.sampled_from(["words", "tram", "Alfama", "a", "schedule,"]), max_size=40
    ),
    st.integers(10, 120),
)
def test_a_cut_is_the_same_whatever_the_values(a, b, words, limit):
    tail = " ".join(words)
    cut_a = clause_fold.stable_cut(f"s9 says number {a}: {tail}", limit)
    cut_b = clause_fold.stable_cut(f"s9 says number {b}: {tail}", limit)

    assert clause_fold.clause_shape(cut_a) == clause_fold.clause_shape(cut_b)
    assert len(cut_a) < 2 * limit
