"""One test per seed rule, through the public engine API, with fake summarizers."""

from __future__ import annotations

import logging
import threading

import pytest

from memory_summary import (
    ClearResult,
    Compressing,
    CompressRequested,
    EngineClosed,
    LLMRef,
    Message,
    SummaryConfig,
    ToolCall,
)
from memory_summary.adapters import InMemoryArchive, InMemoryStore, TiktokenCounter
from memory_summary.domain import SUMMARY_KIND, SummaryRecord
from memory_summary.domain.injection import HEADERS, TRUNCATION_SUFFIXES
from memory_summary.domain.prompt import AUTO_HINTS
from memory_summary.domain.summary import NAMESPACE
from memory_summary.testing.fakes import (
    InstrumentedSummarizer,
    ScriptedSummarizer,
    StreamingScripted,
)
from tests.integration.conversation import fill, transcript_of

O200K = TiktokenCounter("o200k_base")
SUMMARY = "The user and the assistant exchanged numbered messages about the weather."
OLD = "Old summary: the user asked twice about the weather in Paris."


def statuses(events, session_id="s1"):
    return [
        e.status
        for e in events
        if isinstance(e, Compressing) and e.session_id == session_id
    ]


def test_default_30_20_with_a_120_message_backlog_summarizes_100(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    messages = fill(store, "s1", 120)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    assert [m.id for m in store.get_history("s1")] == [m.id for m in messages[100:]]
    assert len(transcript_of(llm.calls[0]).splitlines()) == 100
    assert engine.summary("s1").covered_through_id == messages[99].id


def test_threshold_above_the_200_probe_floor_still_fires(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm, config=SummaryConfig(threshold=250))
    fill(store, "s1", 250)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    assert store.count_history("s1") == 20
    assert len(store.get_full_history("s1")) == 250


def test_below_threshold_nothing_changes(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 29)

    engine.turn_after("s1")

    assert engine.wait_idle(timeout=10)
    assert store.count_history("s1") == 29
    assert llm.calls == []
    assert events == []


@pytest.mark.parametrize("outcome", ["aborted", "error"])
def test_aborted_and_error_turns_do_nothing(store, make_engine, outcome):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    fill(store, "s1", 60)

    engine.turn_after("s1", outcome=outcome)

    assert engine.wait_idle(timeout=10)
    assert store.count_history("s1") == 60
    assert llm.calls == []


@pytest.mark.parametrize(
    ("ratio", "compresses"), [(0.7, True), (0.95, True), (0.69, False)]
)
def test_token_usage_at_or_above_the_threshold_compresses_in_the_background(
    store, make_engine, ratio, compresses
):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 25)  # below the count threshold: only the token trigger can fire

    engine.token_usage("s1", ratio)

    assert engine.wait_idle(timeout=10)
    requested = [e for e in events if isinstance(e, CompressRequested)]
    if compresses:
        assert requested == [CompressRequested("s1", "auto", ratio)]
        assert store.count_history("s1") == 20
        assert statuses(events) == ["start", "done"]
        assert AUTO_HINTS["en"] in llm.calls[0][0].content
    else:
        assert requested == []
        assert store.count_history("s1") == 25


def test_token_trigger_disabled_by_zero(store, make_engine):
    engine = make_engine(
        store,
        ScriptedSummarizer(SUMMARY),
        config=SummaryConfig(auto_compress_threshold=0),
    )
    fill(store, "s1", 25)

    engine.token_usage("s1", 1.0)

    assert engine.wait_idle(timeout=10)
    assert store.count_history("s1") == 25


def test_usage_ratio_must_be_a_non_negative_number(store, make_engine):
    engine = make_engine(store)

    for bad in (-0.1, float("nan"), "0.8", True):
        with pytest.raises(ValueError, match="usage_ratio"):
            engine.token_usage("s1", bad)


def test_manual_compress_ignores_the_threshold(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY))
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 25)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    assert outcome.archived == 5
    assert statuses(events) == ["start", "done"]


def test_manual_compress_with_nothing_beyond_keep_recent_reports_done(
    store, make_engine
):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 20)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "skipped"
    assert statuses(events) == ["start", "done"]
    assert llm.calls == []


