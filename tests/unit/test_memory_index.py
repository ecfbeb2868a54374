"""InMemoryStore indexes a message on the first search after it is saved."""

from __future__ import annotations

from memory_summary import Message
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.recall import query_terms


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
