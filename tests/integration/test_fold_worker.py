"""The offline fold in a child process: same summaries, real processes, every fault.

Each test here starts real ``python`` children through ``FoldWorker``; the host side
of a fork and of a dying parent runs in a script of its own, so no test forks the
multi-threaded pytest process.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_summary import ConfigError, Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import ExtractiveSummarizer, InMemoryStore
from memory_summary.adapters.summarizers.offline import worker as worker_module
from memory_summary.adapters.tokens import ModelCounter
from memory_summary.domain import (
    EngineClosed,
    SummarizerError,
    SummarizerTimeout,
    TokenizerError,
)

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="POSIX processes, signals and /proc"
)

REQUEST = (
    "<previous_summary>\nFacts:\n- user: budget is 500 EUR\n</previous_summary>\n"
    "<conversation>\n{lines}\n</conversation>"
)


def request_of(lines: list[str]) -> list[Message]:
    text = REQUEST.format(lines="\n".join(lines))
    return [Message("system", "Summarize."), Message("user", text)]


LINES = [
    "User: I live in Oslo and my booking code is K-7.",
    "Assistant: Noted: Oslo, code K-7.",
    "User: 我住在北京，预算是八百欧元。",
    "User: Step 3, please keep within budget.",
    "User: Step 4, please keep within budget.",
]


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[ExtractiveSummarizer, ExtractiveSummarizer]]:
    in_process = ExtractiveSummarizer()
    in_worker = ExtractiveSummarizer(worker="process")
    yield in_process, in_worker
    in_worker.close()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def ended_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_a_fold_in_the_worker_is_the_fold_in_process(pair):
    in_process, in_worker = pair
    for budget in (40, 120, 2000):
        expected = in_process.complete(request_of(LINES), max_tokens=budget)
        assert in_worker.complete(request_of(LINES), max_tokens=budget) == expected
    assert in_worker.worker_pid is not None
    assert in_worker.worker_pid != os.getpid()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(
        st.builds(
            "{}: {}".format,
            st.sampled_from(["User", "Assistant"]),
            st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1),
        ),
        max_size=12,
    ),
    budget=st.integers(1, 400),
)
def test_any_request_folds_the_same_in_the_worker(pair, lines, budget):
    in_process, in_worker = pair
    expected = in_process.complete(request_of(lines), max_tokens=budget)
    assert in_worker.complete(request_of(lines), max_tokens=budget) == expected


def test_a_killed_worker_is_replaced_at_the_next_fold(pair):
    in_process, in_worker = pair
    in_worker.complete(request_of(LINES), max_tokens=100)
    first = in_worker.worker_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert ended_within(first, 10)

    got = in_worker.complete(request_of(LINES), max_tokens=100)

    assert got == in_process.complete(request_of(LINES), max_tokens=100)
    assert in_worker.worker_pid not in (None, first)


def test_close_ends_the_worker_for_good_and_later_folds_are_refused():
    summarizer = ExtractiveSummarizer(worker="process")
    assert summarizer.worker_pid is None  # started at the first fold, not before
    summarizer.complete(request_of(LINES), max_tokens=100)
    pid = summarizer.worker_pid
    assert pid is not None

    summarizer.close()
    summarizer.close()  # idempotent

    assert summarizer.worker_pid is None
    assert ended_within(pid, 10)
    with pytest.raises(SummarizerError, match="closed"):
        summarizer.complete(request_of(LINES), max_tokens=100)
    assert summarizer.worker_pid is None  # no child after close()


def test_close_during_a_fold_kills_the_child_and_the_fold_is_refused():
    """The fold waits on a stopped child; close() never waits for it, and the fold
    is not redone in-process: whoever closed wants no more work."""
    summarizer = ExtractiveSummarizer(worker="process")
    summarizer.complete(request_of(LINES), max_tokens=100)
    pid = summarizer.worker_pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # the next fold waits for an answer that never comes
    failed: list[BaseException] = []

    def fold() -> None:
        try:
            summarizer.complete(request_of(LINES), max_tokens=100)
        except BaseException as exc:  # noqa: BLE001 - what the fold raised, kept
            failed.append(exc)

    folding = threading.Thread(target=fold)
    folding.start()

    summarizer.close()
    folding.join(timeout=60)

    assert not folding.is_alive()
    assert [type(exc) for exc in failed] == [SummarizerError]  # no work after close
    assert ended_within(pid, 10)
    assert summarizer.worker_pid is None


def test_a_child_that_dies_mid_fold_is_replaced_and_asked_again(pair, monkeypatch):
    in_process, in_worker = pair
    in_worker.complete(request_of(LINES), max_tokens=100)
    first = in_worker.worker_pid
    real_send = worker_module._send
    killed = []

    def dying(stream, value, deadline):
        if not killed and isinstance(value, tuple):  # the fold's request
            killed.append(first)
            os.kill(first, signal.SIGKILL)
            assert ended_within(first, 10)
        real_send(stream, value, deadline)

    monkeypatch.setattr(worker_module, "_send", dying)
    got = in_worker.complete(request_of(LINES), max_tokens=100)

    assert killed == [first]
    assert got == in_process.complete(request_of(LINES), max_tokens=100)
    assert in_worker.worker_pid not in (None, first)


def test_a_fold_two_children_die_on_is_refused_never_run_in_the_host(
    monkeypatch, caplog
):
    """What ended two children (the OOM killer, say) could end the host: no fold
    here; the next fold starts a child again."""
    summarizer = ExtractiveSummarizer(worker="process")
    summarizer.complete(request_of(LINES), max_tokens=100)
    real_send = worker_module._send
    in_host = []
    monkeypatch.setattr(
        summarizer, "_complete", lambda *a: in_host.append(a) or "folded here"
    )

    def always_dying(stream, value, deadline):
        if isinstance(value, tuple):  # every fold's request: its child dies first
            pid = summarizer.worker_pid
            os.kill(pid, signal.SIGKILL)
            assert ended_within(pid, 10)
        real_send(stream, value, deadline)

    monkeypatch.setattr(worker_module, "_send", always_dying)
    try:
        with pytest.raises(SummarizerError, match="died twice"):
            summarizer.complete(request_of(LINES), max_tokens=100)
        assert in_host == []
        monkeypatch.undo()  # the real fold again, in a new child
        got = summarizer.complete(request_of(LINES), max_tokens=100)
        assert summarizer.worker_pid is not None
        assert got == ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)
    finally:
        summarizer.close()


def test_a_replacement_child_gets_what_the_deadline_left_plus_its_own_start(
    monkeypatch,
):
    """The first child's time counts: a child that dies late leaves its replacement
    only the rest of the deadline (and its own start), not a new full one."""
    summarizer = ExtractiveSummarizer(worker="process")
    summarizer.complete(request_of(LINES), max_tokens=100)
    real_send, real_start = worker_module._send, worker_module.FoldWorker._start
    sends: list[tuple[float, float]] = []  # (when, deadline) of each request
    starts: list[float] = []  # how long each replacement took to start

    def dying_late(stream, value, deadline):
        if isinstance(value, tuple):
            sends.append((time.monotonic(), deadline))
            if len(sends) == 1:  # the first child works 1 s, then dies
                time.sleep(1.0)
                pid = summarizer.worker_pid
                os.kill(pid, signal.SIGKILL)
                assert ended_within(pid, 10)
        real_send(stream, value, deadline)

    def timed_start(self):
        began = time.monotonic()
        try:
            return real_start(self)
        finally:
            starts.append(time.monotonic() - began)

    monkeypatch.setattr(worker_module, "_send", dying_late)
    monkeypatch.setattr(worker_module.FoldWorker, "_start", timed_start)
    try:
        summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=30.0)
    finally:
        summarizer.close()
    assert len(sends) == 2
    assert len(starts) == 1
    (_, first), (second_at, second) = sends
    assert second == pytest.approx(first + starts[0], abs=0.05)
    assert second - second_at <= 30.0 - 1.0  # the first child's second is gone


def test_any_message_folds_the_same_in_the_worker(pair):
    """The child reads a message's role and text only, as the fold does."""
    in_process, in_worker = pair
    messages = [
        Message("system", "Summarize."),
        *request_of(LINES)[1:],
        Message("tool", "lookup: Oslo has 700k people.", tool_call_id="c1"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "lookup", "{}")]),
    ]

    assert in_worker.complete(messages, max_tokens=100) == in_process.complete(
        messages, max_tokens=100
    )


