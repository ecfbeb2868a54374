"""Coalescing triggers never loses a right to run: above all, the count rule's."""

from __future__ import annotations

from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import (
    Busy,
    Idle,
    Reason,
    SummaryConfig,
    guard_may_hold,
    is_forced,
    on_finished,
    on_trigger,
    should_compress,
)

REASONS: tuple[Reason, ...] = get_args(Reason)


@st.composite
def configs(draw: st.DrawFn) -> SummaryConfig:
    keep_recent = draw(st.integers(0, 40))
    threshold = draw(st.integers(max(keep_recent, 1) + 1, keep_recent + 60))
    return SummaryConfig(threshold=threshold, keep_recent=keep_recent)


def runs(reason: Reason, active: int, config: SummaryConfig, *, guard: bool) -> bool:
    """Tell whether a run for ``reason`` compresses, as the compression job decides.

    ``guard``: a loop guard is set and would hold (its token test says so).
    """
    # A forced reason ignores the threshold: it folds what lies beyond the keep.
    due = (
        active > config.effective_keep_recent
        if is_forced(reason)
        else should_compress(active, config)
    )
    if not due:
        return False
    return not (guard and guard_may_hold(reason, active, config))


@given(
    running=st.sampled_from(REASONS),
    triggers=st.lists(st.sampled_from(REASONS), min_size=1, max_size=8),
    active=st.integers(0, 200),
    config=configs(),
    guard=st.booleans(),
)
def test_a_coalesced_follow_up_keeps_every_right_of_what_it_coalesced(
    running, triggers, active, config, guard
):
    state, _ = on_trigger(Idle(), running)
    for reason in triggers:
        state, started = on_trigger(state, reason)
        assert not started  # one compression at a time: they coalesce

    state, follow_up = on_finished(state)

    assert isinstance(state, Busy)
    assert follow_up is not None
    owed = [r for r in triggers if runs(r, active, config, guard=guard)]
    if owed:
        assert runs(follow_up, active, config, guard=guard), (follow_up, owed)


@given(
    triggers=st.lists(st.sampled_from(REASONS), min_size=1, max_size=8),
    config=configs(),
    extra=st.integers(0, 100),
)
def test_no_coalescing_loses_the_count_rule(triggers, config, extra):
    active = config.threshold + extra  # the count owes a compression
    state, _ = on_trigger(Idle(), "manual")
    for reason in ["turn", *triggers]:
        state, _ = on_trigger(state, reason)

    _, follow_up = on_finished(state)

    assert follow_up is not None
    assert runs(follow_up, active, config, guard=True)