def test_compress_rejects_an_unknown_reason(store, make_engine):
    with pytest.raises(ValueError, match="reason"):
        make_engine(store).compress("s1", reason="because")


@pytest.mark.parametrize(
    "make_failing",
    [
        lambda: ScriptedSummarizer(OLD, RuntimeError("provider down")),
        lambda: ScriptedSummarizer(OLD, ""),
        lambda: ScriptedSummarizer(OLD, "   \n"),
        lambda: StreamingScripted(OLD, "partial text that breaks"),
    ],
    ids=["raises", "empty", "blank", "broken-stream"],
)
def test_failed_summary_trims_and_keeps_the_old_summary(
    store, make_engine, make_failing
):
    failing = make_failing()
    engine = make_engine(store, failing, archive=InMemoryArchive())
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 30)
    engine.turn_after("s1")
    assert engine.wait_idle(timeout=10)
    old = engine.summary("s1")
    assert old.text == OLD
    if isinstance(failing, StreamingScripted):
        failing.break_after = 2
    events.clear()

    fill(store, "s1", 30, start=30)
    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "trimmed"
    kept = engine.summary("s1")
    assert (kept.text, kept.covered_through_id) == (old.text, old.covered_through_id)
    assert kept.unsummarized  # the trimmed range is recorded for recovery
    assert store.count_history("s1") == 20  # still trimmed: no retry loop
    assert statuses(events) == ["start", "error"]
    assert events[-1].detail.startswith(("summarizer failed", "summary rejected"))


def test_a_partial_stream_is_never_stored(store, make_engine):
    llm = StreamingScripted("alpha beta gamma delta epsilon zeta", break_after=2)
    engine = make_engine(store, llm)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert llm.streamed == ["alpha", "beta"]
    assert outcome.kind == "trimmed"
    assert engine.summary("s1").text == ""  # a record of the trimmed range only
    assert engine.build_prompt("s1") is None


def test_a_whole_stream_is_stored(store, make_engine):
    engine = make_engine(store, StreamingScripted("alpha beta gamma delta epsilon"))
    fill(store, "s1", 30)

    engine.compress("s1").result(timeout=10)

    assert engine.summary("s1").text == "alpha beta gamma delta epsilon"


def test_a_slow_summarizer_times_out_and_degrades(store, make_engine):
    gate = threading.Event()
    llm = InstrumentedSummarizer(gate=gate)
    engine = make_engine(store, llm, config=SummaryConfig(summarizer_timeout_s=0.2))
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)
    gate.set()

    assert outcome.kind == "trimmed"
    assert "0.2 s" in outcome.detail
    assert engine.summary("s1").text == ""
    assert engine.build_prompt("s1") is None


def test_summarizer_gets_temperature_03_and_max_tokens_equal_to_the_budget(
    store, make_engine
):
    llm = ScriptedSummarizer(SUMMARY, context=100_000)
    engine = make_engine(store, llm)
    fill(store, "s1", 30)

    engine.compress("s1").result(timeout=10)

    # the budget (100,000 x 0.05) less the injected header, which the summary shares
    summary_budget = 5000 - O200K.count(HEADERS["en"] + "\n")
    assert llm.kwargs[0]["temperature"] == 0.3
    assert llm.kwargs[0]["max_tokens"] == summary_budget
    assert f"{summary_budget} tokens" in llm.calls[0][0].content


def test_clear_with_and_without_types(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY))
    for sid in ("s1", "s2", "s3"):
        fill(store, sid, 30)
        engine.compress(sid).result(timeout=10)

    assert engine.clear("session", "s1", types=["history"]) == []
    assert engine.summary("s1") is not None
    assert engine.clear("session", "s1", types=["summary", "history"]) == [
        ClearResult("summary", True, "cleared the summary of session s1")
    ]
    assert engine.summary("s1") is None
    assert engine.clear("session", "s1")[0].message == "no summary of session s1"
    assert engine.clear("all") == [ClearResult("summary", True, "cleared 2 summaries")]
    assert engine.summary("s2") is None
    assert engine.summary("s3") is None
    with pytest.raises(ValueError, match="scope"):
        engine.clear("everything")


