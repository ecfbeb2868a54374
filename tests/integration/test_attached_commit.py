"""A compression's last commit carries its lineage and its lease's release.

Through the store's ``commit`` (every shipped store) a one-chunk compression writes the
summary, the archive, the lineage version and the lease's release in one transaction.
A store with only the deprecated ``commit_compaction`` gets the same result from
separate calls.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from memory_summary import Message, StoreError, SummaryConfig
from memory_summary.adapters import InMemoryStore
from memory_summary.adapters.stores.fence import CompactingCommit
from memory_summary.domain import AttachedRecord, CommitRequest, CommitResult
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.stores import STORE_KINDS, store_for

CONFIG = SummaryConfig(threshold=10, keep_recent=4, summary_versions_kept=2)
WRITES = {"commit", "commit_compaction", "release_lease"}


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


class Calls:
    """Delegates to a store and counts its write calls; can be a store of old.

    A store of old (``legacy``) has ``commit_compaction`` and no ``commit``.
    """

    def __init__(self, store: Any, *, legacy: bool = False) -> None:
        self._store = store
        self._legacy = legacy
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.before_commit: list[Any] = []  # run once each before the next commit

    def __getattr__(self, name: str) -> Any:
        if name == "commit" and self._legacy:
            raise AttributeError(name)
        method = getattr(self._store, name)
        if name == "commit_compaction":  # as an outside store of old writes it

            def method(session_id: str, **fields: Any) -> Any:
                request = CommitRequest(session_id=session_id, **fields)
                return self._store.commit(request)

        if name not in WRITES:
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.calls[name] += 1
                hooks, self.before_commit[:] = list(self.before_commit), []
            for hook in hooks:
                hook()
            return method(*args, **kwargs)

        return call


def _fill(store: Any, sid: str, count: int) -> list[Message]:
    return [
        store.save_message(sid, Message("user" if i % 2 == 0 else "assistant", f"t{i}"))
        for i in range(count)
    ]


def test_a_compression_commits_its_lineage_and_release_in_one_call(store, make_engine):
    calls = Calls(store)
    saved = _fill(store, "s", 14)
    engine = make_engine(calls, ScriptedSummarizer("Summary one."), config=CONFIG)

    outcome = engine.compress("s").result(timeout=30)
    versions = engine.summary_history("s")

    assert outcome.kind == "compressed", outcome.detail
    assert calls.calls == Counter(commit=1)
    assert store.lease_owner("s") is None
    assert [(v.version, v.summary) for v in versions] == [(1, "Summary one.")]
    assert versions[0].folded(saved[0].id)
    assert not versions[0].folded(saved[-1].id)
    # the next compression takes the lease and appends the next version
    _fill(store, "s", 8)
    assert engine.compress("s").result(timeout=30).kind == "compressed"
    assert [v.version for v in engine.summary_history("s")] == [1, 2]


def test_a_store_with_only_commit_compaction_gets_the_same_from_separate_calls(
    store, make_engine
):
    calls = Calls(store, legacy=True)
    saved = _fill(store, "s", 14)
    with pytest.deprecated_call():
        engine = make_engine(calls, ScriptedSummarizer("Summary one."), config=CONFIG)

    outcome = engine.compress("s").result(timeout=30)
    versions = engine.summary_history("s")

    assert outcome.kind == "compressed", outcome.detail
    # the summary, then the lineage, then the release
    assert calls.calls == Counter(commit_compaction=2, release_lease=1)
    assert store.lease_owner("s") is None
    assert [(v.version, v.summary) for v in versions] == [(1, "Summary one.")]
    assert versions[0].folded(saved[0].id)


def test_a_lineage_changed_meanwhile_is_left_alone_and_the_summary_commits(
    store, make_engine
):
    calls = Calls(store)
    _fill(store, "s", 14)
    engine = make_engine(calls, ScriptedSummarizer("Summary one."), config=CONFIG)
    foreign = {"generation": "someone else's", "versions": []}
    calls.before_commit.append(
        lambda: store.save_metadata("summary.versions", "s", foreign)
    )

    outcome = engine.compress("s").result(timeout=30)

    assert outcome.kind == "compressed", outcome.detail
    assert engine.summary("s").text == "Summary one."
    assert store.get_metadata("summary.versions", "s") == foreign
    assert store.lease_owner("s") is None


class OldStore:
    """A store of old: ``commit_compaction`` only; its second call can fail."""

    def __init__(self, *, failing_call: int = 0) -> None:
        self.store = InMemoryStore()
        self.calls = 0
        self.failing_call = failing_call

    def commit_compaction(self, session_id: str, **fields: Any) -> Any:
        self.calls += 1
        if self.calls == self.failing_call:
            raise StoreError("commit_compaction failed: the server is restarting")
        return self.store.commit(CommitRequest(session_id=session_id, **fields))


def _request(**overrides: Any) -> CommitRequest:
    fields: dict[str, Any] = {
        "session_id": "s",
        "namespace": "summary",
        "record": {"generation": "g1"},
        "expect_generation": None,
        "attach": AttachedRecord("lineage", {"generation": "l1"}, None),
        **overrides,
    }
    return CommitRequest(**fields)


def test_a_store_of_old_commits_the_attached_record_right_after():
    old = OldStore()

    result = CompactingCommit(old)(_request())

    assert result == CommitResult(attached=True)  # not released: the engine does it
    assert old.calls == 2
    assert old.store.get_metadata("lineage", "s") == {"generation": "l1"}


def test_a_failed_attached_record_of_a_store_of_old_keeps_the_commit(caplog):
    old = OldStore(failing_call=2)

    result = CompactingCommit(old)(_request())

    assert result == CommitResult(attached=False)
    assert old.store.get_metadata("summary", "s") == {"generation": "g1"}
    assert old.store.get_metadata("lineage", "s") is None
    assert "the attached record failed" in caplog.text


def test_a_fenced_commit_of_a_store_of_old_attaches_nothing():
    old = OldStore()

    result = CompactingCommit(old)(_request(expect_generation="g0"))

    assert result == CommitResult(fenced="generation")
    assert old.calls == 1


# -- stores written against the former port ----------------------------------------


def test_a_store_of_old_keeps_its_other_capabilities(make_engine):
    from memory_summary.domain.capabilities import store_capabilities

    calls = Calls(InMemoryStore(), legacy=True)
    with pytest.deprecated_call():
        make_engine(calls, ScriptedSummarizer("Summary one."), config=CONFIG)

    capabilities = store_capabilities(calls)

    assert capabilities.reads_window  # one read per compression, as before
    assert has_pop(calls)


def has_pop(store: Any) -> bool:
    from memory_summary.domain import PoppingStore
    from memory_summary.domain.capabilities import has_capability

    return has_capability(store, PoppingStore)


class Audited(InMemoryStore):
    """A shipped store's subclass that audits commits by the former method."""

    def __init__(self) -> None:
        super().__init__()
        self.audited: list[dict[str, Any]] = []

    def commit_compaction_with(self, session_id: str, **fields: Any) -> Any:
        self.audited.append(fields)
        return self.commit(CommitRequest(session_id=session_id, **fields))


