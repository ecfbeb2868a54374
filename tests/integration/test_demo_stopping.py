"""The demo stops on Ctrl-C or a failed session, even when a turn is stuck."""

from __future__ import annotations

import _thread
import signal
import threading

import pytest

from memory_summary import demo


def test_ctrl_c_returns_while_a_turn_is_stuck(tmp_path, monkeypatch, request):
    stuck, release = threading.Event(), threading.Event()
    stuck_thread: list[threading.Thread] = []

    def drive(engine, store, stats, index, turns, seed, count, cancel):
        if index == 0:
            stuck_thread.append(threading.current_thread())
            stuck.set()
            release.wait(60)  # a turn that does not end (bounded: never hang the suite)

    def interrupt() -> None:
        assert stuck.wait(30)
        _thread.interrupt_main()  # what Ctrl-C does to the main thread

    # A suite started in the background inherits SIGINT ignored, and then
    # interrupt_main() does nothing: take Ctrl-C as an interactive process does.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    before = set(threading.enumerate())
    monkeypatch.setattr(demo, "_drive_session", drive)
    monkeypatch.setattr(demo, "STOP_WAIT_S", 0.2)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            demo.run_demo(
                tmp_path / "demo.sqlite3", sessions=4, turns=2, progress=False
            )
        # it returned before the stuck turn ended, and that thread cannot keep the
        # process alive
        assert stuck_thread[0].is_alive()
        holding = [t for t in threading.enumerate() if not t.daemon and t not in before]
        assert holding == []
    finally:
        release.set()
        stuck_thread[0].join(10)


def test_a_failed_session_stops_the_others_and_is_raised(tmp_path, monkeypatch):
    begun: list[int] = []

    def drive(engine, store, stats, index, turns, seed, count, cancel):
        begun.append(index)
        if index == 1:
            raise RuntimeError("session 1 broke")

    monkeypatch.setattr(demo, "_drive_session", drive)
    with pytest.raises(RuntimeError, match="session 1 broke"):
        demo.run_demo(
            tmp_path / "demo.sqlite3", sessions=50, turns=2, workers=1, progress=False
        )

    assert begun == [0, 1]  # one host thread: nothing began after the failure


def test_a_failed_session_is_raised_while_another_turn_is_stuck(tmp_path, monkeypatch):
    stuck, release = threading.Event(), threading.Event()
    stuck_thread: list[threading.Thread] = []

    def drive(engine, store, stats, index, turns, seed, count, cancel):
        if index == 0:
            stuck_thread.append(threading.current_thread())
            stuck.set()
            release.wait(60)  # a turn that does not end (bounded: never hang the suite)
        else:
            assert stuck.wait(30)
            raise RuntimeError(f"session {index} broke")

    monkeypatch.setattr(demo, "_drive_session", drive)
    monkeypatch.setattr(demo, "STOP_WAIT_S", 0.2)
    try:
        with pytest.raises(RuntimeError, match="broke"):
            demo.run_demo(
                tmp_path / "demo.sqlite3",
                sessions=2,
                turns=2,
                workers=2,
                progress=False,
            )
        assert stuck_thread[0].is_alive()  # raised while the stuck turn still runs
    finally:
        release.set()
        stuck_thread[0].join(10)