@pytest.mark.parametrize("types", [["summry"], ["Summary"], ["memory", "summaries"]])
def test_clear_skips_a_misspelled_summary_type_with_a_warning_naming_it(
    store, make_engine, types, caplog
):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    with caplog.at_level(logging.WARNING, logger="memory_summary.engine"):
        assert engine.clear("session", "s1", types=types) == []  # SPEC 7: skips

    assert engine.summary("s1") is not None
    assert f"{types[-1]!r}" in caplog.text
    assert "did you mean" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memory_summary.engine"):
        assert engine.clear("session", "s1", types=["memory"]) == []
    assert caplog.text == ""
    assert engine.summary("s1") is not None


def test_clear_reads_a_generator_of_types_once(store, make_engine):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    types = (name for name in ["memory", "summary"])
    results = engine.clear("session", "s1", types=types)  # type: ignore[arg-type]

    assert [r.success for r in results] == [True]
    assert engine.summary("s1") is None


def test_injection_goes_after_the_leading_system_block_and_is_idempotent(
    store, make_engine
):
    engine = make_engine(store, ScriptedSummarizer("User lives in Oslo."))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)
    messages = [
        Message("system", "You are helpful."),
        Message("user", "Where do I live?"),
    ]

    once = engine.assemble(messages, "s1")
    twice = engine.assemble(once, "s1")

    assert [m.role for m in once] == ["system", "system", "user"]
    assert once[1].kind == SUMMARY_KIND
    assert once[1].content == HEADERS["en"] + "\nUser lives in Oslo."
    assert twice == once


def test_sessions_are_isolated(store, make_engine):
    llm = ScriptedSummarizer(f"{SUMMARY} One.")
    engine = make_engine(store, llm)
    fill(store, "one", 30)
    fill(store, "two", 10)

    engine.compress("one").result(timeout=10)

    assert engine.build_prompt("two") is None
    assert store.count_history("two") == 10
    assert engine.assemble([Message("user", "x")], "two") == [Message("user", "x")]


def test_injected_summary_is_cut_to_the_budget_with_the_4096_fallback(
    store, make_engine
):
    long_summary = "Fact: the user likes long answers. " * 400
    engine = make_engine(store, ScriptedSummarizer(long_summary, context=None))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    text = engine.build_prompt("s1")

    # unknown context: 4096 x 0.05 = 204, floor 512 tokens
    assert O200K.count(text) <= 512
    assert O200K.count(text) > 450
    assert text.endswith(TRUNCATION_SUFFIXES["en"])


def test_budget_follows_the_summary_models_context_length(store, make_engine):
    long_summary = "word " * 20_000
    engine = make_engine(store, ScriptedSummarizer(long_summary, context=200_000))
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    assert 9_000 < O200K.count(engine.build_prompt("s1")) <= 10_000


def test_chinese_locale_injects_the_chinese_header(store, make_engine):
    engine = make_engine(
        store, ScriptedSummarizer("用户住在上海。"), config=SummaryConfig(locale="zh")
    )
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)

    assert engine.build_prompt("s1") == HEADERS["zh"] + "\n用户住在上海。"


def test_separator_event_messages_say_compressed_or_trimmed(store, make_engine):
    archive = InMemoryArchive()
    engine = make_engine(
        store, ScriptedSummarizer(SUMMARY, RuntimeError("down")), archive=archive
    )
    fill(store, "s1", 30)
    engine.compress("s1").result(timeout=10)
    fill(store, "s1", 15, start=30)
    engine.compress("s1").result(timeout=10)

    markers = archive.messages("s1")

    assert [(m.role, m.kind) for m in markers] == [("system", "event-marker")] * 2
    assert "compressed: 10 earlier messages" in markers[0].content
    assert "trimmed: 15 earlier messages" in markers[1].content


