"""A summarizer's start-up (the offline fold's worker process) is no call's time."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence

import pytest

from memory_summary import Message, SummaryConfig
from memory_summary.adapters import ExtractiveSummarizer, InMemoryStore
from tests.integration.conversation import fill

START_S = 0.3  # how long the fake's first call spends "starting"


class StartingSummarizer:
    """Spends ``START_S`` starting on its first call, and says so in ``startup_s``."""

    def __init__(self) -> None:
        self.startup_s = 0.0
        self.started = threading.Event()

    def context_length(self, model: str | None = None) -> int | None:
        return None

    def complete(self, messages: Sequence[Message], **_: object) -> str:
        if not self.started.is_set():
            began = time.monotonic()
            self.started.wait(START_S)  # the start-up: nothing sets it meanwhile
            self.started.set()
            self.startup_s += time.monotonic() - began
        return "Facts:\n- user: said things"


def _summarizer_s(make_engine, llm, config: SummaryConfig, calls: int) -> float:
    store = InMemoryStore()
    engine = make_engine(store, llm, config=config)
    for start in range(0, 10 * calls, 10):
        fill(store, "s1", 10, start)
        assert engine.compress("s1").result(timeout=60).ok
    record = engine.summary("s1")
    assert record is not None
    return record.usage.summarizer_s


def test_a_summarizers_start_up_is_left_out_of_the_call_time(make_engine):
    llm = StartingSummarizer()

    seconds = _summarizer_s(make_engine, llm, SummaryConfig(keep_recent=2), 3)

    # the calls took START_S and more; without their start-up, a fraction of it
    assert llm.startup_s >= START_S
    assert 0 <= seconds < llm.startup_s


REQUEST = [Message("user", "<conversation>\nUser: I live in Oslo.\n</conversation>")]


def _child_start_s() -> float:
    """How long starting a fold child takes here, now (seconds)."""
    probe = ExtractiveSummarizer(worker="process")
    try:
        probe.complete(REQUEST, max_tokens=100)
        return probe.startup_s  # this thread started it
    finally:
        probe.close()


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX processes")
def test_the_fold_workers_start_is_left_out_of_the_summarizer_time(make_engine):
    llm = ExtractiveSummarizer(worker="process")
    try:
        seconds = _summarizer_s(make_engine, llm, SummaryConfig(keep_recent=2), 3)
    finally:
        llm.close()

    # a child imports the library and loads its counter; three folds are a fraction
    assert seconds < _child_start_s()


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX processes")
def test_a_start_is_charged_to_the_thread_that_ran_it_alone():
    llm = ExtractiveSummarizer(worker="process")
    charged: dict[str, float] = {}

    def fold(name: str) -> None:
        before = llm.startup_s
        llm.complete(REQUEST, max_tokens=100)
        charged[name] = llm.startup_s - before

    try:
        starter = threading.Thread(target=fold, args=("starter",))
        starter.start()
        starter.join(60)
        fold("later")  # this thread: the child runs, nothing to start
    finally:
        llm.close()

    assert charged["starter"] > 0
    assert charged["later"] == 0
    assert llm.startup_s == 0  # this thread never started one


CALL_S = 0.05  # how long each call of ``OddStartup`` waits, at least


class OddStartup:
    """A host's summarizer whose ``startup_s`` means something else."""

    def __init__(self, value: object) -> None:
        self.startup_s = value

    def context_length(self, model: str | None = None) -> int | None:
        return None

    def complete(self, messages: Sequence[Message], **_: object) -> str:
        threading.Event().wait(CALL_S)
        return "Facts:\n- user: said things"


@pytest.mark.parametrize("value", [None, "soon", float("nan"), -1.0, True, 10**400])
def test_a_startup_s_that_is_no_seconds_never_breaks_a_call(make_engine, value):
    seconds = _summarizer_s(
        make_engine, OddStartup(value), SummaryConfig(keep_recent=2), 2
    )

    assert seconds >= 2 * CALL_S  # nothing was left out: the value is read as 0
