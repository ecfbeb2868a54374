"""The engine tests' store: the in-memory reference, or each store with every_store.

An engine rule does not depend on the store: the contract suite (``tests/contract``)
holds every store to the in-memory reference. A test about what differs between stores
(fencing, leases, persistence, SQL specifics) says so with
``@every_store`` (``tests.contract.stores``) and runs once per store.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.stores import store_for


@pytest.fixture
def store(request, tmp_path) -> Iterator[object]:
    """The in-memory store, or the store ``every_store`` parametrises the test with."""
    yield from store_for(request, getattr(request, "param", "memory"), tmp_path)
