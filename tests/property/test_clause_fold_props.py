"""Near-duplicate folding (``domain.clause_fold``): idempotent, stable, lossless."""

from __future__ import annotations

import json
import re

import pytest
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


CJK_WORDS = [
    "我",
    "我们",
    "在",
    "准备",
    "搬家",
    "公司",
    "年会",
    "活动",
    "报价",
    "家",
    "吧",
]
EN_WORDS = ["I", "we", "moved", "house", "the", "park", "on", "partition", "by", "day"]


def _pieces(first: str, second: str, clause: str) -> list[tuple[int, int]]:
    """Return the lengths of each opening and closing of both inputs such that
    ``clause`` is that opening and closing around the rest of each, joined by "、"."""
    found = []
    for lead in range(len(clause) + 1):
        for tail in range(len(clause) - lead + 1):
            rest = (first[lead : len(first) - tail], second[lead : len(second) - tail])
            if (
                first[:lead] == second[:lead] == clause[:lead]
                and first[len(first) - tail :] == second[len(second) - tail :]
                and clause.endswith(first[len(first) - tail :])
                and clause[lead : len(clause) - tail]
                in (f"{rest[0]}\u3001{rest[1]}", f"{rest[1]}\u3001{rest[0]}")
            ):
                found.append((lead, tail))
    return found


_CJK = st.lists(st.sampled_from(CJK_WORDS), max_size=3).map("".join)


@given(_CJK, _CJK, _CJK, _CJK)
def test_a_chinese_fold_is_an_opening_and_a_closing_around_long_pieces(
    lead: str, one: str, other: str, tail: str
) -> None:
    """Two Chinese clauses fold only into an opening and a closing of both around
    the rest of each, the opening never one character ("我|们"), nor the closing
    ("搬|家") unless a final particle ("吧"), no rest one character ("搬、回家"),
    sharing at least half as many characters as the longer rest."""
    first, second = lead + one + tail, lead + other + tail
    folded = fold_clauses([first, second])
    if len(folded) == 2 or first == second or not (first and second):
        return  # apart, the same clause, or a blank one dropped
    splits = _pieces(first, second, folded[0])
    assert splits, folded  # whole pieces of both inputs
    assert any(
        lead >= clause_fold.MIN_CJK_RUN  # never "我" then "们…"
        and (tail == 0 or tail >= clause_fold.MIN_CJK_RUN or first[-1:] == "吧")
        and min(len(first), len(second)) - lead - tail > 1  # never "搬、回家"
        and 2 * (lead + tail) >= max(len(first), len(second)) - lead - tail
        for lead, tail in splits
    ), folded


@given(
    st.lists(st.sampled_from(EN_WORDS), min_size=1, max_size=6),
    st.lists(st.sampled_from(EN_WORDS), min_size=1, max_size=6),
)
def test_an_english_fold_keeps_whole_words(a: list[str], b: list[str]) -> None:
    first, second = " ".join(a), " ".join(b)
    folded = fold_clauses([first, second])
    if len(folded) == 2:
        return
    for piece in folded[0].split(", "):
        assert all(word in EN_WORDS for word in piece.split())


def test_clauses_sharing_a_character_and_a_closing_stay_apart() -> None:
    """The demo's "我在准备搬家" and "我们11月8日搬家" share only "我" and "搬家"."""
    for pair in (
        ["我在准备准备搬家", "我们11月8日搬家"],
        ["我在准备搬家", "我们11月8日搬家"],
        ["我在准备搬家", "我们准备搬家"],
    ):
        assert fold_clauses(pair) == pair
    listed = fold_clauses(["这周要把搬家公司报价定下来", "这周要把网络宽带迁移定下来"])
    assert listed == ["这周要把搬家公司报价、网络宽带迁移定下来"]
    assert fold_clauses([*listed, "这周要把搬家公司报价定下来"]) == listed
    assert fold_clauses(["接下来说说搬家公司报价吧", "接下来说说网络宽带迁移吧"]) == [
        "接下来说说搬家公司报价、网络宽带迁移吧"
    ]


