"""The async face of the stores: awaitable save, read and pop, never on the loop thread.

How long the loop stalls is measured by ``benchmarks/aio_stall.py``; these tests check
that the work happens, and happens off the loop's thread, without timing anything.
"""

from __future__ import annotations

import asyncio
import threading

from memory_summary import Message, SummaryEngine
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.aio_store import AsyncStore
from tests.contract.stores import every_store


class ThreadRecorder:
    """Passes every call to a store and records the thread that made it."""

    def __init__(self, store: object, gate: threading.Event | None = None) -> None:
        self._store = store
        self._gate = gate
        self.entered = threading.Event()
        self.threads: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self._store, name)
        if not callable(attribute) or name.startswith("_"):
            return attribute

        def recorded(*args: object, **kwargs: object) -> object:
            self.threads.append((name, threading.get_ident()))
            if self._gate is not None and name == "save_message":
                self.entered.set()
                assert self._gate.wait(10), "the loop never opened the gate"
            return attribute(*args, **kwargs)

        return recorded


@every_store
def test_save_read_and_pop_are_awaited_off_the_loop_thread(store):
    recorder = ThreadRecorder(store)

    async def main():
        async with AsyncSummaryEngine(SummaryEngine(recorder)) as engine:
            first = await engine.memory.save_message("s1", Message("user", "one"))
            second = await engine.memory.save_message("s1", Message("assistant", "two"))
            history = await engine.memory.get_history("s1")
            popped = await engine.memory.pop_message("s1")
            after = await engine.memory.get_history("s1", limit=5)
            nothing = await engine.memory.pop_message("s2")
            full = await engine.memory.get_full_history("s1")
            count = await engine.memory.count_history("s1")
            return (
                first,
                second,
                history,
                popped,
                after,
                nothing,
                full,
                count,
                (threading.get_ident()),
            )

    first, second, history, popped, after, nothing, full, count, loop = asyncio.run(
        main()
    )

    assert first.id is not None
    assert second.id > first.id
    assert history == [first, second]
    assert store.get_full_history("s1") == [first]
    assert popped == second
    assert after == full == [first]
    assert count == 1
    assert nothing is None
    calls = [(name, ident) for name, ident in recorder.threads if name != "close"]
    wrapped = {"save_message", "get_history", "pop_message", "get_full_history"}
    assert wrapped <= {name for name, _ in calls}
    assert all(ident != loop for name, ident in calls if name in wrapped)


def test_a_store_call_in_progress_leaves_the_loop_serving_other_tasks(tmp_path):
    from memory_summary.adapters import SqliteStore

    gate = threading.Event()
    sqlite = SqliteStore(tmp_path / "a.sqlite3")
    recorder = ThreadRecorder(sqlite, gate)
    store = AsyncStore(recorder)

    async def open_the_gate():
        # Runs on the loop while save_message() is awaited: a blocked loop would
        # keep the gate shut until the store's 10 s wait ran out.
        assert await asyncio.to_thread(recorder.entered.wait, 10)
        gate.set()

    async def main():
        saved, _ = await asyncio.gather(
            store.save_message("s1", Message("user", "held")), open_the_gate()
        )
        return saved

    saved = asyncio.run(main())
    sqlite.close()

    assert saved.content == "held"
    assert gate.is_set()
