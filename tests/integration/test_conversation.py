"""The conversation handle: a turn in two calls on every store, sync and async."""

from __future__ import annotations

import asyncio
import json

import pytest

from memory_summary import (
    Message,
    MessageError,
    StoreError,
    SummaryConfig,
    SummaryEngine,
)
from memory_summary.adapters import InMemoryStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.contract.stores import every_store

SYSTEM = "You are helpful."
CONFIG = SummaryConfig(threshold=12, keep_recent=6)


def completion(text=None, *, calls=(), prompt_tokens=None, model="gpt-4o"):
    """An OpenAI ChatCompletion as a dict."""
    message: dict[str, object] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for cid, name, args in calls
        ]
    reply: dict[str, object] = {"model": model, "choices": [{"message": message}]}
    if prompt_tokens is not None:
        reply["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 5}
    return reply


def history_dicts(store, sid):
    return [m.to_openai() for m in store.get_history(sid)]


def reference(engine, sid, system=SYSTEM):
    """What assemble makes of the stored history: the handle must send the same."""
    head = [Message("system", system)] if system else []
    stored = engine.memory.get_history(sid)
    assembled = engine.assemble([*head, *stored], sid, placement="merge")
    return [message.to_openai() for message in assembled]


@every_store
def test_a_plain_turn_is_two_calls_and_compresses_in_the_background(store):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("alice")
        for turn in range(20):
            request = chat.prepare(f"Question {turn}: sunny?", system=SYSTEM)
            assert request == reference(engine, "alice")
            assert request[-1] == {
                "role": "user",
                "content": f"Question {turn}: sunny?",
            }
            recorded = chat.record(completion(f"Answer {turn}: yes."))
            assert recorded.reply.id is not None
            assert not recorded.needs_model
            assert engine.wait_idle(timeout=10)  # the next request reads its commit
        assert engine.wait_idle(timeout=10)
        request = chat.prepare(system=SYSTEM)

    assert engine.summary("alice") is not None  # compressed on the way
    assert request[0]["role"] == "system"
    assert request[0]["content"].startswith(SYSTEM)
    assert "Summary of the earlier conversation" in request[0]["content"]
    assert request[1:] == history_dicts(store, "alice")
    assert all(m["content"] != SYSTEM for m in history_dicts(store, "alice"))


@every_store
def test_a_tool_turn_adds_one_call_and_recall_tools_are_answered(store):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("bob")
        chat.prepare("My order number is 4471.")
        chat.record(completion("Noted."))
        chat.prepare("Look up the weather and my order.")
        recorded = chat.record(
            completion(
                calls=[
                    ("c1", "get_weather", {"city": "Lisbon"}),
                    ("c2", "search_history", {"query": "order number"}),
                ]
            )
        )
        assert [c.id for c in recorded.pending] == ["c1"]
        assert [m.tool_call_id for m in recorded.answered] == ["c2"]
        assert "4471" in recorded.answered[0].text
        assert recorded.needs_model
        chat.add({"role": "tool", "tool_call_id": "c1", "content": "sunny"})
        request = chat.prepare()
        assert request == reference(engine, "bob", system=None)
        assert [m.get("tool_call_id") for m in request[-2:]] == ["c1", "c2"]  # paired
        chat.record(completion("Sunny, and your order is 4471."))

    roles = [m.role for m in store.get_history("bob")]
    assert roles == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]


@every_store
def test_anthropic_turns_round_trip(store):
    seen = []
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        engine.subscribe(seen.append)
        chat = engine.conversation("carol", model="claude-sonnet-4-5")
        request = chat.prepare("Find the file.", system="Be brief.", format="anthropic")
        assert request == {
            "system": "Be brief.",
            "messages": [{"role": "user", "content": "Find the file."}],
        }
        reply = {
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "find", "input": {"q": "x"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 150_000},
        }
        recorded = chat.record(reply)
        assert [c.id for c in recorded.pending] == ["t1"]
        chat.add(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}
                ],
            }
        )
        request = chat.prepare(format="anthropic")
        assert "system" not in request or request["system"]
        assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
        assert request["messages"][1]["content"][1]["type"] == "tool_use"
        assert request["messages"][2]["content"][0]["tool_use_id"] == "t1"
        assert engine.wait_idle(timeout=10)

    # 150,010 of Claude's 200,000 tokens is over the default 0.7: reported as a ratio
    requested = [e for e in seen if type(e).__name__ == "CompressRequested"]
    assert [(e.session_id, e.reason) for e in requested] == [("carol", "auto")]