def test_the_latest_todo_list_call_in_the_kept_part_is_sent_as_task_state(
    store, make_engine
):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    fill(store, "s1", 25)
    store.save_message(
        "s1",
        Message(
            "assistant",
            "",
            tool_calls=[ToolCall("t1", "manage_todo_list", '["write tests"]')],
        ),
    )
    store.save_message("s1", Message("tool", "ok", tool_call_id="t1"))

    engine.compress("s1", reason="auto").result(timeout=10)

    request = llm.calls[0][-1].content
    assert "<current_task_state>" in request
    assert 'manage_todo_list(["write tests"])' in request


def test_tool_groups_are_never_split_by_the_engine(store, make_engine):
    engine = make_engine(
        store, ScriptedSummarizer(SUMMARY), config=SummaryConfig(keep_recent=2)
    )
    fill(store, "s1", 10)
    store.save_message(
        "s1", Message("assistant", "", tool_calls=[ToolCall("c", "f", "{}")])
    )
    store.save_message("s1", Message("tool", "r", tool_call_id="c"))
    store.save_message("s1", Message("user", "thanks"))

    engine.compress("s1").result(timeout=10)

    assert [m.role for m in store.get_history("s1")] == ["assistant", "tool", "user"]


def test_custom_mode_uses_the_registered_provider_and_model(store, make_engine):
    custom = ScriptedSummarizer(f"{SUMMARY} From custom.")
    default = ScriptedSummarizer(f"{SUMMARY} From default.")
    config = SummaryConfig(
        summary_model_mode="custom", summary_llm=LLMRef("local", "qwen-7b")
    )
    engine = make_engine(store, default, config=config, llms={"local": custom})
    fill(store, "s1", 30)

    engine.compress("s1").result(timeout=10)

    assert default.calls == []
    assert custom.kwargs[0]["model"] == "qwen-7b"
    assert engine.summary("s1").model == "qwen-7b"


def test_custom_mode_with_a_missing_provider_reports_an_error_event(store, make_engine):
    config = SummaryConfig(summary_model_mode="custom", summary_llm=LLMRef("nope", "m"))
    engine = make_engine(
        store, ScriptedSummarizer(SUMMARY), config=config, llms={"other": object()}
    )
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "failed"
    assert statuses(events) == ["start", "error"]
    assert "'nope' is not registered (registered: other)" in events[-1].detail
    assert store.count_history("s1") == 30  # nothing applied


def test_session_mode_uses_the_model_of_the_sessions_last_turn(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm, config=SummaryConfig(summary_model_mode="session"))
    fill(store, "s1", 29)
    engine.turn_after("s1", model="gpt-4o-mini")
    fill(store, "s1", 1, start=29)

    engine.turn_after("s1", model="gpt-4.1")

    assert engine.wait_idle(timeout=10)
    assert [kw["model"] for kw in llm.kwargs] == ["gpt-4.1"]


def test_offline_default_summarizer_is_labelled_extractive(store, make_engine):
    engine = make_engine(store)  # no llm: the embedded extractive summarizer
    fill(store, "s1", 30)

    engine.compress("s1").result(timeout=10)

    record = engine.summary("s1")
    assert record.model == "extractive (offline, not an LLM)"
    # each speaker's messages fold into one fact, which needs no closing stop
    assert "- user: message 0, 2, 4, 6, 8 of s1\n" in record.text
    assert "of s1." not in record.text


def test_a_raising_subscriber_never_breaks_the_engine(store, make_engine, caplog):
    engine = make_engine(store, ScriptedSummarizer(SUMMARY))
    seen = []

    def broken(event):
        raise RuntimeError("subscriber bug")

    engine.subscribe(broken)
    unsubscribe = engine.subscribe(seen.append)
    fill(store, "s1", 30)

    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    assert statuses(seen) == ["start", "done"]
    assert "subscriber" in caplog.text
    unsubscribe()
    engine.compress("s1").result(timeout=10)
    assert len(seen) == 2