def test_an_override_of_the_former_commit_keeps_being_called(make_engine):
    store = Audited()
    _fill(store, "s", 14)
    with pytest.deprecated_call():
        engine = make_engine(store, ScriptedSummarizer("Summary one."), config=CONFIG)

    outcome = engine.compress("s").result(timeout=30)

    assert outcome.kind == "compressed", outcome.detail
    assert len(store.audited) == 1
    assert store.audited[0]["release_lease"] is True
    assert store.audited[0]["attach"].namespace == "summary.versions"
    assert store.lease_owner("s") is None


class DatabaseStore:
    """A store of old with a ``commit()`` of its own (a database's, no request)."""

    def __init__(self) -> None:
        self.store = InMemoryStore()
        self.committed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def commit(self) -> None:  # commits the store's own transaction
        self.committed += 1

    def commit_compaction(
        self,
        session_id: str,
        *,
        namespace: str,
        record: Any,
        expect_generation: str | None,
        through_id: int | None = None,
        expect_archived: int = 0,
        lease: str | None = None,
        separator: Any = None,
    ) -> CommitResult:  # the former signature, keyword by keyword
        return self.store.commit(
            CommitRequest(
                session_id=session_id,
                namespace=namespace,
                record=record,
                expect_generation=expect_generation,
                through_id=through_id,
                expect_archived=expect_archived,
                lease=lease,
                separator=separator,
            )
        )


def test_a_store_of_old_with_a_commit_of_its_own_commits_the_former_way(make_engine):
    store = DatabaseStore()
    _fill(store.store, "s", 14)
    with pytest.deprecated_call():
        engine = make_engine(store, ScriptedSummarizer("Summary one."), config=CONFIG)

    outcome = engine.compress("s").result(timeout=30)

    assert outcome.kind == "compressed", outcome.detail
    assert engine.summary("s").text == "Summary one."
    assert store.committed == 0
    assert store.store.lease_owner("s") is None