def test_an_error_in_the_childs_fold_is_raised_in_the_host():
    # The child builds the counter from its settings: an unknown encoding fails there.
    summarizer = ExtractiveSummarizer(
        ModelCounter(None, "no_such_base"), worker="process"
    )
    try:
        with pytest.raises(TokenizerError, match="no_such_base"):
            summarizer.complete(request_of(LINES), max_tokens=100)
        pid = summarizer.worker_pid
        assert pid is not None  # the child survives a fold's error
        with pytest.raises(TokenizerError):
            summarizer.complete(request_of(LINES), max_tokens=100)
        assert summarizer.worker_pid == pid
    finally:
        summarizer.close()


def test_a_worker_that_cannot_start_leaves_the_fold_in_process(monkeypatch, caplog):
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    summarizer = ExtractiveSummarizer(worker="process")
    expected = ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)

    with caplog.at_level(logging.WARNING):
        got = summarizer.complete(request_of(LINES), max_tokens=100)

    assert got == expected
    assert summarizer.worker_pid is None
    assert "folding in this process" in caplog.text


def test_a_child_that_exits_before_it_is_ready_leaves_the_fold_in_process(
    monkeypatch, tmp_path, caplog
):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(broken))
    summarizer = ExtractiveSummarizer(worker="process")

    with caplog.at_level(logging.WARNING):
        got = summarizer.complete(request_of(LINES), max_tokens=100)

    assert got == ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)
    assert "exit code 3" in caplog.text


