"""InMemoryStore indexes a message on the first search after it is saved."""

from __future__ import annotations

import threading
from unittest import mock

from memory_summary import Message
from memory_summary.adapters import InMemoryStore
from memory_summary.adapters.stores.memory import history as memory_history
from memory_summary.domain.recall import message_terms, query_terms


def ids(store: InMemoryStore, word: str) -> list[int | None]:
    return [
        h.message.id for h in store.search_messages("s", query_terms(word), limit=5)
    ]


def test_a_popped_message_is_never_found_indexed_or_not() -> None:
    store = InMemoryStore()
    store.save_message("s", Message("user", "apples"))
    store.save_message("s", Message("user", "pears"))
    store.pop_message("s")  # popped before any search: never indexed
    assert ids(store, "pears") == []
    assert ids(store, "apples") == [1]
    store.save_message("s", Message("user", "plums"))
    assert ids(store, "plums")[0] == 3  # then its neighbours
    store.pop_message("s")  # popped after a search indexed it
    assert ids(store, "plums") == []


def test_saving_does_not_index_until_a_search() -> None:
    store = InMemoryStore()
    store.save_messages("s", [Message("user", "figs"), Message("user", "dates")])
    session = store._sessions["s"]
    assert session.terms == {}
    assert ids(store, "dates")[0] == 2
    assert not session.unindexed


class _HeldIndexing:
    """Counting the terms of a message holding ``word`` waits until released."""

    def __init__(self, word: str) -> None:
        self.word = word
        self.counting = threading.Event()
        self.release = threading.Event()

    def __call__(self, message: Message) -> list[str]:
        if self.word in str(message.content):
            self.counting.set()
            assert self.release.wait(60), "never released"
        return message_terms(message)


def _search_in_thread(store: InMemoryStore, word: str) -> tuple[threading.Thread, list]:
    found: list = []

    def run() -> None:
        found.append(ids(store, word))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, found


def test_indexing_a_session_at_its_first_search_holds_no_store_wide_lock() -> None:
    store = InMemoryStore()
    store.save_message("s", Message("user", "a huge tool result, zebra"))
    store.save_message("other", Message("user", "apples"))
    held = _HeldIndexing("zebra")

    with mock.patch.object(memory_history, "message_terms", held):
        search, found = _search_in_thread(store, "zebra")
        assert held.counting.wait(60)
        try:
            # While the session's terms are counted, the store serves everyone:
            # another session's save, read and search, and this session's save.
            done = threading.Event()

            def others() -> None:
                store.save_message("other", Message("user", "pears"))
                assert len(store.get_history("other")) == 2
                assert ids_in(store, "other", "pears")[0] == 3
                store.save_message("s", Message("user", "zebra again"))
                done.set()

            worker = threading.Thread(target=others, daemon=True)
            worker.start()
            blocked = not done.wait(30)
        finally:
            held.release.set()
        search.join(60)
        worker.join(60)

    assert not blocked, "the store was locked while one session was indexed"
    assert found == [[4, 1]]  # the message saved meanwhile is found too


def test_a_message_popped_while_its_terms_are_counted_is_never_indexed() -> None:
    store = InMemoryStore()
    store.save_message("s", Message("user", "apples"))
    store.save_message("s", Message("user", "zebra to pop"))
    held = _HeldIndexing("zebra")

    with mock.patch.object(memory_history, "message_terms", held):
        search, found = _search_in_thread(store, "zebra")
        assert held.counting.wait(60)
        popped = store.pop_message("s")
        held.release.set()
        search.join(60)

    assert popped is not None
    assert popped.id == 2
    assert found == [[]]
    assert ids(store, "zebra") == []
    assert ids(store, "apples") == [1]


def ids_in(store: InMemoryStore, sid: str, word: str) -> list[int | None]:
    return [
        h.message.id for h in store.search_messages(sid, query_terms(word), limit=5)
    ]


class _PolicyChangesFirst:
    """The store's lock, with a policy change landing just before a save takes it."""

    def __init__(self, lock, change) -> None:
        self.lock, self.change = lock, change

    def __enter__(self):
        change, self.change = self.change, None
        if change is not None:
            change()  # takes the real lock itself, then lets it go
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_save_racing_a_policy_change_is_kept_by_the_policy_it_lands_under() -> None:
    for before, after in (("off", "lazy"), ("off", "eager"), ("eager", "off")):
        store = InMemoryStore(recall_index=before)
        store.save_message("s", Message("user", "apples"))
        store._lock = _PolicyChangesFirst(
            store._lock, lambda s=store, a=after: s.set_recall_index(a)
        )
        store.save_message("s", Message("user", "a zebra"))
        assert store.recall_index == after
        if after != "off":
            assert ids(store, "zebra")[:1] == [2], (before, after)
            assert ids(store, "apples")[:1] == [1]
        else:  # saved under off: neither indexed nor queued until off is left
            assert 2 not in store._sessions["s"].terms
            assert 2 not in store._sessions["s"].unindexed
        store.set_recall_index("lazy")  # anything kept under off is queued again
        assert ids(store, "zebra")[:1] == [2], (before, after)