def bad_replies():
    return [
        None,
        "just text",
        {"choices": []},
        completion(""),  # empty: no text, no tool call
        {"role": "user", "content": "not a reply"},
        {"type": "message", "role": "assistant", "content": []},
        Message("assistant", "  "),
    ]


@every_store
@pytest.mark.parametrize("reply", bad_replies(), ids=range(len(bad_replies())))
def test_a_reply_it_cannot_read_is_refused_and_nothing_is_stored(store, reply):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("dan")
        chat.prepare("hello")
        before = history_dicts(store, "dan")
        with pytest.raises((MessageError, TypeError, ValueError)):
            chat.record(reply)
        assert history_dicts(store, "dan") == before


def test_bad_input_to_prepare_and_add_stores_nothing(store):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("erin")
        for user in ("", "   ", {"role": "assistant", "content": "x"}, 42):
            with pytest.raises((MessageError, ValueError)):
                chat.prepare(user)
        with pytest.raises(ValueError, match="format"):
            chat.prepare("hi", format="gemini")
        with pytest.raises(MessageError):
            chat.add({"role": "tool", "tool_call_id": "c"}, {"role": "nobody"})
        assert store.get_history("erin") == []
        with pytest.raises(ValueError, match="session_id"):
            engine.conversation("")


class FailingBatch(InMemoryStore):
    """Refuses every batch save once told to (a store failing mid-turn)."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse = False

    def save_messages(self, session_id, messages):
        if self.refuse:
            raise StoreError("the disk is full")
        return super().save_messages(session_id, messages)


def test_a_failed_store_call_leaves_no_half_saved_turn():
    store = FailingBatch()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("fay")
        chat.prepare("What was my order?")
        chat.record(completion("It was 17."))
        chat.prepare("And the weather?")
        store.refuse = True
        with pytest.raises(StoreError):
            chat.record(
                completion(
                    "Checking.", calls=[("c9", "search_history", {"query": "order"})]
                )
            )
        store.refuse = False
        assert [m.role for m in store.get_history("fay")] == [
            "user",
            "assistant",
            "user",
        ]
        assert chat.prepare() == reference(engine, "fay", system=None)


@every_store
def test_writes_beside_the_handle_are_seen_on_the_next_prepare(store):
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("gus")
        for turn in range(4):
            chat.prepare(f"q{turn}")
            chat.record(completion(f"a{turn}"))
        store.pop_message("gus")  # another writer takes the last reply back
        store.save_message("gus", Message("assistant", "a3 (edited)"))
        assert chat.prepare("q4") == reference(engine, "gus", system=None)
        assert engine.compress("gus").result(timeout=10).kind == "compressed"
        assert chat.prepare() == reference(engine, "gus", system=None)
        store.clear_session("gus")
        assert chat.prepare("fresh") == reference(engine, "gus", system=None)
        engine.forget("gus")
        assert chat.prepare("again") == [{"role": "user", "content": "again"}]


@every_store
def test_an_edit_beside_the_handle_before_its_own_save_is_seen(store):
    # Another writer pops the reply and saves a new one between two calls of the
    # handle, whose own save then lands: as many messages, the same ends. The ids'
    # sum tells the popped reply from the new one; where a store gives none (the
    # in-memory and Redis stores), the messages after those the handle last read.
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ida")
        chat.prepare("hello")
        chat.record(completion("first answer"))
        assert chat.prepare() == reference(engine, "ida", system=None)
        store.pop_message("ida")
        store.save_message("ida", Message("assistant", "regenerated answer"))
        chat.add({"role": "user", "content": "next question"})
        request = chat.prepare()
        assert [m["content"] for m in request] == [
            "hello",
            "regenerated answer",
            "next question",
        ]
        assert request == reference(engine, "ida", system=None)


class CountingStore(InMemoryStore):
    """Counts whole-history reads."""

    def __init__(self) -> None:
        super().__init__()
        self.history_reads = 0
        self.counts = 0

    def get_history(self, session_id, limit=None):
        self.history_reads += 1
        return super().get_history(session_id, limit)

    def count_history(self, session_id):
        self.counts += 1
        return super().count_history(session_id)


def test_a_span_without_a_sum_is_proven_by_the_turns_own_messages_alone():
    reads = []

    class Proving(InMemoryStore):  # its span carries no id sum
        def get_oldest_history(self, session_id, limit, after_id=None):
            got = super().get_oldest_history(session_id, limit, after_id)
            reads.append((limit, len(got)))
            return got

    store = Proving()
    config = SummaryConfig(threshold=400, keep_recent=20)  # no compression between
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("jan")
        for turn in range(30):
            chat.prepare(f"question {turn}")
            chat.record(completion(f"answer {turn}"))
    assert store.active_span("jan").id_sum is None
    assert len(reads) == 29  # each turn but the first: its question and answer
    assert set(reads) == {(3, 2)}


def test_a_turn_reads_no_history_it_already_holds():
    store = CountingStore()
    config = SummaryConfig(threshold=400, keep_recent=20)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("hal")
        for turn in range(100):
            chat.prepare(f"question {turn}")
            chat.record(completion(f"answer {turn}"))
        assert store.history_reads == 1  # the first prepare; then appended to
        assert store.counts == 0  # the handle knows the count its saves lead to
        assert engine.stats().transcripts == 1


def test_usage_becomes_the_context_ratio_with_the_models_window():
    store = InMemoryStore()
    config = SummaryConfig(threshold=400, keep_recent=4, context_window={"gpt-4": 8192})
    seen = []
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        engine.subscribe(seen.append)
        chat = engine.conversation("ivy")
        for turn in range(8):
            chat.prepare(f"question {turn} " * 20)
            chat.record(completion(f"answer {turn}", model="gpt-4", prompt_tokens=100))
        assert engine.summary("ivy") is None  # 100 / 8192: nowhere near 0.7
        chat.prepare("one more")
        chat.record(completion("full", model="gpt-4"), usage={"prompt_tokens": 7000})
        assert engine.wait_idle(timeout=10)
    requested = [e for e in seen if type(e).__name__ == "CompressRequested"]
    assert [e.reason for e in requested] == ["auto"]
    assert engine.summary("ivy") is not None


@every_store
def test_the_async_handle_is_the_same_turn_in_one_hop_per_call(store):
    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        ) as engine:
            chat = engine.conversation("jo")
            for turn in range(15):
                await chat.prepare(f"q{turn}", system=SYSTEM)
                await chat.record(completion(f"a{turn}"))
            await engine.wait_idle(timeout=10)
            request = await chat.prepare("last", system=SYSTEM)
            added = await chat.add(Message("user", "and this"))
            return request, added, engine.engine

    request, added, engine = asyncio.run(main())
    assert request[1:] == history_dicts(store, "jo")[:-1]
    assert added[0].id == store.get_history("jo")[-1].id
    assert engine.summary("jo") is not None


def test_the_async_face_mirrors_the_sync_one():
    from memory_summary import aio

    def public(cls):
        return {n for n in dir(cls) if not n.startswith("_")}

    sync, wrapped = public(SummaryEngine), public(AsyncSummaryEngine)
    missing = sync - wrapped - aio.SYNC_ONLY
    assert not missing, f"AsyncSummaryEngine lacks {sorted(missing)}"
    extra = wrapped - sync - {"engine", "memory"}
    assert extra == {"get_history", "pop_message", "save_message"}  # deprecated
    for name in sync - aio.SYNC_ONLY:
        method = getattr(AsyncSummaryEngine, name)
        assert asyncio.iscoroutinefunction(method) == (name not in aio.NOT_AWAITABLE), (
            name
        )


@every_store
def test_async_tool_and_anthropic_turns_and_refused_replies(store):
    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        ) as engine:
            chat = engine.conversation("kim")
            await chat.prepare("My code is 5521.")
            await chat.record(completion("Noted."))
            recorded = await chat.record(
                completion(
                    calls=[
                        ("c1", "search_history", {"query": "code"}),
                        ("c2", "lookup", {"q": "x"}),
                    ]
                )
            )
            await chat.add({"role": "tool", "tool_call_id": "c2", "content": "done"})
            with pytest.raises(MessageError):
                await chat.record(completion(""))
            request = await chat.prepare(format="anthropic")
            return recorded, request

    recorded, request = asyncio.run(main())
    assert [c.id for c in recorded.pending] == ["c2"]
    assert "5521" in recorded.answered[0].text
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["user", "assistant", "user"]  # results answer the calls' turn
    results = request["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["c1", "c2"]
    assert [m.role for m in store.get_history("kim")] == [
        "user",
        "assistant",
        "assistant",
        "tool",
        "tool",
    ]


def test_anthropic_system_blocks_keep_their_cache_control():
    blocks = [
        {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    ]
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer()) as engine:
        chat = engine.conversation("lee")
        request = chat.prepare("Hi", system=blocks, format="anthropic")
        with pytest.raises(MessageError, match="system"):
            chat.prepare(system=42)
    assert request["system"] == blocks
    assert request["messages"] == [{"role": "user", "content": "Hi"}]
