"""Fixtures of the store contract suite (the ``store`` fixture is in tests/conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import pytest

from tests.contract.stores import SQL_KINDS, dispose, make_store

FOREIGN_KINDS = [*SQL_KINDS, pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture
def sid() -> str:
    """A session id of its own: PostgreSQL schemas may outlive a test run."""
    return f"s-{uuid4().hex[:8]}"


@pytest.fixture(params=SQL_KINDS)
def sql_store(request, tmp_path) -> Iterator[object]:
    """A SQL store only: for tests of its archive table or of a foreign writer."""
    made = make_store(request.param, tmp_path)
    yield made
    dispose(made)


@pytest.fixture(params=FOREIGN_KINDS)
def foreign_store(request, tmp_path) -> Iterator[object]:
    """A store another program can write behind its back: SQL, or Redis (raw keys)."""
    if request.param == "redis":
        request.getfixturevalue("redis_server")
    made = make_store(request.param, tmp_path)
    yield made
    dispose(made)
