"""Fixtures of the store contract suite (the ``store`` fixture is in tests/conftest)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import uuid4

import pytest

from tests.contract.stores import SQL_KINDS, store_for

FOREIGN_KINDS = [*SQL_KINDS, pytest.param("redis", marks=pytest.mark.redis)]


@pytest.fixture
def sid() -> str:
    """A session id of its own: PostgreSQL schemas may outlive a test run."""
    return f"s-{uuid4().hex[:8]}"


@pytest.fixture(params=SQL_KINDS)
def sql_store(request, tmp_path) -> Iterator[object]:
    """A SQL store only: for tests of its archive table or of a foreign writer."""
    yield from store_for(request, request.param, tmp_path)


@pytest.fixture(params=FOREIGN_KINDS)
def foreign_store(request, tmp_path) -> Iterator[object]:
    """A store another program can write behind its back: SQL, or Redis (raw keys)."""
    yield from store_for(request, request.param, tmp_path)
