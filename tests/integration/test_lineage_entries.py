"""A compression encodes only its new summary version; the others' JSON is reused.

Reused only while the stored version is exactly the one written: a version a foreign
writer edited (keeping the row's generation, as a naive redaction script would) is
written back as stored, never as remembered.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import attrs
import pytest

from memory_summary import Message, SummaryConfig
from memory_summary.actors import lineage
from memory_summary.actors.lineage import VersionEntries
from memory_summary.adapters import SqliteStore
from memory_summary.domain import CommitRequest, CommitResult
from memory_summary.domain.lineage import VERSIONS_NAMESPACE, version_json
from memory_summary.domain.recall import SummaryVersion
from memory_summary.testing.fakes import ScriptedSummarizer
from tests.contract.conftest import FOREIGN_KINDS
from tests.contract.stores import STORE_KINDS, open_store, store_for, write_raw_metadata

CONFIG = SummaryConfig(threshold=10, keep_recent=4, summary_versions_kept=3)
SUMMARIES = [
    f"Summary {n}: the user asked about 「配送」 and order ORD-{n}."
    for n in range(1, 8)
]


@pytest.fixture(params=STORE_KINDS)
def store(request, tmp_path):
    yield from store_for(request, request.param, tmp_path)


def _fill(store: Any, count: int) -> None:
    for i in range(count):
        store.save_message("s", Message("user" if i % 2 == 0 else "assistant", f"t{i}"))


def _encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    made: list[int] = []

    def counted(version: SummaryVersion) -> str:
        made.append(version.version)
        return version_json(version)

    monkeypatch.setattr(lineage, "version_json", counted)
    return made


def test_each_compression_encodes_only_its_new_version(store, make_engine, monkeypatch):
    made = _encoded(monkeypatch)
    engine = make_engine(store, ScriptedSummarizer(*SUMMARIES), config=CONFIG)

    for _ in range(6):
        _fill(store, 8)
        assert engine.compress("s").result(timeout=30).kind == "compressed"

    assert made == [1, 2, 3, 4, 5, 6]  # each version once, when it was new
    history = engine.summary_history("s")
    assert [(v.version, v.summary) for v in history] == [
        (n, SUMMARIES[n - 1]) for n in (3, 4, 5, 6)
    ]
    stored = store.get_metadata(VERSIONS_NAMESPACE, "s")
    assert [v["summary"] for v in stored["versions"]] == SUMMARIES[2:6]


def test_a_lineage_read_back_as_written_is_not_decoded_again(
    store, make_engine, monkeypatch
):
    """The next compression reads back the record it wrote: equal to the one kept,
    it is not decoded version by version; one another writer changed is."""
    decoded: list[object] = []
    real = lineage.read_lineage

    def counted(data: object) -> Any:
        decoded.append(data)
        return real(data)

    monkeypatch.setattr(lineage, "read_lineage", counted)
    engine = make_engine(store, ScriptedSummarizer(*SUMMARIES), config=CONFIG)
    for _ in range(4):
        _fill(store, 8)
        assert engine.compress("s").result(timeout=30).kind == "compressed"
    assert len(decoded) == 1  # the first compression's read only

    row = store.get_metadata(VERSIONS_NAMESPACE, "s")
    row["versions"][1]["summary"] = "[redacted]"  # version 2; the same generation
    store.save_metadata(VERSIONS_NAMESPACE, "s", row)
    _fill(store, 8)
    assert engine.compress("s").result(timeout=30).kind == "compressed"

    assert len(decoded) == 2
    texts = [
        v["summary"] for v in store.get_metadata(VERSIONS_NAMESPACE, "s")["versions"]
    ]
    assert texts == ["[redacted]", SUMMARIES[2], SUMMARIES[3], SUMMARIES[4]]
    assert [v.summary for v in engine.summary_history("s")] == texts


def test_a_version_edited_by_a_foreign_writer_is_written_back_as_stored(
    store, make_engine, monkeypatch
):
    made = _encoded(monkeypatch)
    engine = make_engine(store, ScriptedSummarizer(*SUMMARIES), config=CONFIG)
    for _ in range(2):
        _fill(store, 8)
        assert engine.compress("s").result(timeout=30).kind == "compressed"
    # a redaction keeps the row's generation and changes version 1's text
    row = store.get_metadata(VERSIONS_NAMESPACE, "s")
    row["versions"][0]["summary"] = "[redacted]"
    store.save_metadata(VERSIONS_NAMESPACE, "s", row)

    _fill(store, 8)
    assert engine.compress("s").result(timeout=30).kind == "compressed"

    texts = [
        v["summary"] for v in store.get_metadata(VERSIONS_NAMESPACE, "s")["versions"]
    ]
    assert texts == ["[redacted]", SUMMARIES[1], SUMMARIES[2]]
    assert made == [1, 2, 1, 3]  # the edited one encoded again, from the store
    assert not any("ORD-1." in v.summary for v in engine.summary_history("s"))


@pytest.mark.parametrize("kind", FOREIGN_KINDS)
def test_a_lone_surrogate_a_foreign_writer_left_in_a_version_never_stalls(
    request, tmp_path, make_engine, kind
):
    """JSON escapes can spell a lone surrogate; kept as is, no write could keep it."""
    store = open_store(request, kind, tmp_path)
    engine = make_engine(store, ScriptedSummarizer(*SUMMARIES), config=CONFIG)
    for _ in range(2):
        _fill(store, 8)
        assert engine.compress("s").result(timeout=30).kind == "compressed"
    row = store.get_metadata(VERSIONS_NAMESPACE, "s")
    row["versions"][0]["summary"] = "Ada\ud800\x00 Lovelace"
    write_raw_metadata(store, VERSIONS_NAMESPACE, "s", json.dumps(row))

    _fill(store, 8)
    outcome = engine.compress("s").result(timeout=30)

    assert outcome.kind == "compressed", outcome.detail
    texts = [
        v["summary"] for v in store.get_metadata(VERSIONS_NAMESPACE, "s")["versions"]
    ]
    assert texts == ["Ada\ufffd Lovelace", SUMMARIES[1], SUMMARIES[2]]
    assert engine.summary_history("s")[0].summary == "Ada\ufffd Lovelace"


def test_forget_drops_what_the_engine_kept_of_the_session(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(*SUMMARIES), config=CONFIG)
    _fill(store, 12)
    assert engine.compress("s").result(timeout=30).kind == "compressed"
    assert engine._versions.chars > 0

    engine.forget("s")

    assert engine._versions.chars == 0


def _version(number: int, text: str) -> SummaryVersion:
    return SummaryVersion(number, number, number, 1.0, text)


def _write(entries: VersionEntries, sid: str, kept: list[SummaryVersion]) -> None:
    made, token = entries.entries(sid, kept)
    entries.written(sid, kept, made, token)


def test_the_entries_kept_stay_within_their_bound_least_recent_first():
    one, two = [_version(1, "a" * 100)], [_version(1, "b" * 100)]
    entries = VersionEntries(max_chars=2 * 1000 + 600)
    _write(entries, "s1", one)
    _write(entries, "s2", two)
    assert entries._by_session.keys() == {"s1", "s2"}
    _write(entries, "s3", one)  # s1 goes first

    assert entries.chars <= 2 * 1000 + 600
    assert entries._by_session.keys() == {"s2", "s3"}
    _write(entries, "s2", [_version(1, "c" * 3000)])
    assert entries._by_session.keys() == {"s3"}  # one larger than the bound: not kept
    entries.forget_all()
    assert entries.chars == 0


def test_a_write_that_began_before_a_forget_keeps_nothing():
    kept = [_version(1, "the forgotten summary")]
    entries = VersionEntries()
    made, token = entries.entries("s", kept)

    entries.forget("s")  # meanwhile: the host erases the session
    entries.written("s", kept, made, token)

    assert entries.chars == 0
    _write(entries, "s", kept)  # a write begun after it is kept
    assert entries.chars > 0


class RedactingStore(SqliteStore):
    """A store that redacts card numbers from the lineage, on a deep copy of it."""

    def commit(self, request: CommitRequest) -> CommitResult:
        attach = request.attach
        if attach is not None:
            record = copy.deepcopy(attach.record)
            for version in record.get("versions", []):
                version["summary"] = version["summary"].replace("4111", "[card]")
            redacted = attrs.evolve(attach, record=record)
            request = attrs.evolve(request, attach=redacted)
        return super().commit(request)


def test_a_store_that_redacts_a_copy_of_the_lineage_gets_its_redaction_stored(
    tmp_path, make_engine
):
    store = RedactingStore(tmp_path / "s.sqlite3")
    said = ["Summary: card 4111 on file.", "Summary: card 4111 still."]
    engine = make_engine(store, ScriptedSummarizer(*said), config=CONFIG)
    try:
        for _ in range(2):
            _fill(store, 8)
            assert engine.compress("s").result(timeout=30).kind == "compressed"

        stored = store.get_metadata(VERSIONS_NAMESPACE, "s")
        texts = [v["summary"] for v in stored["versions"]]
        assert texts == ["Summary: card [card] on file.", "Summary: card [card] still."]
    finally:
        engine.stop()
        store.close()
