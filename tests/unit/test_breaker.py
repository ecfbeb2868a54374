from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import (
    Breaker,
    breaker_admit,
    breaker_failed,
    breaker_is_open,
    breaker_released,
    breaker_succeeded,
)
from memory_summary.domain.breaker import MAX_COOLDOWN_FACTOR, PROBE_LOST_S

LIMITS = {"max_failures": 3, "cooldown_s": 10.0}


def fail(breaker: Breaker, now: float) -> Breaker:
    return breaker_failed(breaker, now, **LIMITS)


def opened(now: float = 0.0) -> Breaker:
    breaker = Breaker()
    for _ in range(3):
        breaker = fail(breaker, now)
    return breaker


def test_a_closed_breaker_admits_every_call():
    breaker = Breaker()

    for now in (0.0, 1.0, 2.0):
        breaker, admitted = breaker_admit(breaker, now)

        assert admitted
    assert not breaker_is_open(breaker, 3.0)


def test_it_opens_after_max_failures_consecutive_failures():
    breaker = fail(fail(Breaker(), 0.0), 1.0)
    assert breaker.open_until is None

    breaker = fail(breaker, 2.0)

    assert breaker.open_until == 12.0
    assert breaker_is_open(breaker, 2.0)
    assert breaker_admit(breaker, 11.9) == (breaker, False)


def test_a_success_resets_the_consecutive_count():
    breaker = fail(fail(Breaker(), 0.0), 0.0)

    breaker = fail(breaker_succeeded(breaker), 0.0)

    assert breaker.failures == 1
    assert breaker.open_until is None


def test_after_the_cooldown_exactly_one_probe_is_admitted():
    breaker = opened()

    breaker, first = breaker_admit(breaker, 10.0)
    _, second = breaker_admit(breaker, 10.5)

    assert first
    assert not second
    assert breaker.probe_since == 10.0
    assert breaker_is_open(breaker, 11.0)


def test_a_successful_probe_closes_and_resets_the_breaker():
    breaker, _ = breaker_admit(opened(), 10.0)

    breaker = breaker_succeeded(breaker)

    assert breaker == Breaker()
    assert breaker_admit(breaker, 10.0)[1]


def test_each_failed_probe_doubles_the_cooldown_up_to_sixteen_times():
    breaker, now, cooldowns = opened(), 0.0, []
    for _ in range(7):
        assert breaker.open_until is not None
        now = breaker.open_until
        breaker, admitted = breaker_admit(breaker, now)
        assert admitted
        breaker = fail(breaker, now)
        assert breaker.open_until is not None
        cooldowns.append(breaker.open_until - now)

    assert cooldowns == [20.0, 40.0, 80.0, 160.0, 160.0, 160.0, 160.0]
    assert MAX_COOLDOWN_FACTOR * LIMITS["cooldown_s"] == 160.0


def test_a_failure_of_a_call_admitted_before_opening_does_not_extend_the_open_time():
    breaker = opened(0.0)

    straggler = fail(breaker, 5.0)

    assert straggler.open_until == breaker.open_until
    assert straggler.failures == 4


def test_a_released_probe_lets_the_next_call_probe():
    breaker, _ = breaker_admit(opened(), 10.0)

    breaker = breaker_released(breaker)

    assert breaker.failures == 3
    assert breaker_admit(breaker, 10.0)[1]


def test_releasing_a_closed_breakers_call_keeps_its_failures():
    breaker = fail(Breaker(), 0.0)

    assert breaker_released(breaker) == breaker


def test_a_probe_that_never_reports_is_deemed_lost():
    breaker, _ = breaker_admit(opened(), 10.0)

    _, early = breaker_admit(breaker, 10.0 + PROBE_LOST_S - 1)
    breaker, late = breaker_admit(breaker, 10.0 + PROBE_LOST_S)

    assert not early
    assert late
    assert breaker.probe_since == 10.0 + PROBE_LOST_S


OPS = st.lists(
    st.tuples(
        st.sampled_from(["admit", "fail", "succeed", "release"]),
        st.floats(0.0, 30.0),
    ),
    max_size=60,
)


@given(ops=OPS, max_failures=st.integers(1, 4), cooldown_s=st.floats(0.5, 20.0))
def test_nothing_is_admitted_while_open_and_one_probe_at_a_time(
    ops, max_failures, cooldown_s
):
    breaker, now, in_flight = Breaker(), 0.0, 0
    for op, step in ops:
        now += step
        if op == "admit":
            before = breaker
            breaker, admitted = breaker_admit(breaker, now)

            if before.open_until is not None and now < before.open_until:
                assert not admitted  # open: nothing goes out
            if before.probe_since is not None and admitted:
                assert now - before.probe_since >= PROBE_LOST_S  # one probe at a time
            assert admitted is not breaker_is_open(before, now)
            in_flight += admitted
        elif in_flight:
            in_flight -= 1
            if op == "fail":
                breaker = breaker_failed(
                    breaker, now, max_failures=max_failures, cooldown_s=cooldown_s
                )
            elif op == "succeed":
                breaker = breaker_succeeded(breaker)
            else:
                breaker = breaker_released(breaker)
        if breaker.open_until is not None:
            assert breaker.probe_since is None
            assert breaker.open_until - now <= cooldown_s * MAX_COOLDOWN_FACTOR
