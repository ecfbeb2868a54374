"""The store contract of compression leases: exclusive, timed, renewable, releasable.

A lease is a row (or, in memory, an entry) with a token and an expiry; a token from
before is worthless once someone else took the expired lease.

``LeaseLimitContract`` is opt-in: a lease of at most a day (``MAX_LEASE_TTL_S``), a
longer ``ttl_s`` refused with a ``ValueError``. Every shipped store passes it; a store
written before the limit existed keeps passing ``StoreContract`` until its author adds
the class beside it (docs/writing-a-store.md).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from memory_summary import StoreError
from memory_summary.adapters.stores.rows import MAX_LEASE_TTL_S

from .store_fixtures import StoreFixtures


def poll_until_acquired(
    store: Any,
    sid: str,
    *,
    owner: str,
    ttl_s: float = 60.0,
    deadline_s: float = 10.0,
) -> str | None:
    """Take the session's lease once it is free: polling, with a deadline.

    Nothing signals that a lease expired, so this polls; it returns None when the
    deadline passes first.
    """
    pause = threading.Event()  # never set: its wait() spaces the polls
    stop_at = time.monotonic() + deadline_s
    while time.monotonic() < stop_at:
        token = store.acquire_lease(sid, owner=owner, ttl_s=ttl_s)
        if token is not None:
            return str(token)
        pause.wait(0.005)
    return None


class LeaseContract:
    """Leases: ``acquire_lease``, ``renew_lease``, ``release_lease``, owners."""

    def test_a_lease_is_exclusive_until_released(self, store: Any, sid: str) -> None:
        token = store.acquire_lease(sid, owner="a", ttl_s=60)

        assert token is not None
        assert store.acquire_lease(sid, owner="b", ttl_s=60) is None
        assert (
            store.acquire_lease(sid, owner="a", ttl_s=60) is None
        )  # even for its owner
        store.release_lease(sid, token)
        assert store.acquire_lease(sid, owner="b", ttl_s=60) is not None

    def test_leases_of_other_sessions_are_independent(
        self, store: Any, sid: str
    ) -> None:
        assert store.acquire_lease(sid, owner="a", ttl_s=60) is not None
        assert store.acquire_lease(f"{sid}-2", owner="a", ttl_s=60) is not None

    def test_every_acquisition_has_a_new_token(self, store: Any, sid: str) -> None:
        first = store.acquire_lease(sid, owner="a", ttl_s=60)
        store.release_lease(sid, first)

        second = store.acquire_lease(sid, owner="a", ttl_s=60)

        assert second not in (None, first)

    def test_an_expired_lease_can_be_taken_and_the_old_token_is_refused(
        self, store: Any, sid: str
    ) -> None:
        old = store.acquire_lease(sid, owner="slow", ttl_s=0.05)

        new = poll_until_acquired(store, sid, owner="fast")

        assert new is not None
        assert new != old
        assert store.renew_lease(sid, old, ttl_s=60) is False
        store.release_lease(sid, old)  # must not drop the new holder's lease
        assert store.acquire_lease(sid, owner="third", ttl_s=60) is None
        assert store.renew_lease(sid, new, ttl_s=60) is True

    def test_renewing_keeps_a_lease_alive(self, store: Any, sid: str) -> None:
        token = store.acquire_lease(sid, owner="a", ttl_s=60)

        assert store.renew_lease(sid, token, ttl_s=120) is True
        assert store.acquire_lease(sid, owner="b", ttl_s=60) is None

    def test_renewing_an_expired_lease_fails(self, store: Any, sid: str) -> None:
        token = store.acquire_lease(sid, owner="a", ttl_s=0.05)
        probe = f"{sid}-probe"
        store.acquire_lease(probe, owner="probe", ttl_s=0.05)  # expires after ours

        # Once the probe's lease is free again, ours has expired too, by the
        # store's clock.
        assert poll_until_acquired(store, probe, owner="poller") is not None

        assert store.renew_lease(sid, token, ttl_s=60) is False

    def test_releasing_an_unknown_or_foreign_token_is_harmless(
        self, store: Any, sid: str
    ) -> None:
        token = store.acquire_lease(sid, owner="a", ttl_s=60)

        store.release_lease(sid, "not-a-token")
        store.release_lease(f"{sid}-none", "not-a-token")

        assert store.renew_lease(sid, token, ttl_s=60) is True

    def test_racing_acquirers_get_one_lease(self, store: Any, sid: str) -> None:
        racers = 8
        barrier = threading.Barrier(racers)

        def race(index):
            barrier.wait()
            return store.acquire_lease(sid, owner=f"r{index}", ttl_s=60)

        with ThreadPoolExecutor(racers) as pool:
            tokens = list(pool.map(race, range(racers)))

        assert sum(t is not None for t in tokens) == 1

    def test_clear_all_drops_every_lease(self, store: Any, sid: str) -> None:
        store.acquire_lease(sid, owner="a", ttl_s=60)

        store.clear_all()

        assert store.acquire_lease(sid, owner="b", ttl_s=60) is not None

    @pytest.mark.parametrize("ttl_s", [0, -1, float("nan"), float("inf"), "5", True])
    def test_a_lease_needs_a_positive_finite_duration(
        self, store: Any, sid: str, ttl_s: Any
    ) -> None:
        with pytest.raises(ValueError, match="ttl_s"):
            store.acquire_lease(sid, owner="a", ttl_s=ttl_s)

    def test_a_lease_owner_must_be_storable_text(self, store: Any, sid: str) -> None:
        with pytest.raises(StoreError, match="owner"):
            store.acquire_lease(sid, owner="\ud800", ttl_s=60)

    def test_the_owner_of_a_live_lease_is_known_and_only_it_can_be_broken(
        self, store: Any, sid: str
    ) -> None:
        token = store.acquire_lease(sid, owner="host:1:a", ttl_s=60)

        assert store.lease_owner(sid) == "host:1:a"
        assert not store.break_lease(sid, "host:2:b")
        assert store.acquire_lease(sid, owner="c", ttl_s=60) is None
        assert store.break_lease(sid, "host:1:a")
        assert store.lease_owner(sid) is None
        assert not store.renew_lease(
            sid, token, ttl_s=60
        )  # the broken token is worthless
        assert store.acquire_lease(sid, owner="c", ttl_s=60) is not None


class LeaseLimitContract(StoreFixtures):
    """Opt-in: a lease lasts at most a day (``MAX_LEASE_TTL_S``), as on every store.

    Subclass it beside ``StoreContract``: ``class TestMyStore(StoreContract,
    LeaseLimitContract)``. Why a store should refuse longer: a lease held by a process
    that died blocks the session's compressions until it expires, and the shipped
    stores take a lease expiring further ahead than a day and a minute for another
    program's and break it. The engine asks for far less (``lease_ttl_s``, 30 s by
    default). Not part of ``StoreContract``: a store written before the limit would
    fail an upgrade it passed before; the CHANGELOG says when that changes.
    """

    def test_a_lease_of_exactly_a_day_is_granted_and_renewed(
        self, store: Any, sid: str
    ) -> None:
        token = store.acquire_lease(sid, owner="me", ttl_s=MAX_LEASE_TTL_S)

        assert token is not None
        assert store.renew_lease(sid, token, ttl_s=MAX_LEASE_TTL_S) is True
        assert store.acquire_lease(sid, owner="other", ttl_s=60) is None

    @pytest.mark.parametrize("ttl_s", [MAX_LEASE_TTL_S + 1, 1e300])
    def test_a_lease_longer_than_a_day_is_refused(
        self, store: Any, sid: str, ttl_s: float
    ) -> None:
        """A ``ValueError`` naming ``ttl_s``; the lease held is left as it is."""
        with pytest.raises(ValueError, match="ttl_s"):
            store.acquire_lease(sid, owner="me", ttl_s=ttl_s)
        token = store.acquire_lease(sid, owner="me", ttl_s=60)
        assert token is not None

        with pytest.raises(ValueError, match="ttl_s"):
            store.renew_lease(sid, token, ttl_s=ttl_s)
        assert store.lease_owner(sid) == "me"
        assert store.renew_lease(sid, token, ttl_s=60) is True