def test_a_counter_that_does_not_pickle_is_refused_when_built():
    with pytest.raises(TypeError, match="does not pickle"):
        ExtractiveSummarizer(lambda text: len(text), worker="process")

    def in_main(text: str) -> int:
        return len(text)

    in_main.__module__ = "__main__"  # as a script's own function is
    with pytest.raises(TypeError, match="__main__"):
        ExtractiveSummarizer(in_main, worker="process")
    with pytest.raises(ValueError, match="worker='fork'"):
        ExtractiveSummarizer(worker="fork")  # type: ignore[arg-type]


def test_model_counter_pickles_without_its_tokenizer_and_counts_the_same():
    count = ModelCounter(None, margin=0.15)
    assert count("hello world, again") >= 1  # builds the tiktoken counter
    copy = pickle.loads(pickle.dumps(count))

    assert copy("hello world, again") == count("hello world, again")
    assert len(pickle.dumps(count)) < 200  # settings only, never the tokenizer
    assert "margin=0.15" in repr(copy)


def test_the_engine_folds_in_its_worker_and_ends_it_at_stop():
    histories = {}
    for fold in ("thread", "process"):
        store = InMemoryStore()
        engine = SummaryEngine(store, config=SummaryConfig(offline_fold=fold))
        with engine:
            for i in range(40):
                store.save_message("s1", Message("user", f"My code is K-{i}, in Oslo."))
            engine.turn_after("s1")
            assert engine.wait_idle(timeout=60)
            pid = engine.llm.worker_pid  # type: ignore[attr-defined]
            histories[fold] = [m.text for m in store.get_history("s1")]
        if fold == "process":
            assert pid is not None
            assert ended_within(pid, 10)
        else:
            assert pid is None

    assert histories["process"] == histories["thread"]
    assert (
        histories["process"][0].startswith("Facts:") or "K-" in histories["process"][0]
    )


