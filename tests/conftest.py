"""Shared test configuration: hypothesis profiles and common fixtures."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from memory_summary import SummaryConfig, SummaryEngine
from tests.contract.stores import STORE_KINDS, dispose, make_postgres, store_for

settings.register_profile("dev", max_examples=60, deadline=None)
# CI runs every property on each push with a fresh seed, so the search goes on across
# runs: "ci" on the main Python, "compat" on the others (they look for what differs
# between interpreters; the main run searches deeper). "thorough" searches deeper in
# one run (before a release, or after a property found something).
for name, examples in (("ci", 150), ("compat", 40), ("thorough", 1_000)):
    settings.register_profile(
        name,
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=True,
    )
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what the imports and the collection made: it lives for the whole run.

    The libraries the suite imports hold about 650,000 objects; frozen, the garbage
    collections that the tests trigger no longer walk them each time.
    """
    gc.collect()
    gc.freeze()


def count_chars(text: str) -> int:
    """A token counter for tests: one token per character."""
    return len(text)


def chars_counter_for(model: str | None) -> object:
    return count_chars


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path) -> Iterator[object]:
    """The one store fixture: the contract suite and engine tests run on each store.

    PostgreSQL is the run's one schema, emptied before each test, and skipped when no
    server answers (a failure under ``CI=true``). Redis gets a key prefix of its own
    on the run's throw-away server.
    """
    yield from store_for(request, request.param, tmp_path)


@pytest.fixture(scope="session")
def shared_postgres() -> Iterator[object]:
    """One PostgresStore on a schema of its own for the run, dropped at its end."""
    made = make_postgres()
    yield made
    dispose(made)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[object]:
    """The session's throw-away redis-server (a free loopback port, no persistence)."""
    from tests.redisserver import close_shared_server, shared_server

    yield shared_server()
    close_shared_server()


@pytest.fixture
def make_engine() -> Iterator[object]:
    """Build engines that are always stopped at the end of the test."""
    engines: list[SummaryEngine] = []

    def make(memory: object, llm: object = None, **kwargs: object) -> SummaryEngine:
        kwargs.setdefault("config", SummaryConfig())
        engine = SummaryEngine(memory, llm, **kwargs)  # type: ignore[arg-type]
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.stop(timeout=5)