def test_a_backlog_larger_than_the_input_limit_is_folded_in_chunks_oldest_first(
    store, make_engine
):
    llm = ScriptedSummarizer(SUMMARY, context=1500)  # tiny context: many chunks
    engine = make_engine(store, llm)
    messages = fill(store, "s1", 120)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "compressed"
    assert outcome.chunks == len(llm.calls) > 1
    folded = [line for call in llm.calls for line in transcript_of(call).splitlines()]
    assert folded == [f"{m.role.capitalize()}: {m.content}" for m in messages[:100]]
    assert engine.summary("s1").covered_through_id == messages[99].id
    # every call after the first carries the previous summary
    assert all(
        f"<previous_summary>\n{SUMMARY}\n" in call[-1].content for call in llm.calls[1:]
    )


def test_a_backlog_larger_than_the_window_is_read_in_pages(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    messages = fill(store, "s1", 500)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.archived == 480
    assert [m.id for m in store.get_history("s1")] == [m.id for m in messages[480:]]
    folded = [line for call in llm.calls for line in transcript_of(call).splitlines()]
    assert len(folded) == 480
    assert folded[0].endswith("message 0 of s1.")


def test_calls_after_stop_raise_engine_closed(store, make_engine):
    engine = make_engine(store)
    engine.stop()

    with pytest.raises(EngineClosed):
        engine.turn_after("s1")
    with pytest.raises(EngineClosed):
        engine.compress("s1")
    with pytest.raises(EngineClosed):
        engine.build_prompt("s1")


def test_clear_after_stop_raises_and_the_summary_stays(store, make_engine):
    record = SummaryRecord("Kept.", None, 2, generation="g1")
    store.save_metadata(NAMESPACE, "s1", record.to_mapping())
    engine = make_engine(store)
    engine.stop()

    with pytest.raises(EngineClosed):
        engine.clear("session", "s1")
    with pytest.raises(EngineClosed):
        engine.clear("all")
    assert store.get_metadata(NAMESPACE, "s1") is not None


def test_session_id_must_be_a_non_empty_string(store, make_engine):
    engine = make_engine(store)

    for bad in ("", None, 5):
        with pytest.raises(ValueError, match="session_id"):
            engine.turn_after(bad)


def test_sqlite_archive_separator_commits_with_the_compaction(tmp_path, make_engine):
    from memory_summary.adapters import SqliteArchive, SqliteStore

    store = SqliteStore(tmp_path / "shared.sqlite3")
    archive = SqliteArchive(store)
    engine = make_engine(
        store, ScriptedSummarizer(SUMMARY, RuntimeError("down")), archive=archive
    )
    fill(store, "s1", 30)

    engine.compress("s1").result(timeout=10)
    fill(store, "s1", 15, start=30)
    engine.compress("s1").result(timeout=10)

    markers = archive.messages("s1")
    assert [m.kind for m in markers] == ["event-marker", "event-marker"]
    assert "compressed: 10 earlier" in markers[0].content
    assert "trimmed: 15 earlier" in markers[1].content
    store.close()


def test_a_failing_store_reports_an_error_and_applies_nothing(make_engine):
    from memory_summary.testing.fakes import FailingStore

    store = FailingStore()
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm)
    events = []
    engine.subscribe(events.append)
    fill(store, "s1", 30)

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "failed"
    assert "store failed" in outcome.detail
    assert statuses(events) == ["start", "error"]
    assert store.count_history("s1") == 30
    assert engine.summary("s1") is None
    store.failing = False  # the store recovers: the next compression proceeds
    assert engine.compress("s1").result(timeout=10).kind == "compressed"
    assert store.count_history("s1") == 20


def test_the_models_sessions_named_are_remembered_for_a_bounded_number_of_sessions():
    from memory_summary import SummaryEngine
    from memory_summary.actors.session_facts import MAX_SESSION_FACTS

    with SummaryEngine(InMemoryStore()) as engine:
        for i in range(MAX_SESSION_FACTS + 500):
            engine.turn_after(f"s{i}", model="gpt-4o-mini")
        engine.turn_after("s0", model="gpt-4o")  # the oldest comes back: most recent

        assert len(engine._facts) == MAX_SESSION_FACTS
        assert engine._facts.model("s0") == "gpt-4o"
        assert engine._facts.model("s1") is None  # least recent: forgotten
        last = f"s{MAX_SESSION_FACTS + 499}"
        assert engine._facts.model(last) == "gpt-4o-mini"