def test_the_config_names_the_fold_and_refuses_others():
    assert SummaryConfig().offline_fold == "thread"
    assert SummaryConfig.from_mapping({"offlineFold": "process"}).offline_fold == (
        "process"
    )
    with pytest.raises(ConfigError, match="offline_fold='fork'"):
        SummaryConfig(offline_fold="fork")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="count_tokens_for"):
        SummaryEngine(
            InMemoryStore(),
            config=SummaryConfig(offline_fold="process"),
            count_tokens_for=lambda model: len,
        )


def test_a_given_summarizer_is_the_hosts_to_close():
    summarizer = ExtractiveSummarizer(worker="process")
    store = InMemoryStore()
    with SummaryEngine(store, llm=summarizer) as engine:
        for i in range(40):
            store.save_message("s1", Message("user", f"fact {i}."))
        engine.turn_after("s1")
        assert engine.wait_idle(timeout=60)
    pid = summarizer.worker_pid
    assert pid is not None  # the engine stopped; the host's summarizer still runs
    summarizer.close()
    assert ended_within(pid, 10)


HOST = textwrap.dedent(
    """
    import os, sys, warnings
    warnings.simplefilter("ignore")
    from memory_summary import Message
    from memory_summary.adapters import ExtractiveSummarizer

    text = "<conversation>\\nUser: I live in Oslo.\\n</conversation>"
    request = [Message("user", text)]
    summarizer = ExtractiveSummarizer(worker="process")
    summarizer.complete(request, max_tokens=50)
    print("worker", summarizer.worker_pid, flush=True)
    if sys.argv[1] == "fork":
        child = os.fork()
        if child == 0:
            got = summarizer.complete(request, max_tokens=50)
            same = got == "Facts:\\n- user: live in Oslo"
            print("forked", summarizer.worker_pid, same, flush=True)
            summarizer.close()
            os._exit(0)
        os.waitpid(child, 0)
        print("parent", summarizer.worker_pid, flush=True)
        summarizer.close()
    elif sys.argv[1] == "exit-stopped":  # a daemon thread folds on a stopped child
        import signal, threading
        os.kill(summarizer.worker_pid, signal.SIGSTOP)
        threading.Thread(
            target=summarizer.complete, args=(request,), kwargs={"max_tokens": 50},
            daemon=True,
        ).start()
        print("exiting", flush=True)
    else:
        sys.stdin.read()  # until the test kills this process
    """
)


