"""The architecture page's thread table names exactly the threads the engine starts."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.actors import session as session_module
from memory_summary.actors import workers as threads_module
from memory_summary.actors.workers import os_name
from memory_summary.adapters import SqliteStore
from memory_summary.adapters.recall.sql_index import CATCH_UP_EVERY
from memory_summary.adapters.stores.sql import sqlite as sqlite_face
from memory_summary.testing.fakes import InstrumentedSummarizer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "explanation" / "architecture.md"
ROW = re.compile(
    r"^\| `(memory-summary-[a-z-]+?)(?:-N)?` \| `(ms-[a-z-]+?)(?:-N)?` \|", re.M
)


def page_threads() -> dict[str, str]:
    """Python name -> ps -L name, each without its -N, as the page lists them."""
    return dict(ROW.findall(PAGE.read_text(encoding="utf-8")))


def shape(name: str) -> str:
    return re.sub(r"-\d+$", "", name)


def test_the_page_lists_each_thread_once_with_the_kernel_name_the_engine_gives_it():
    listed = page_threads()

    assert len(listed) >= 9, listed
    for python_name, ps_name in listed.items():
        assert os_name(python_name) == ps_name
        assert os_name(f"{python_name}-12") == f"{ps_name}-12"[:15]


def test_the_threads_alive_and_started_are_the_ones_the_page_lists(
    tmp_path, monkeypatch
):
    started: list[str] = []
    original = threads_module.name_this_thread

    def recorded(name: str) -> None:
        started.append(name)
        original(name)

    monkeypatch.setattr(threads_module, "name_this_thread", recorded)
    monkeypatch.setattr(session_module, "name_this_thread", recorded)
    monkeypatch.setattr(sqlite_face, "CHECKPOINT_EVERY", 1)  # at the first write
    before = {t.ident for t in threading.enumerate()}
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    store = SqliteStore(str(tmp_path / "s.db"), recall_index="eager")
    try:
        store.save_messages(
            "s", [Message("user", f"question {i} about the plan") for i in range(300)]
        )
        assert CATCH_UP_EVERY <= 300  # the index thread has been nudged
        config = SummaryConfig(recall_index="eager")  # the index thread's policy
        with SummaryEngine(store, llm, config=config) as engine:
            engine.turn_after("s")  # through the gate, as a database store's turn
            assert llm.entered.wait(30), "no compression reached the summarizer"
            alive = [t for t in threading.enumerate() if t.ident not in before]
            comm = {}
            if sys.platform == "linux":
                for t in alive:
                    path = f"/proc/self/task/{t.native_id}/comm"
                    with open(path, encoding="utf-8") as file:
                        comm[t.name] = file.read().strip()
            gate.set()
            assert engine.wait_idle(30)
    finally:
        gate.set()
        store.close()

    listed = page_threads()
    seen = {shape(t.name) for t in alive} | {shape(name) for name in started}
    assert seen == set(listed), (seen ^ set(listed), [t.name for t in alive])
    for name, kernel in comm.items():  # what ps -L shows, while the threads run
        assert kernel == os_name(name), (name, kernel)
        assert shape(kernel) == listed[shape(name)]


@pytest.mark.skipif(sys.platform != "linux", reason="the kernel's names are Linux's")
def test_a_thread_named_by_the_engine_shows_its_short_name_in_proc():
    names: list[str] = []

    def read() -> None:
        path = f"/proc/self/task/{threading.get_native_id()}/comm"
        with open(path, encoding="utf-8") as file:
            names.append(file.read().strip())

    thread = threads_module.daemon(read, "memory-summary-compress-7")
    thread.start()
    thread.join(10)

    assert names == ["ms-compress-7"]
    assert thread.name == "memory-summary-compress-7"
