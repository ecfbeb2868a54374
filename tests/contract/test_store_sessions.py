"""``session_counts``: every store lists its sessions alike, page by page."""

from __future__ import annotations

from memory_summary import Message


def test_sessions_are_listed_in_order_with_their_counts(store):
    for sid, count in (("b", 3), ("a", 1), ("é", 2)):
        for i in range(count):
            store.save_message(sid, Message("user", f"{sid}{i}"))
    store.trim_history("b", 1)

    first = store.session_counts(limit=2)
    rest = store.session_counts(after=first[-1][0])

    assert first == [("a", 1, 0), ("b", 1, 2)]
    assert rest == [("é", 2, 0)]
    assert store.session_counts(after="é") == []


def test_a_forgotten_session_is_not_listed(store):
    store.save_message("gone", Message("user", "x"))
    store.forget_session("gone", namespaces=["summary"])

    assert store.session_counts() == []


def test_a_cleared_session_is_not_listed_and_its_neighbours_are(store):
    for sid in ("a", "b", "c"):
        store.save_message(sid, Message("user", sid))
    store.clear_session("b")

    assert store.session_counts(limit=1) == [("a", 1, 0)]
    assert store.session_counts(after="a", limit=1) == [("c", 1, 0)]