def run_host(mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOST, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_forked_host_gets_a_worker_of_its_own_and_the_parent_keeps_its_own():
    host = run_host("fork")
    out, _ = host.communicate(timeout=120)
    assert host.returncode == 0, out
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    first = int(lines["worker"])
    forked_pid, same = lines["forked"].split()

    assert same == "True"
    assert int(forked_pid) != first  # never the parent's pipe
    assert int(lines["parent"]) == first  # the parent's worker is untouched


def test_the_worker_ends_when_its_host_dies():
    host = run_host("wait")
    assert host.stdout is not None
    line = host.stdout.readline().split()
    assert line[0] == "worker"
    pid = int(line[1])
    assert alive(pid)

    host.kill()
    host.wait(timeout=30)

    assert ended_within(pid, 30)  # its stdin closed with the host
    if host.stdin is not None:
        host.stdin.close()
    host.stdout.close()


def test_a_worker_fold_releases_the_gil_to_the_host():
    """While the child folds, a host thread runs: the engine thread only waits."""
    summarizer = ExtractiveSummarizer(worker="process")
    try:
        summarizer.complete(request_of(LINES), max_tokens=100)  # started, warmed
        big = request_of(
            [f"User: item {i} is the {i}th fact of Oslo." for i in range(3000)]
        )
        before = time.thread_time()
        summarizer.complete(big, max_tokens=400)
        host_cpu = time.thread_time() - before
        started = time.process_time()
        ExtractiveSummarizer().complete(big, max_tokens=400)
        fold_cpu = time.process_time() - started
    finally:
        summarizer.close()
    # The waiting thread spends a small part of the fold's own CPU (pickling only).
    assert host_cpu < fold_cpu / 2, (host_cpu, fold_cpu)


def test_an_interrupted_fold_never_leaves_its_reply_for_the_next(monkeypatch, pair):
    """A BaseException between the request and its reply drops that child."""
    in_process, in_worker = pair
    in_worker.complete(request_of(LINES), max_tokens=100)
    first = in_worker.worker_pid
    real_receive = worker_module._receive
    calls = []

    def interrupted(stream, deadline):
        if not calls:
            calls.append(stream)
            raise KeyboardInterrupt
        return real_receive(stream, deadline)

    monkeypatch.setattr(worker_module, "_receive", interrupted)
    with pytest.raises(KeyboardInterrupt):
        in_worker.complete(request_of(["User: first request."]), max_tokens=100)
    monkeypatch.setattr(worker_module, "_receive", real_receive)

    got = in_worker.complete(request_of(LINES), max_tokens=100)

    assert got == in_process.complete(request_of(LINES), max_tokens=100)
    assert in_worker.worker_pid not in (None, first)


def test_a_host_exits_while_a_daemon_thread_waits_on_a_stopped_child():
    host = run_host("exit-stopped")
    out, _ = host.communicate(timeout=120)  # a hang here fails the test

    assert host.returncode == 0, out
    pid = int(out.split()[1])
    assert ended_within(pid, 30)  # killed at exit, not left stopped


SLOW_COUNTER = """
import os, time
from pathlib import Path

HERE = Path({here!r})
(HERE / "child.tmp").write_text(str(os.getpid()))
(HERE / "child.tmp").rename(HERE / "child.pid")  # importing, in the child: whole
while not (HERE / "go").exists():  # the child is "starting" until the test says
    time.sleep(0.01)


def count(text):
    return len(text.encode("utf-8"))
"""


def test_close_kills_a_child_that_is_still_starting(tmp_path, monkeypatch):
    (tmp_path / "slow_counter.py").write_text(SLOW_COUNTER.format(here=str(tmp_path)))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "go").write_text("")  # this process's own import goes through
    import slow_counter

    slow_counter_count = slow_counter.count
    (tmp_path / "go").unlink()  # the child's will wait
    (tmp_path / "child.pid").unlink()
    summarizer = ExtractiveSummarizer(slow_counter_count, worker="process")
    failed: list[BaseException] = []

    def fold() -> None:
        try:
            summarizer.complete(request_of(LINES), max_tokens=100)
        except BaseException as exc:  # noqa: BLE001 - what the fold raised, kept
            failed.append(exc)

    folding = threading.Thread(target=fold)
    folding.start()
    deadline = time.monotonic() + 60
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    child = int((tmp_path / "child.pid").read_text())

    summarizer.close()  # while the child imports: it is killed, not waited for
    folding.join(timeout=60)

    assert not folding.is_alive()
    assert [type(exc).__name__ for exc in failed] == ["SummarizerError"]
    assert ended_within(child, 10)
    assert summarizer.worker_pid is None


