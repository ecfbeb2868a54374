"""Summary integrity under faults, through the public engine API on every store.

Each test reproduces one fault that once corrupted, resurrected or stalled a session's
summary: a clear or a forget during a compression, a second engine on the same store,
records of foreign or corrupt shape, bad summarizer replies, outages and hung calls.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Sequence

import pytest

from memory_summary import (
    EngineClosed,
    Message,
    MessageError,
    SummarizerError,
    SummaryConfig,
)
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import (
    NAMESPACE,
    QUARANTINE_NAMESPACE,
    SummarizerContextError,
)
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.contract.conftest import FOREIGN_KINDS
from tests.contract.stores import (
    SQL_KINDS,
    every_store,
    open_store,
    run_sql,
    write_raw_metadata,
)
from tests.integration.conversation import fill, transcript_of

SMALL = SummaryConfig(threshold=10, keep_recent=4)
GOOD = "The user and the assistant discussed the weather forecast for Paris in detail."


def archived_ids(store, sid: str) -> list[int]:
    active = {m.id for m in store.get_history(sid)}
    return [m.id for m in store.get_full_history(sid) if m.id not in active]


def assert_every_archived_message_is_covered(engine, store, sid: str) -> None:
    """Invariant: each archived message is in the summary or a recorded range."""
    record = engine.summary(sid)
    covered = record.covered_through_id if record else None
    ranges = record.unsummarized if record else ()
    for mid in archived_ids(store, sid):
        in_summary = covered is not None and mid <= covered
        in_range = any(first <= mid <= last for first, last in ranges)
        assert in_summary or in_range, f"message {mid} archived but covered nowhere"


class GatedSummarizer(InstrumentedSummarizer):
    """Blocks every call until ``release`` is set; answers with a good summary."""

    def __init__(self) -> None:
        self.release = threading.Event()
        super().__init__(gate=self.release)

    def complete(self, messages: Sequence[Message], **kwargs: object) -> str:
        super().complete(messages, **kwargs)
        return f"{GOOD} (call {self.calls})"


# -- fenced commits ------------------------------------------------------------------


@every_store
def test_clear_during_a_compression_is_never_undone(store, make_engine):
    first = make_engine(store, ScriptedSummarizer(f"{GOOD} Old facts."), config=SMALL)
    fill(store, "s1", 10)
    first.compress("s1").result(timeout=10)
    first.stop()
    llm = GatedSummarizer()
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 10, start=10)

    future = engine.compress("s1")
    assert llm.entered.wait(10)
    engine.clear("session", "s1")
    llm.release.set()
    outcome = future.result(timeout=10)

    assert outcome.kind == "fenced"
    assert engine.summary("s1") is None
    assert engine.build_prompt("s1") is None
    assert store.count_history("s1") == 14  # nothing more was archived


@every_store
def test_forget_erases_everything_and_fences_a_running_compression(store, make_engine):
    llm = GatedSummarizer()
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)
    fill(store, "s2", 3)

    future = engine.compress("s1")
    assert llm.entered.wait(10)
    deleted = engine.forget("s1")
    llm.release.set()
    outcome = future.result(timeout=10)

    assert deleted == 12
    assert outcome.kind == "fenced"
    assert store.get_full_history("s1") == []
    assert store.get_metadata(NAMESPACE, "s1") is None
    assert engine.summary("s1") is None
    assert len(store.get_history("s2")) == 3


@every_store
def test_two_engines_on_one_store_never_compress_one_session_twice(store, make_engine):
    gate = GatedSummarizer()
    one = make_engine(store, gate, config=SMALL)
    two = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)

    running = one.compress("s1")
    assert gate.entered.wait(10)
    second = two.compress("s1").result(timeout=10)
    gate.release.set()
    first = running.result(timeout=10)

    assert second.kind == "skipped"
    assert "lease" in second.detail
    assert first.kind == "compressed"
    assert_every_archived_message_is_covered(one, store, "s1")


@every_store
def test_a_second_writer_that_changed_the_record_fences_the_commit(store, make_engine):
    llm = GatedSummarizer()
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)

    future = engine.compress("s1")
    assert llm.entered.wait(10)
    store.save_metadata(
        NAMESPACE,
        "s1",
        {"text": "x", "covered_through_id": None, "tokens": 1, "generation": "foreign"},
    )
    llm.release.set()

    assert future.result(timeout=10).kind == "fenced"
    assert store.count_history("s1") == 12


# -- poison-proof reads ----------------------------------------------------------------

POISON = [
    {"summary": 5},
    {},
    {"text": "t", "tokens": True, "covered_through_id": None},
    {"text": "t", "tokens": 1, "covered_through_id": None, "updated_at": 10**400},
    {"text": ["not", "text"], "tokens": 1, "covered_through_id": None},
]


@pytest.mark.parametrize("data", POISON, ids=range(len(POISON)))
def test_a_poisoned_record_never_raises_and_never_stalls_the_session(
    store, make_engine, data
):
    store.save_metadata(NAMESPACE, "s1", data)
    llm = ScriptedSummarizer(GOOD)
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)

    assert engine.build_prompt("s1") is None
    assert engine.summary("s1") is None
    assert [m.role for m in engine.assemble([Message("user", "hi")], "s1")] == ["user"]
    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    assert store.count_history("s1") == 4
    assert store.get_metadata(QUARANTINE_NAMESPACE, "s1") == data
    assert GOOD in engine.build_prompt("s1")


def test_undecodable_rows_from_a_foreign_writer_are_quarantined(
    tmp_path, make_engine, request
):
    import sqlite3

    from memory_summary.adapters import SqliteStore

    path = tmp_path / "foreign.sqlite3"
    store = SqliteStore(path)
    request.addfinalizer(store.close)  # never left to the collector (3.13 warns)
    for key, raw in [("s1", "{not json"), ("s2", '"a string"'), ("s3", "42")]:
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(
                "INSERT INTO metadata (namespace, key, data) VALUES (?, ?, ?)",
                (NAMESPACE, key, raw),
            )
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)

    for sid in ("s1", "s2", "s3"):
        fill(store, sid, 12)
        assert engine.build_prompt(sid) is None
        assert engine.compress(sid).result(timeout=10).kind == "compressed"
        assert GOOD in engine.build_prompt(sid)
    assert sorted(store.list_metadata(QUARANTINE_NAMESPACE)) == ["s1", "s2", "s3"]
    store.close()


@pytest.mark.parametrize("kind", FOREIGN_KINDS)
def test_a_record_with_a_lone_surrogate_escape_is_replaced_by_a_compression(
    request, tmp_path, make_engine, kind
):
    """Python's JSON reads one (normalized) where Redis's Lua cjson refused it."""
    store = open_store(request, kind, tmp_path)
    write_raw_metadata(
        store,
        NAMESPACE,
        "s1",
        '{"text": "Ada\\ud800 Lovelace.", "tokens": 3, "covered_through_id": null}',
    )
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)

    assert "Ada\ufffd Lovelace." in engine.build_prompt("s1")
    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed", outcome.detail
    assert GOOD in engine.build_prompt("s1")
    assert store.count_history("s1") == 4


@pytest.mark.parametrize("kind", FOREIGN_KINDS)
def test_a_native_artifact_with_a_lone_surrogate_never_fails_the_next_commit(
    request, tmp_path, make_engine, kind
):
    """A rejected summary still archives: the previous record is written back."""
    store = open_store(request, kind, tmp_path)
    native = {
        "provider": "anthropic",
        "model": "claude\udfff",
        "block": {"type": "compaction", "content": "Likes tea."},
        "beside": "Pinned: \ud800",
    }
    record = {"text": "A summary.", "tokens": 3, "covered_through_id": None}
    write_raw_metadata(store, NAMESPACE, "s1", json.dumps({**record, "native": native}))
    engine = make_engine(store, ScriptedSummarizer("ok"), config=SMALL)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    assert (outcome.kind, outcome.code) == ("trimmed", "summary_rejected")
    assert store.count_history("s1") == 4
    kept = engine.summary("s1").native
    assert (kept.model, kept.beside) == ("claude\ufffd", "Pinned: \ufffd")


@pytest.mark.parametrize("kind", FOREIGN_KINDS)
def test_build_prompt_sees_a_foreign_writer_between_two_calls(
    request, tmp_path, make_engine, kind
):
    """The record the engine committed and read is never trusted blindly.

    Between two ``build_prompt`` calls that find the store unchanged (the second
    one served by every cache: the store's written text, the reader's generation,
    the prompt's text), another program replaces the record, then deletes it: each
    next call says what the store holds now.
    """
    store = open_store(request, kind, tmp_path)
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)
    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    assert GOOD in engine.build_prompt("s1")
    assert GOOD in engine.build_prompt("s1")

    foreign = {"text": "Foreign: the user is Ada.", "tokens": 8}
    record = {**foreign, "covered_through_id": None, "generation": "theirs"}
    write_raw_metadata(store, NAMESPACE, "s1", json.dumps(record))
    seen = engine.build_prompt("s1")
    assert "Foreign: the user is Ada." in seen
    assert GOOD not in seen

    again = {**record, "text": "Other.", "generation": "theirs-2"}
    write_raw_metadata(store, NAMESPACE, "s1", json.dumps(again))
    assert "Other." in engine.build_prompt("s1")

    if kind == "redis":
        return  # no raw delete helper for Redis: the rewrites above are the check
    run_sql(
        store,
        "DELETE FROM {t}metadata WHERE namespace = ? AND key = ?",
        (NAMESPACE, "s1"),
    )
    assert engine.build_prompt("s1") is None


@pytest.mark.parametrize("kind", SQL_KINDS)
def test_build_prompt_copies_an_unchanged_record_out_of_no_sql_store(
    request, tmp_path, make_engine, kind, monkeypatch
):
    """The record read before is checked in the read, not copied out and compared."""
    store = open_store(request, kind, tmp_path)
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)
    engine.compress("s1").result(timeout=10)
    first = engine.build_prompt("s1")
    copies = []
    read = store.get_metadata
    monkeypatch.setattr(store, "get_metadata", lambda *a: copies.append(a) or read(*a))

    assert [engine.build_prompt("s1") for _ in range(3)] == [first] * 3
    assert copies == []


def test_the_original_plugins_record_is_read_as_the_previous_summary(
    store, make_engine
):
    store.save_metadata(
        NAMESPACE,
        "s1",
        {"summary": "Legacy: the user is Ada.", "coveredUpTo": 40, "messageCount": 40},
    )
    llm = ScriptedSummarizer(GOOD)
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)

    assert "Legacy: the user is Ada." in engine.build_prompt("s1")
    engine.compress("s1").result(timeout=10)

    assert "Legacy: the user is Ada." in llm.calls[0][-1].content
    assert engine.summary("s1").text.startswith(GOOD)


# -- validated output ------------------------------------------------------------------

REJECTED = {
    "refusal": "I'm sorry, but I can't help with that.",
    "provider_error": "Error: 429 Too Many Requests - rate limit exceeded",
    "too_short": "ok",
    "empty": "   \n ",
}


@pytest.mark.parametrize("reason", sorted(REJECTED))
def test_a_bad_reply_is_never_stored_and_the_reason_is_named(
    store, make_engine, reason
):
    engine = make_engine(store, ScriptedSummarizer(REJECTED[reason]), config=SMALL)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "trimmed"
    assert reason in outcome.detail
    record = engine.summary("s1")
    assert record is None or record.text == ""
    assert_every_archived_message_is_covered(engine, store, "s1")


def test_an_echo_of_the_transcript_is_rejected(store, make_engine):
    class Echo(ScriptedSummarizer):
        def complete(self, messages, **kwargs):
            super().complete(messages, **kwargs)
            return transcript_of(messages)

    engine = make_engine(store, Echo(), config=SMALL)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "trimmed"
    assert "echo" in outcome.detail


def test_reasoning_and_echoed_tags_are_stripped_before_storing(store, make_engine):
    reply = (
        f"<think>the user wants a summary</think><conversation>{GOOD}</conversation>"
    )
    engine = make_engine(store, ScriptedSummarizer(reply), config=SMALL)
    fill(store, "s1", 12)

    engine.compress("s1").result(timeout=10)

    text = engine.summary("s1").text
    assert GOOD in text
    assert "<think>" not in text
    assert "<conversation>" not in text
    assert "the user wants a summary" not in text


@every_store
def test_a_lone_surrogate_in_a_reply_is_normalized_on_every_store(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(f"{GOOD} \ud800 end"), config=SMALL)
    fill(store, "s1", 12)
    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    fill(store, "s1", 12, start=12)

    assert engine.compress("s1").result(timeout=10).kind == "compressed"

    engine.build_prompt("s1").encode("utf-8")
    assert "\ufffd" in engine.summary("s1").text


def test_a_huge_reply_is_stored_within_its_budget(store, make_engine):
    huge = " ".join(f"word{i}" for i in range(1_000_000))  # about 6 MB
    engine = make_engine(
        store,
        ScriptedSummarizer(huge),
        config=SMALL,
        count_tokens_for=lambda model: len,
    )
    fill(store, "s1", 12)

    engine.compress("s1").result(timeout=30)

    record = engine.summary("s1")
    assert record.tokens <= 512  # the budget at an 8,192-token context
    assert len(record.text) <= 512


# -- outages ---------------------------------------------------------------------------


def test_an_outage_trims_records_the_ranges_and_recovers_them_later(store, make_engine):
    down = SummarizerError("connection refused")
    llm = ScriptedSummarizer(down, down, down, f"{GOOD} Recovered.")
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)
    assert engine.compress("s1").result(timeout=10).kind == "trimmed"
    fill(store, "s1", 10, start=12)
    assert engine.compress("s1").result(timeout=10).kind == "trimmed"
    pending = engine.summary("s1").unsummarized
    assert pending
    assert_every_archived_message_is_covered(engine, store, "s1")

    outcome = engine.resummarize("s1").result(timeout=10)

    assert outcome.recovered == len(archived_ids(store, "s1"))
    record = engine.summary("s1")
    assert record.unsummarized == ()
    assert "Recovered." in record.text
    recovered_input = "".join(m.content for m in llm.calls[-1])
    assert "message 0 of s1." in recovered_input


def test_the_breaker_stops_calls_while_open(store, make_engine):
    llm = ScriptedSummarizer(SummarizerError("down"))
    config = SummaryConfig(
        threshold=10, keep_recent=4, breaker_failures=2, breaker_cooldown_s=3600
    )
    engine = make_engine(store, llm, config=config)

    for start in range(0, 50, 10):
        fill(store, "s1", 10, start=start)
        engine.compress("s1").result(timeout=10)

    assert len(llm.calls) == 2
    assert_every_archived_message_is_covered(engine, store, "s1")


def test_keep_mode_leaves_the_history_active_during_an_outage(store, make_engine):
    llm = ScriptedSummarizer(SummarizerError("down"))
    config = SummaryConfig(threshold=10, keep_recent=4, on_summarizer_failure="keep")
    engine = make_engine(store, llm, config=config)
    fill(store, "s1", 12)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "failed"
    assert store.count_history("s1") == 12
    assert archived_ids(store, "s1") == []


# -- deadlines and limits --------------------------------------------------------------


class HungForOneSession(ScriptedSummarizer):
    """Never answers for session ``stuck`` (until released); answers well otherwise."""

    def __init__(self) -> None:
        super().__init__(GOOD)
        self.entered = threading.Event()
        self.release = threading.Event()

    def complete(self, messages, **kwargs):
        if "of stuck." in messages[-1].content:
            self.entered.set()
            self.release.wait(60)
        return super().complete(messages, **kwargs)


def test_a_hung_call_does_not_hold_the_slot_other_sessions_need(make_engine):
    from memory_summary.adapters import InMemoryStore

    store = InMemoryStore()
    llm = HungForOneSession()
    config = SummaryConfig(
        threshold=10, keep_recent=4, max_concurrent_summaries=1, summarizer_timeout_s=1
    )
    engine = make_engine(store, llm, config=config)
    fill(store, "stuck", 12)
    fill(store, "ok", 12)

    stuck = engine.compress("stuck")
    assert llm.entered.wait(10)
    assert stuck.result(timeout=10).kind == "trimmed"
    outcome = engine.compress("ok").result(timeout=10)

    assert outcome.kind == "compressed"  # the stuck call holds no slot
    llm.release.set()


def test_context_errors_are_retried_once_at_half_size(store, make_engine):
    class Small(ScriptedSummarizer):
        def complete(self, messages, **kwargs):
            super().complete(messages, **kwargs)
            lines = transcript_of(messages).splitlines()
            if len(lines) > 3:
                raise SummarizerContextError("maximum context length exceeded")
            return f"{GOOD} ({len(lines)} lines)"

    llm = Small()
    engine = make_engine(store, llm, config=SMALL, count_tokens_for=lambda m: len)
    fill(store, "s1", 10)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    assert outcome.summarizer_calls >= 3
    assert store.count_history("s1") == 4


def test_the_previous_summary_counts_against_the_input_limit(store, make_engine):
    llm = ScriptedSummarizer(GOOD * 40, context=4096)
    engine = make_engine(store, llm, config=SMALL, count_tokens_for=lambda m: len)
    fill(store, "s1", 12)
    engine.compress("s1").result(timeout=10)
    for i in range(12, 40):
        store.save_message("s1", Message("user", f"{i} " + "x" * 300))

    engine.compress("s1").result(timeout=10)

    for request in llm.calls:
        assert sum(len(m.content) for m in request) <= 4096


# -- contract gaps ---------------------------------------------------------------------


def test_calls_after_stop_raise_even_when_they_would_do_nothing(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(GOOD))
    engine.start()
    engine.stop()

    with pytest.raises(EngineClosed):
        engine.turn_after("s1", outcome="aborted")
    with pytest.raises(EngineClosed):
        engine.token_usage("s1", 0.01)


def test_a_lone_surrogate_in_a_session_id_names_the_field(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(GOOD))

    with pytest.raises(MessageError, match="session_id"):
        engine.turn_after("s\ud800")


@every_store
def test_a_lease_left_by_a_dead_process_of_this_host_is_broken(store, make_engine):
    import os
    import socket
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    namespace = os.stat("/proc/self/ns/pid").st_ino
    owner = f"{socket.gethostname()}:{dead.pid}:{namespace}:x"
    store.acquire_lease("s1", owner=owner, ttl_s=600)
    store.acquire_lease("s2", owner="elsewhere:1:x", ttl_s=600)
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 12)
    fill(store, "s2", 12)

    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    assert engine.compress("s2").result(timeout=10).kind == "skipped"  # a live holder


@every_store
def test_clearing_a_migrated_record_during_a_compression_is_never_undone(
    store, make_engine
):
    store.save_metadata(
        NAMESPACE,
        "s1",
        {"summary": "Legacy: the user is Ada.", "coveredUpTo": 4, "messageCount": 4},
    )
    llm = GatedSummarizer()
    engine = make_engine(store, llm, config=SMALL)
    fill(store, "s1", 12)

    future = engine.compress("s1")
    assert llm.entered.wait(10)
    engine.clear("session", "s1")
    llm.release.set()

    assert future.result(timeout=10).kind == "fenced"
    assert engine.summary("s1") is None


def test_resummarize_during_an_outage_says_it_failed(store, make_engine):
    down = SummarizerError("connection refused")
    engine = make_engine(store, ScriptedSummarizer(down), config=SMALL)
    fill(store, "s1", 12)
    assert engine.compress("s1").result(timeout=10).kind == "trimmed"

    outcome = engine.resummarize("s1").result(timeout=10)

    assert outcome.kind == "failed"
    assert "recovery paused" in outcome.detail
    assert engine.summary("s1").unsummarized


def test_a_context_error_while_recovering_is_retried_at_half_size(store, make_engine):
    class Small(ScriptedSummarizer):
        def __init__(self):
            super().__init__(SummarizerError("down"))
            self.up = False

        def complete(self, messages, **kwargs):
            if not self.up:
                return super().complete(messages, **kwargs)
            lines = transcript_of(messages).splitlines()
            if len(lines) > 4:
                raise SummarizerContextError("maximum context length exceeded")
            return f"{GOOD} ({len(lines)} lines)"

    llm = Small()
    engine = make_engine(store, llm, config=SMALL, count_tokens_for=lambda m: len)
    fill(store, "s1", 12)
    assert engine.compress("s1").result(timeout=10).kind == "trimmed"
    llm.up = True

    outcome = engine.resummarize("s1").result(timeout=10)

    assert outcome.recovered == 8
    assert engine.summary("s1").unsummarized == ()


@every_store
@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
def test_a_record_covering_ids_not_yet_saved_never_hides_the_new_turn(
    store, make_engine, format
):
    """A foreign record whose covered id runs past the store's (ids restarted)."""
    store.save_metadata(
        NAMESPACE,
        "s1",
        {
            "text": "Foreign: the user is Ada.",
            "covered_through_id": 10**12,
            "tokens": 5,
        },
    )
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    fill(store, "s1", 2)
    chat = engine.conversation("s1")

    request = json.dumps(chat.prepare("Is it sunny in Paris?", format=format))

    assert "Is it sunny in Paris?" in request
    assert "Foreign: the user is Ada." in request
    assert all(m.content in request for m in store.get_history("s1"))


@every_store
def test_assemble_never_lets_a_record_covering_ids_past_the_store_hide_history(
    store, make_engine, caplog
):
    """``assemble`` guards as ``Conversation.prepare`` does (ids restarted, say)."""
    store.save_metadata(
        NAMESPACE,
        "s1",
        {
            "text": "Foreign: the user is Ada.",
            "covered_through_id": 10**12,
            "tokens": 5,
        },
    )
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    history = fill(store, "s1", 3)

    with caplog.at_level("WARNING", logger="memory_summary"):
        request = engine.assemble(history, "s1")

    assert "Foreign: the user is Ada." in request[0].content
    assert [m.id for m in request[1:]] == [m.id for m in history]
    assert "none of the history is taken as covered" in caplog.text


@every_store
def test_assemble_still_drops_what_a_record_covers_up_to_the_newest_stored(
    store, make_engine, caplog
):
    """The race the drop exists for: a history read before a compression committed."""
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    history = fill(store, "s1", 4)
    for covered, keep in ((history[1].id, 2), (history[3].id, 0)):
        store.trim_history("s1", keep)  # what the compression archived
        store.save_metadata(
            NAMESPACE,
            "s1",
            {"text": "Summary.", "covered_through_id": covered, "tokens": 2},
        )

        request = engine.assemble(history, "s1")

        assert [m.id for m in request[1:]] == [m.id for m in history if m.id > covered]
    assert "taken as covered" not in caplog.text


def _covering(store, covered: int) -> None:
    store.save_metadata(
        NAMESPACE,
        "s1",
        {"text": "Summary.", "covered_through_id": covered, "tokens": 2},
    )


@every_store
def test_assemble_never_drops_an_active_message_a_record_claims(
    store, make_engine, caplog
):
    """A summary covers only what was archived: a claim over active ones is cut.

    Before, every message up to the claimed id was dropped from the request, the
    active ones too, though no summary holds them.
    """
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    history = [
        store.save_message("s1", Message("system", "Be brief.")),  # kept active
        *fill(store, "s1", 6),
    ]
    store.trim_history("s1", 4)  # archives messages 0 and 1; the system one stays
    _covering(store, history[4].id)  # a foreign claim over two active messages

    with caplog.at_level("WARNING", logger="memory_summary"):
        request = engine.assemble(history, "s1")

    kept = [history[0], *history[3:]]
    assert [m.id for m in request if m.kind is None] == [m.id for m in kept]
    assert "message 1 of s1." not in json.dumps([m.content for m in request])
    assert "still active" in caplog.text


@every_store
@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
def test_a_conversation_never_drops_an_active_message_a_record_claims(
    store, make_engine, format
):
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    history = fill(store, "s1", 6)
    store.trim_history("s1", 4)
    chat = engine.conversation("s1")
    chat.prepare(format=format)  # the transcript is read before the claim
    _covering(store, history[-1].id)

    request = json.dumps(chat.prepare("And tomorrow?", format=format))

    assert all(m.content in request for m in history[2:])
    assert "message 0 of s1." not in request
    assert "And tomorrow?" in request


@pytest.mark.parametrize("covered", [-1, -(10**30), 2.5, "3", True, [1, 2]], ids=repr)
def test_a_record_whose_covered_id_is_no_id_drops_nothing(make_engine, covered):
    """Such a record is unreadable (``read_record``): no summary, the whole history."""
    store = InMemoryStore()
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    history = fill(store, "s1", 4)
    store.save_metadata(
        NAMESPACE,
        "s1",
        {"text": "Foreign.", "covered_through_id": covered, "tokens": 2},
    )

    request = engine.assemble(history, "s1")
    prepared = json.dumps(engine.conversation("s1").prepare("Hi?"))

    assert [m.id for m in request] == [m.id for m in history]
    assert all(m.content in prepared for m in history)
    assert "Foreign." not in prepared


class _CountingStore(InMemoryStore):
    """An in-memory store that counts the history reads made of it."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get_history(self, session_id, limit=None):
        self.reads.append("get_history")
        return super().get_history(session_id, limit)

    def get_full_history(self, session_id, limit=None):
        self.reads.append("get_full_history")
        return super().get_full_history(session_id, limit)

    def get_oldest_history(self, session_id, limit, after_id=None):
        self.reads.append("get_oldest_history")
        return super().get_oldest_history(session_id, limit, after_id=after_id)

    def active_span(self, session_id):
        self.reads.append("active_span")
        return super().active_span(session_id)


@pytest.mark.parametrize("instruction", [False, True], ids=["plain", "kept system"])
def test_assemble_reads_the_store_once_for_a_host_that_resends_everything(
    make_engine, instruction
):
    """A stateless host resends its whole history: each turn drops what is covered.

    Before, each such turn read the newest message, then the oldest active ones; the
    active span tells both, and the oldest are paged only when the span reaches the
    summary's covered id (the host's instructions kept below it).
    """
    store = _CountingStore()
    engine = make_engine(store, ScriptedSummarizer(GOOD), config=SMALL)
    system = (
        [store.save_message("s1", Message("system", "Be brief."))]
        if instruction
        else []
    )
    history = [*system, *fill(store, "s1", 10)]
    store.trim_history("s1", 4)
    _covering(store, history[-5].id)  # what the trim archived
    store.reads.clear()

    for _turn in range(3):
        request = engine.assemble(history, "s1")

        kept = [*system, *history[-4:]]
        assert [m.id for m in request if m.kind is None] == [m.id for m in kept]
    per_turn = ["active_span", *(["get_oldest_history"] if instruction else [])]
    assert store.reads == per_turn * 3
