"""``RedisStore`` ranks its history search as ``InMemoryStore``, the reference, does.

Both stores replay the same saves, trims and pops (ids match: each starts at 1), and
every query gets the same hits, in the same order, with the same scores.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_summary import Message
from memory_summary.adapters import InMemoryStore
from memory_summary.domain.recall import query_terms
from tests.contract.stores import dispose, make_redis

pytestmark = pytest.mark.redis

WORDS = ["zebra", "cat", "dog", "plain", "river", "北京", "dancing", "the", "a"]
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("save"), st.integers(0, 1), texts),
        st.tuples(st.just("trim"), st.integers(0, 1), st.integers(0, 4)),
        st.tuples(st.just("pop"), st.integers(0, 1), st.none()),
    ),
    min_size=1,
    max_size=40,
)
queries = st.lists(st.sampled_from(WORDS[:7]), min_size=1, max_size=3).map(" ".join)


def _hits(store, sid, query, limit, archived_only):
    found = store.search_messages(
        sid, query_terms(query), limit=limit, archived_only=archived_only
    )
    return [(h.message.id, h.message.content, h.archived, h.score) for h in found]


@settings(max_examples=40, deadline=None)
@given(steps=steps, query=queries, limit=st.integers(1, 12), archived=st.booleans())
def test_redis_ranks_as_the_in_memory_reference(
    redis_server, steps, query, limit, archived
):
    reference, redis_store = InMemoryStore(), make_redis()
    try:
        for store in (reference, redis_store):
            for action, which, value in steps:
                sid = f"s{which}"
                if action == "save":
                    store.save_message(sid, Message("user", value))
                elif action == "trim":
                    store.trim_history(sid, value)
                else:
                    store.pop_message(sid)
        for sid in ("s0", "s1"):
            expected = _hits(reference, sid, query, limit, archived)
            got = _hits(redis_store, sid, query, limit, archived)
            assert [h[:3] for h in got] == [h[:3] for h in expected]
            assert [h[3] for h in got] == pytest.approx([h[3] for h in expected])
    finally:
        dispose(redis_store)