def test_a_host_with_many_open_files_still_starts_its_worker():
    """The ready wait takes any descriptor number (select() stops at 1024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        if hard != resource.RLIM_INFINITY and hard < 1200:
            pytest.skip(f"the hard limit of open files is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.dup(0))
        summarizer = ExtractiveSummarizer(worker="process")
        got = summarizer.complete(request_of(LINES), max_tokens=100)
        pid = summarizer.worker_pid
        summarizer.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    assert pid is not None
    assert got == ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)


def test_a_stop_that_cuts_a_fold_short_is_no_summarizer_failure(caplog):
    store = InMemoryStore()
    config = SummaryConfig(offline_fold="process", breaker_failures=1)
    engine = SummaryEngine(store, config=config)
    engine.start()
    for i in range(40):
        store.save_message("s1", Message("user", f"My code is K-{i}, in Oslo."))
    engine.turn_after("s1")
    assert engine.wait_idle(timeout=60)  # the worker runs now
    pid = engine.llm.worker_pid  # type: ignore[attr-defined]
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # the next fold waits until stop() kills it
    worker = engine.llm._worker  # type: ignore[attr-defined]
    real_fold, folding = worker.fold, threading.Event()

    def fold(*args, **kwargs):
        folding.set()
        return real_fold(*args, **kwargs)

    worker.fold = fold
    for i in range(40, 80):
        store.save_message("s2", Message("user", f"My code is K-{i}, in Oslo."))
    running = engine.compress("s2")
    assert folding.wait(60)  # the fold is asking the stopped child

    with caplog.at_level(logging.WARNING):
        engine.stop(timeout=0)  # closes the summarizer at once: the fold fails
        with pytest.raises(EngineClosed):
            running.result(timeout=60)

    assert "summarizer failed" not in caplog.text
    assert "circuit open" not in caplog.text
    assert ended_within(pid, 10)


@pytest.mark.parametrize("size", ["small", "past-the-pipe-buffer"])
def test_a_stopped_worker_is_ended_at_the_deadline_and_the_next_fold_starts_another(
    size,
):
    """A fold never waits past its deadline on a stopped child, to write or read."""
    summarizer = ExtractiveSummarizer(worker="process")
    try:
        summarizer.complete(request_of(LINES), max_tokens=100)
        stopped = summarizer.worker_pid
        assert stopped is not None
        os.kill(stopped, signal.SIGSTOP)
        lines = (
            LINES if size == "small" else [f"User: fact {i}." * 50 for i in range(400)]
        )

        with pytest.raises(SummarizerTimeout):
            summarizer.complete(request_of(lines), max_tokens=100, timeout_s=1)

        assert ended_within(stopped, 10)
        got = summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=60)
        assert got == ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)
        assert summarizer.worker_pid not in (None, stopped)
    finally:
        summarizer.close()


def test_the_engine_recovers_from_a_stopped_worker_at_the_next_compression():
    store = InMemoryStore()
    # The deadline also bounds the next compression's start of a new child: 5 s, not
    # less, so a loaded machine's start (imports, tokenizer) stays inside it.
    config = SummaryConfig(offline_fold="process", summarizer_timeout_s=5)
    with SummaryEngine(store, config=config) as engine:
        for i in range(40):
            store.save_message("s1", Message("user", f"My code is K-{i}, in Oslo."))
        assert engine.compress("s1").result(timeout=60).kind == "compressed"
        stopped = engine.llm.worker_pid  # type: ignore[attr-defined]
        os.kill(stopped, signal.SIGSTOP)
        outcomes = []
        for turn in range(2):
            for i in range(40):
                text = f"Turn {turn}: my code is Q-{i}, in Bergen."
                store.save_message("s1", Message("user", text))
            outcomes.append(engine.compress("s1").result(timeout=60))
        fresh = engine.llm.worker_pid  # type: ignore[attr-defined]

    assert "within 5 s" in outcomes[0].detail  # the stopped child's fold timed out
    assert outcomes[1].kind == "compressed"  # the next one folds in a new child
    assert ended_within(stopped, 10)
    assert fresh not in (None, stopped)


GARBLING_COUNTER = """
import fcntl, os, sys
from pathlib import Path

MARK = Path({here!r}) / "garbled"


def count(text):
    # In the worker (run with -I) only, once: bytes that are no frame on its replies
    if "GARBLE" in text and sys.flags.isolated and not MARK.exists():
        MARK.write_text("")
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            try:
                writes = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
            except OSError:
                continue
            piped = os.readlink(f"/proc/self/fd/{{fd}}").startswith("pipe:")
            if fd > 2 and writes and piped:
                os.write(fd, {garbage!r})
    return len(text.encode("utf-8"))