def test_a_chinese_closing_keeps_whole_words() -> None:
    """The closing side keeps whole words as the opening does: a one-character
    closing goes to the members, a one-character member stays apart."""
    assert fold_clauses(["我们准备搬家", "我们准备回家"]) == ["我们准备搬家、回家"]
    assert fold_clauses(["会议室在三楼", "会议室在五楼"]) == ["会议室在三楼、五楼"]
    for pair in (
        ["请看一下一个例子", "请看一下这个例子"],
        ["客户要求周一交付报告", "客户要求周五交付报告"],
        ["我们在讨论机器学习模型", "我们在讨论机器人模型"],
    ):
        assert fold_clauses(pair) == pair
    listed = fold_clauses(["我们需要买牛奶", "我们需要买面包", "我们需要买鸡蛋"])
    assert listed == ["我们需要买牛奶、面包、鸡蛋"]
    assert fold_clauses(["我还在考虑搬家公司报价", "我还在考虑网络宽带迁移"]) == [
        "我还在考虑搬家公司报价、网络宽带迁移"
    ]


def test_a_long_run_of_letters_and_digits_is_words_not_one_value() -> None:
    """A value is at most ``MAX_VALUE_CHARS`` characters, so each place of a text is
    tried a bounded number of ways ("a1a1…a1_" backtracked quadratically: 17 s for
    8000 pairs); the text is kept whole and short values read as before."""
    for text in ("token " + "a1" * 100 + " is the key", "a1" * 8000 + "_"):
        tokens = clause_fold._tokens(text)
        assert "".join(token for _, token in tokens) == text
        assert all(
            len(token) <= clause_fold.MAX_VALUE_CHARS
            for kind, token in tokens
            if kind == "slot"
        )
    long = "id_" + "a1b2" * 1000 + "_ done"
    assert len(clause_fold.stable_cut(long, 160)) < 320
    assert len(fold_clauses([long, long + "x"])) == 2
    for value in ("ORD-9", "v1.2.3", "10:03", "1\u20133, 7", "€12.50", "x" * 60 + "1"):
        assert clause_fold._tokens(f"at {value} ok")[2] == ("slot", value)


@given(st.text(alphabet="a1_-.#:%$ ,\u2013", max_size=300))
def test_tokens_keep_the_text_and_values_stay_short(text: str) -> None:
    tokens = clause_fold._tokens(text)
    assert "".join(token for _, token in tokens) == text
    for kind, token in tokens:
        if kind == "slot":
            assert all(
                len(value) <= clause_fold.MAX_VALUE_CHARS
                for value in re.split(f", |{clause_fold.DASH}", token)
            )


@pytest.mark.parametrize(
    "texts",
    [
        [  # a search hit's "site, N days ago": the comma is the text's own
            "forum from site25.example, 12 days ago",
            "forum from site27.example, 12 days ago",
        ],
        ["seat 12 at gate B7", "seat B9 at gate B7"],  # a number and an id
        ["score 3, 1 today", "score 2, 1 today"],  # no fold writes "3, 1"
        ["paid 12, 40 left", "paid 15, 30 left"],  # two values apart: records
        ["met Anna on May 3, 2023", "met Anna on May 9, 2024"],
    ],
)
def test_a_comma_of_the_texts_own_is_never_folded(texts: list[str]) -> None:
    assert fold_clauses(texts) == texts


def test_a_folded_list_still_widens_by_one_value() -> None:
    assert fold_clauses(
        ["order ORD-1, ORD-2 shipped", "order ORD-1, ORD-3 shipped"]
    ) == ["order ORD-1, ORD-2, ORD-3 shipped"]
    assert fold_clauses(["met Anna on May 3, 2023", "met Anna on May 4, 2023"]) == [
        "met Anna on May 3\u20134, 2023"
    ]
