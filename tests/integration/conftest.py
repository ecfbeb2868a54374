"""The engine tests' store: the in-memory reference, or each store with every_store.

An engine rule does not depend on the store: the contract suite (``tests/contract``)
holds every store to the in-memory reference. A test about what differs between stores
(fencing, leases, persistence, SQL specifics) says so with
``@every_store`` (``tests.contract.stores``) and runs once per store.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.contract.stores import dispose, make_store


@pytest.fixture
def store(request, tmp_path) -> Iterator[object]:
    """The in-memory store, or the store ``every_store`` parametrises the test with."""
    kind = getattr(request, "param", "memory")
    if kind == "redis":
        request.getfixturevalue("redis_server")
    made = make_store(kind, tmp_path)
    yield made
    dispose(made)