"""


@pytest.mark.parametrize(
    "garbage",
    [
        b"c__builtin__\nnosuch\n.",  # a pickle naming what is not there
        b"\x95" + b"\xff" * 8,  # a pickle frame longer than any memory
        b"MSfw" + b"\xff" * 8,  # our mark, with a length no reply has
    ],
    ids=["unknown-name", "endless-pickle-frame", "endless-reply-frame"],
)
def test_garbage_on_the_workers_replies_drops_that_child_and_the_fold_goes_on(
    tmp_path, monkeypatch, garbage
):
    module = f"garbling_counter_{abs(hash(garbage))}"
    source = GARBLING_COUNTER.format(here=str(tmp_path), garbage=garbage)
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    count = __import__(module).count
    summarizer = ExtractiveSummarizer(count, worker="process")
    lines = [*LINES, "User: GARBLE this, please."]
    expected = ExtractiveSummarizer(count).complete(request_of(lines), max_tokens=100)
    try:
        summarizer.complete(request_of(LINES), max_tokens=100)
        first = summarizer.worker_pid

        got = summarizer.complete(request_of(lines), max_tokens=100, timeout_s=60)

        assert (tmp_path / "garbled").exists()  # the first child did write garbage
        assert got == expected
        assert summarizer.worker_pid not in (None, first)
    finally:
        summarizer.close()


RECORDING_COUNTER = """
import os
from pathlib import Path

HERE = Path({here!r})


def count(text):
    first = HERE / f"first-{{os.getpid()}}"
    if not first.exists():
        first.write_text(text)
    return len(text.encode("utf-8"))
"""


def test_a_child_loads_its_counter_before_it_is_ready(tmp_path, monkeypatch):
    """The counter's first call (a tokenizer load) falls within READY_S, never within
    the first fold's deadline, which a cold child would otherwise miss every time."""
    (tmp_path / "recording_counter.py").write_text(
        RECORDING_COUNTER.format(here=str(tmp_path))
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import recording_counter

    summarizer = ExtractiveSummarizer(recording_counter.count, worker="process")
    try:
        summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=60)
        pid = summarizer.worker_pid
    finally:
        summarizer.close()

    assert (tmp_path / f"first-{pid}").read_text() == "ready"


def test_a_deadline_counts_from_a_running_child_not_from_its_start(monkeypatch):
    """A child's start (its tokenizer's load) is not the fold's: it has READY_S."""
    summarizer = ExtractiveSummarizer(worker="process")
    started = worker_module.FoldWorker._start

    def slow_start(self):  # a start longer than the fold's whole deadline
        process = started(self)
        time.sleep(3)
        return process

    monkeypatch.setattr(worker_module.FoldWorker, "_start", slow_start)
    try:
        got = summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=2.5)

        assert got == ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)
    finally:
        summarizer.close()


def test_a_fold_waiting_for_the_one_before_it_keeps_its_own_deadline():
    summarizer = ExtractiveSummarizer(worker="process")
    raised: list[BaseException] = []

    def fold() -> None:
        try:
            summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=0.2)
        except BaseException as exc:  # noqa: BLE001 - checked below
            raised.append(exc)

    summarizer._folding.acquire()  # the fold before it, still running
    try:
        waiting = threading.Thread(target=fold, daemon=True)
        waiting.start()
        waiting.join(30)
        assert not waiting.is_alive()  # it gave up at its deadline, not with the lock
    finally:
        summarizer._folding.release()
        summarizer.close()
    assert len(raised) == 1
    assert isinstance(raised[0], SummarizerTimeout)


@pytest.mark.parametrize("worker", ["thread", "process"])
def test_a_deadline_beyond_any_wait_is_no_bound_and_a_bad_one_is_refused(worker):
    summarizer = ExtractiveSummarizer(worker=worker)
    expected = ExtractiveSummarizer().complete(request_of(LINES), max_tokens=100)
    try:
        for endless in (1e10, float("inf")):
            got = summarizer.complete(
                request_of(LINES), max_tokens=100, timeout_s=endless
            )
            assert got == expected
        for bad in (float("nan"), 0.0, -0.5, -1.0):
            with pytest.raises(ValueError, match="timeout_s"):
                summarizer.complete(request_of(LINES), max_tokens=100, timeout_s=bad)
    finally:
        summarizer.close()
