from __future__ import annotations

import logging

from memory_summary import StoreError
from memory_summary.actors.count_failures import CountFailures

LOGGER = "memory_summary.actors.count_failures"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def warnings_of(caplog):
    return [r for r in caplog.records if r.name == LOGGER]


def test_failed_counts_are_all_counted_and_warned_about_once_per_interval(caplog):
    clock = Clock()
    failures = CountFailures(interval_s=60.0, clock=clock)
    caplog.set_level(logging.WARNING, logger=LOGGER)

    for second in range(5):
        clock.now = 100.0 + second
        failures.note(f"s{second}", StoreError("database is locked"))
    first = warnings_of(caplog)
    clock.now = 160.0
    failures.note("late", StoreError("database is locked"))
    second = warnings_of(caplog)

    assert failures.total == 6
    assert len(first) == 1
    assert first[0].levelno == logging.WARNING
    assert first[0].count_failures == 1
    assert "s0" in first[0].getMessage()
    assert len(second) == 2
    assert second[1].count_failures == 5  # four held back, and this one
    assert "late" in second[1].getMessage()


def test_a_new_failure_counts_from_nothing():
    assert CountFailures().total == 0
