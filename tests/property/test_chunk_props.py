from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import fold_chunks, plan_chunks
from memory_summary.domain.window import group_starts, safe_cuts
from memory_summary.testing.strategies import histories
from tests.conftest import count_chars


@given(
    costs=st.lists(st.integers(0, 500), max_size=200),
    max_count=st.integers(1, 50),
    limit=st.integers(1, 1000),
)
def test_chunks_keep_order_lose_nothing_and_hold_the_limits(costs, max_count, limit):
    chunks = plan_chunks(costs, max_count, limit)

    covered = [i for c in chunks for i in range(c.start, c.stop)]
    assert covered == list(range(len(costs)))
    for chunk in chunks:
        assert 0 < chunk.stop - chunk.start <= max_count
        total = sum(costs[chunk.start : chunk.stop])
        if chunk.oversized:
            assert chunk.stop - chunk.start == 1
            assert total > limit
        else:
            assert total <= limit


@given(
    data=st.data(),
    costs=st.lists(st.integers(0, 500), max_size=120),
    max_count=st.integers(1, 30),
    limit=st.integers(1, 1000),
)
def test_chunks_start_only_where_a_cut_is_allowed(data, costs, max_count, limit):
    tail = st.lists(st.booleans(), min_size=max(len(costs) - 1, 0))
    cuttable = [True, *data.draw(tail)][: len(costs)]
    chunks = plan_chunks(costs, max_count, limit, cuttable)

    covered = [i for c in chunks for i in range(c.start, c.stop)]
    assert covered == list(range(len(costs)))
    for chunk in chunks:
        assert cuttable[chunk.start]
        runs = [i for i in range(chunk.start + 1, chunk.stop) if cuttable[i]]
        total = sum(costs[chunk.start : chunk.stop])
        if runs:  # several runs share a chunk only within both limits
            assert chunk.stop - chunk.start <= max_count
            assert total <= limit
        assert chunk.oversized == (total > limit)


@given(
    history=histories(max_size=80),
    limit=st.integers(30, 2000),
    max_count=st.integers(1, 40),
)
def test_fold_chunks_cover_the_page_and_fit_the_input_limit(history, limit, max_count):
    chunks = fold_chunks(
        history,
        lookup=history,
        locale="en",
        cut_chars=200,
        count_tokens=count_chars,
        limit_tokens=limit,
        max_count=max_count,
    )

    assert [m for c in chunks for m in c.messages] == history
    ids = [c.through_id for c in chunks]
    assert ids == sorted(ids)
    starts = group_starts(history)
    allowed = safe_cuts(history)
    at = 0
    for chunk in chunks:
        assert allowed[at]  # no chunk starts inside a tool-call group
        end = at + len(chunk.messages)
        assert all(starts[i] >= end for i in range(end, len(history)))  # nor ends one
        if any(allowed[at + 1 : at + len(chunk.messages)]):
            # several groups share a chunk only within the count
            assert len(chunk.messages) <= max_count
        if len(chunk.transcript) <= limit:  # each line keeps at least one token
            assert sum(map(count_chars, chunk.transcript)) <= limit
        at += len(chunk.messages)
