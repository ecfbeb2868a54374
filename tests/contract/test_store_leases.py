"""Leases beyond the contract: two PostgreSQL schemas in one database.

The lease contract itself (exclusive, timed, renewable, releasable) is part of
``memory_summary.testing.contract.StoreContract``, run on every store by
``test_store_contract.py``.
"""

from __future__ import annotations

import pytest

from tests.contract.stores import dispose, make_postgres


@pytest.mark.postgres
def test_leases_of_two_schemas_in_one_database_are_independent(sid):
    first, second = make_postgres(), make_postgres()
    try:
        held = first.acquire_lease(sid, owner="first", ttl_s=60)

        assert held is not None
        assert second.acquire_lease(sid, owner="second", ttl_s=60) is not None
        assert first.acquire_lease(sid, owner="again", ttl_s=60) is None
    finally:
        dispose(first)
        dispose(second)
