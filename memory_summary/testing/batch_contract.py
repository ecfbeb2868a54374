"""The optional batch save (``BatchSavingStore.save_messages``): all or nothing.

Part of ``contract.StoreContract``. A store without ``save_messages`` skips these
tests: the capability is optional, and callers fall back to checking every message
first and saving them one by one (``memory_summary.batch``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pytest

from memory_summary import Message, StoreError
from memory_summary.domain import BatchSavingStore
from memory_summary.domain.capabilities import has_capability

from .hostile_contract import HOSTILE_IDS


def _batching(store: Any) -> BatchSavingStore:
    if not has_capability(store, BatchSavingStore):
        pytest.skip(f"{type(store).__name__} has no save_messages (optional)")
    return cast(BatchSavingStore, store)


class BatchContract:
    """``save_messages``: in order, all or nothing, contiguous under concurrency."""

    def test_a_batch_is_saved_in_order_with_increasing_ids(
        self, store: Any, sid: str
    ) -> None:
        batch = [Message("user", "q"), Message("assistant", "a", name="bot")]

        saved = _batching(store).save_messages(sid, batch)

        assert [m.content for m in saved] == ["q", "a"]
        first, second = saved[0].id, saved[1].id
        assert first is not None
        assert second is not None
        assert second > first
        assert store.get_history(sid) == saved

    def test_an_empty_batch_saves_nothing(self, store: Any, sid: str) -> None:
        assert _batching(store).save_messages(sid, []) == []
        assert store.get_full_history(sid) == []

    def test_a_message_the_store_refuses_leaves_nothing_of_its_batch(
        self, store: Any, sid: str
    ) -> None:
        before = store.save_message(sid, Message("user", "kept"))
        batch = [
            Message("user", "first"),
            Message("assistant", "second"),
            Message("user", "bad", metadata={"x": "a\ud800b"}),  # a lone surrogate
            Message("user", "after"),
        ]

        with pytest.raises(StoreError):
            _batching(store).save_messages(sid, batch)

        assert store.get_full_history(sid) == [before]

    @pytest.mark.parametrize("key", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
    def test_an_unstorable_session_id_raises_a_store_error(
        self, store: Any, key: Any
    ) -> None:
        with pytest.raises(StoreError, match="session_id"):
            _batching(store).save_messages(key, [Message("user", "hi")])

    def test_concurrent_batches_of_one_session_stay_contiguous(
        self, store: Any, sid: str
    ) -> None:
        batching = _batching(store)
        writers, size = 4, 30
        start = threading.Barrier(writers)

        def write(writer: int) -> None:
            batch = [Message("user", f"w{writer}-{i}") for i in range(size)]
            start.wait(timeout=10)
            batching.save_messages(sid, batch)

        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(write, range(writers)))

        owners = [str(m.content).split("-")[0] for m in store.get_history(sid)]
        runs = [o for i, o in enumerate(owners) if i == 0 or owners[i - 1] != o]
        assert len(owners) == writers * size
        assert sorted(runs) == sorted(set(owners))  # one run per batch
