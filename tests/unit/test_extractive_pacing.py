"""A fold on a host's thread hands the GIL over while it works (``offline.pacing``)."""

from __future__ import annotations

import sys
import threading
import types
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_summary.adapters import ExtractiveSummarizer
from memory_summary.adapters.summarizers.offline import pacing, worker
from memory_summary.domain import ConfigError, Message, summary_request

WAIT_S = 60.0  # a bound on each wait, so a broken test fails instead of hanging
EVERY_POINT = 1e-12  # hand over at every pace point: the test needs no clock

PREVIOUS = (
    "Facts:\n"
    "- user: budget is 500 EUR; the flight leaves from Oslo\n"
    "[8 May 2023] user: went camping with the kids | assistant: booked hotel H-12\n"
    "Decisions:\n"
    "- user: chose the window seat"
)


def _request(turns: int = 40) -> list[Message]:
    lines = []
    for n in range(turns):
        lines.append(f"User: step {n}: the order ORD-{n} ships to Bergen on day {n}.")
        lines.append(f"Assistant: noted, ORD-{n} is tracked in /srv/orders/{n}.json.")
    return summary_request(
        lines, previous_summary=PREVIOUS, todo=None, system="s", locale="en"
    )


def _sleeps(
    monkeypatch: pytest.MonkeyPatch, on_sleep: types.FunctionType | None = None
) -> list[str]:
    """Record who calls ``time.sleep`` in ``pacing``: the function that paced."""
    callers: list[str] = []
    real = pacing.time.sleep

    def sleep(seconds: float) -> None:
        callers.append(sys._getframe(2).f_code.co_name)  # pace() -> its caller
        if on_sleep is not None:
            on_sleep()
        real(seconds)

    clock = types.SimpleNamespace(perf_counter=pacing.time.perf_counter, sleep=sleep)
    monkeypatch.setattr(pacing, "time", clock)
    monkeypatch.setattr(pacing, "CHECK_EVERY", 1)  # every point reads the clock
    return callers


def test_a_fold_lets_a_waiting_thread_run_before_it_ends(monkeypatch):
    handing = threading.Event()  # the fold is at a hand-over point
    ran = threading.Event()  # the other thread ran there
    order: list[str] = []

    def on_sleep() -> None:
        if not handing.is_set():
            handing.set()
            assert ran.wait(WAIT_S), "the other thread never ran"

    callers = _sleeps(monkeypatch, on_sleep)

    def other() -> None:
        if handing.wait(WAIT_S):
            order.append("other thread")
            ran.set()

    summarizer = ExtractiveSummarizer(hand_over_s=EVERY_POINT)
    waiter = threading.Thread(target=other)
    waiter.start()
    result: list[str] = []
    folder = threading.Thread(
        target=lambda: result.append(summarizer.complete(_request(), max_tokens=400))
    )
    folder.start()
    folder.join(WAIT_S)
    waiter.join(WAIT_S)
    order.append("fold done" if result else "fold failed")
    assert order == ["other thread", "fold done"]
    assert len(callers) > 1  # and it went on handing over after that one
    assert "ORD-" in result[0]


def test_every_stage_of_a_fold_hands_over(monkeypatch):
    callers = _sleeps(monkeypatch)
    ExtractiveSummarizer(hand_over_s=EVERY_POINT).complete(_request(), max_tokens=300)
    stages = {  # each stage, by a function that paces in it
        "previous_facts",
        "new_facts",
        "_containment",
        "merged_facts",
        "folded_facts",
        "_effective_scores",
        "_section_lines",
        "fitted_text",
    }
    assert stages <= set(callers)


def test_a_fold_with_no_hand_over_never_sleeps(monkeypatch):
    callers = _sleeps(monkeypatch)
    text = ExtractiveSummarizer(hand_over_s=None).complete(_request(), max_tokens=300)
    assert callers == []
    assert "ORD-" in text


@pytest.mark.parametrize(
    "bad",
    [
        0,
        -1.0,
        -0.0,
        float("nan"),
        float("inf"),
        True,
        False,
        "0.001",
        10**400,
        Decimal("0.001"),
    ],
)
def test_hand_over_s_must_be_finite_seconds_above_zero(bad):
    with pytest.raises(ConfigError, match="hand_over_s") as raised:
        ExtractiveSummarizer(hand_over_s=bad)
    assert raised.value.field == "hand_over_s"


@pytest.mark.parametrize("good", [1, 0.0005, 10**6])
def test_hand_over_s_takes_an_int_or_a_float_and_folds(good):
    summarizer = ExtractiveSummarizer(hand_over_s=good)
    assert "ORD-" in summarizer.complete(_request(), max_tokens=300)


def test_the_worker_process_builds_a_summarizer_that_never_hands_over(monkeypatch):
    built = []
    real = ExtractiveSummarizer.__init__

    def spy(self, *args, **kwargs):
        built.append(kwargs.get("hand_over_s", "default"))
        real(self, *args, **kwargs)

    monkeypatch.setattr(ExtractiveSummarizer, "__init__", spy)
    worker.serving_summarizer(len, 4096)
    assert built == [None]


@settings(max_examples=25, deadline=None)
@given(
    turns=st.integers(min_value=1, max_value=30),
    budget=st.integers(min_value=1, max_value=600),
)
def test_handing_over_changes_no_summary(turns, budget):
    request = _request(turns)
    paced = ExtractiveSummarizer(hand_over_s=EVERY_POINT).complete(
        request, max_tokens=budget
    )
    alone = ExtractiveSummarizer(hand_over_s=None).complete(request, max_tokens=budget)
    assert paced == alone
