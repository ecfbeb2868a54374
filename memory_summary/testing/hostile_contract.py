"""The store contract for hostile keys and metadata: refused alike, with a StoreError.

``InMemoryStore`` is the reference: whatever it refuses, a store refuses, and what it
keeps, a store returns unchanged. No raw ``UnicodeEncodeError``, ``TypeError`` or
driver exception ever reaches the caller.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_summary import Message, StoreError
from memory_summary.adapters import InMemoryStore

from .fencing_contract import commit
from .strategies import texts

HOSTILE_IDS: dict[str, Any] = {
    "lone-surrogate": "s-\ud800",
    "low-surrogate": "\udfff",
    "nul": "s\x00s",
    "int": 7,
    "none": None,
    "bytes": b"s1",
}

BAD_METADATA: dict[str, Any] = {
    "set": {"tags": {1, 2}},
    "nan": {"x": math.nan},
    "inf": {"x": math.inf},
    "object": {"x": object()},
    "surrogate-value": {"x": "a\ud800b"},
    "surrogate-key": {"\udfff": 1},
    "tuple-key": {(1, 2): "x"},
}


def cyclic() -> dict[str, object]:
    """Return a dict that holds itself (JSON cannot express it)."""
    data: dict[str, object] = {}
    data["self"] = data
    return data


def deep(levels: int = 100_000) -> dict[str, object]:
    """Return a list nested ``levels`` deep (beyond any JSON encoder's recursion)."""
    data: list[object] = []
    for _ in range(levels):
        data = [data]
    return {"x": data}


BAD_METADATA["cycle"] = cyclic()

BAD_METADATA["deep"] = deep()

CALLS_TAKING_A_SESSION: dict[str, Callable[[Any, Any], object]] = {
    "save_message": lambda s, k: s.save_message(k, Message("user", "hi")),
    "get_history": lambda s, k: s.get_history(k),
    "get_full_history": lambda s, k: s.get_full_history(k),
    "count_history": lambda s, k: s.count_history(k),
    "get_oldest_history": lambda s, k: s.get_oldest_history(k, 5),
    "get_archived": lambda s, k: s.get_archived(
        k, after_id=None, through_id=9, limit=5
    ),
    "trim_history": lambda s, k: s.trim_history(k, 1),
    "clear_session": lambda s, k: s.clear_session(k),
    "commit": lambda s, k: commit(s, k, record={"generation": "g"}),
    "forget_session": lambda s, k: s.forget_session(k, namespaces=["summary"]),
    "acquire_lease": lambda s, k: s.acquire_lease(k, owner="o", ttl_s=5),
    "renew_lease": lambda s, k: s.renew_lease(k, "t", ttl_s=5),
    "release_lease": lambda s, k: s.release_lease(k, "t"),
    "save_metadata": lambda s, k: s.save_metadata("ns", k, {"a": 1}),
    "get_metadata": lambda s, k: s.get_metadata("ns", k),
    "delete_metadata": lambda s, k: s.delete_metadata("ns", k),
    "quarantine_metadata": lambda s, k: s.quarantine_metadata("ns", k, "q"),
    "namespace": lambda s, k: s.get_metadata(k, "key"),
    "list_metadata": lambda s, k: s.list_metadata(k),
}


def json_values() -> st.SearchStrategy[object]:
    """JSON-like values plus what JSON lacks (tuples, frozensets): kept or refused."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(60),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(texts(20), inner, max_size=4),
            st.tuples(inner, inner),
            st.frozensets(st.integers(0, 3), max_size=2),
        ),
        max_leaves=12,
    )


def outcome(action: Callable[[Any], object], target: Any) -> tuple[str, object | None]:
    """Return ``("kept", result)`` or ``("refused", None)`` on a ``StoreError``."""
    try:
        return "kept", action(target)
    except StoreError:
        return "refused", None


class HostileContract:
    """Hostile session ids, keys, metadata and timestamps: refused alike."""

    @pytest.mark.parametrize(
        "call", CALLS_TAKING_A_SESSION.values(), ids=CALLS_TAKING_A_SESSION.keys()
    )
    @pytest.mark.parametrize("key", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
    def test_an_unstorable_session_id_or_key_raises_a_store_error(
        self, store: Any, call: Any, key: Any
    ) -> None:
        with pytest.raises(StoreError, match=r"session_id|namespace|key"):
            call(store, key)

    @pytest.mark.parametrize("data", BAD_METADATA.values(), ids=BAD_METADATA.keys())
    def test_metadata_that_is_not_json_is_refused_everywhere(
        self, store: Any, sid: str, data: Any
    ) -> None:
        message = Message("user", "hi", metadata=data)

        with pytest.raises(StoreError, match=f"metadata ns/{sid}"):
            store.save_metadata("ns", sid, data)
        with pytest.raises(StoreError, match="metadata summary/"):
            commit(store, sid, record=data)
        with pytest.raises(StoreError, match="message field 'metadata'"):
            store.save_message(sid, message)

        assert store.get_metadata("ns", sid) is None
        assert store.get_metadata("summary", sid) is None
        assert store.get_full_history(sid) == []

    @pytest.mark.parametrize("timestamp", [math.nan, math.inf, -math.inf])
    def test_a_timestamp_that_is_not_finite_is_refused(
        self, store: Any, sid: str, timestamp: Any
    ) -> None:
        with pytest.raises(StoreError, match="timestamp"):
            store.save_message(sid, Message("user", "hi", timestamp=timestamp))

        assert store.get_full_history(sid) == []

    def test_metadata_must_be_a_mapping(self, store: Any, sid: str) -> None:
        with pytest.raises(StoreError, match="must be a mapping"):
            store.save_metadata("ns", sid, ["not", "a", "mapping"])

    @settings(
        suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60
    )
    @given(data=st.dictionaries(texts(20), json_values(), max_size=4), key=texts(20))
    def test_every_store_refuses_and_keeps_exactly_what_the_reference_does(
        self, store: Any, data: Any, key: Any
    ) -> None:
        reference = InMemoryStore()
        sid = f"{key}-{uuid4().hex[:6]}"

        def metadata_round_trip(target):
            target.save_metadata("ns", sid, data)
            return target.get_metadata("ns", sid)

        def message_round_trip(target):
            target.save_message(sid, Message("user", "x", metadata=data))
            return target.get_history(sid)[-1].metadata

        for action in (metadata_round_trip, message_round_trip):
            expected = outcome(action, reference)
            actual = outcome(action, store)

            assert actual == expected
