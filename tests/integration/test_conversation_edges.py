"""The conversation handle at its edges: odd replies, held compactions, cost per turn.

What a close look at the handle found: a reply refused over a usage shape it did
not need, a compaction started by a turn that was never saved, mixed tool turns and
the Anthropic and Responses formats paying for the whole history each turn, thinking
stored as a reply, a message stored twice.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from memory_summary import (
    Message,
    MessageError,
    StoreError,
    SummaryConfig,
    SummaryEngine,
)
from memory_summary.adapters import InMemoryStore, SqliteStore
from memory_summary.aio import AsyncSummaryEngine
from memory_summary.domain import anthropic_turns
from memory_summary.response_items import items_of
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.integration.test_conversation import (
    CONFIG,
    FailingBatch,
    completion,
    history_dicts,
    reference,
)


def test_a_reply_whose_usage_has_an_unknown_shape_is_stored():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ann", model="gpt-4o")
        chat.prepare("hi")
        reply = completion("hello")
        reply["usage"] = {"total_tokens": 5}  # as some compatible servers send
        assert chat.record(reply).reply.content == "hello"
        chat.prepare("and?")
        assert chat.record(completion("so"), usage=100).reply.content == "so"
        with pytest.raises(MessageError, match="usage"):
            chat.record(completion("never stored"), usage={"total_tokens": 5})
    assert [m.content for m in store.get_history("ann")] == [
        "hi",
        "hello",
        "and?",
        "so",
    ]


def test_the_last_iteration_of_anthropic_usage_is_the_context():
    store = InMemoryStore()
    config = SummaryConfig(threshold=400, keep_recent=4, context_window=200_000)
    seen = []
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        engine.subscribe(seen.append)
        chat = engine.conversation("bo")
        for turn in range(6):
            chat.prepare(f"question {turn}")
            chat.record(
                {
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-x",
                    "content": [{"type": "text", "text": f"answer {turn}"}],
                    # the compaction step read 190k; the answer, after it, 20k
                    "usage": {
                        "input_tokens": 5,
                        "iterations": [
                            {"input_tokens": 190_000},
                            {"input_tokens": 20_000},
                        ],
                    },
                }
            )
        assert engine.wait_idle(timeout=10)
    assert not [e for e in seen if type(e).__name__ == "CompressRequested"]


def test_a_compaction_asked_in_a_turn_that_was_not_saved_never_starts():
    store = FailingBatch()
    summarizer = InstrumentedSummarizer()
    with SummaryEngine(
        store, summarizer, config=SummaryConfig(threshold=400, keep_recent=4)
    ) as engine:
        chat = engine.conversation("cy")
        for turn in range(8):
            chat.prepare(f"question {turn}")
            chat.record(completion(f"answer {turn}"))
        store.refuse = True
        with pytest.raises(StoreError):
            chat.record(
                completion("Compacting.", calls=[("k1", "compact_context", {})])
            )
        assert engine.wait_idle(timeout=10)
        assert engine.summary("cy") is None
        assert summarizer.calls == 0

        store.refuse = False
        recorded = chat.record(
            completion("Compacting.", calls=[("k2", "compact_context", {})])
        )
        assert [m.tool_call_id for m in recorded.answered] == ["k2"]
        assert engine.wait_idle(timeout=10)
        assert engine.summary("cy") is not None


def test_a_reply_holding_only_thinking_is_refused():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("di")
        chat.prepare("hi")
        thinking = {"type": "thinking", "thinking": "hmm", "signature": "s"}
        with pytest.raises(MessageError, match="empty"):
            chat.record({"type": "message", "role": "assistant", "content": [thinking]})
        answer = {"type": "text", "text": "Hello."}
        chat.record(
            {"type": "message", "role": "assistant", "content": [thinking, answer]}
        )
    assert [m.role for m in store.get_history("di")] == ["user", "assistant"]


def test_an_empty_or_stored_message_is_refused_and_nothing_is_saved():
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ed")
        for user in (Message("user", ""), Message("user", " \n"), {"role": "user"}):
            with pytest.raises(MessageError, match=r"empty|needs content"):
                chat.prepare(user)
        chat.prepare("hi")
        reply = chat.record(completion("hello")).reply
        with pytest.raises(MessageError, match="already stored"):
            chat.record(reply)
        stored_user = store.get_history("ed")[0]
        with pytest.raises(MessageError, match="already stored"):
            chat.prepare(stored_user)
        with pytest.raises(MessageError, match="already stored"):
            chat.add(Message("tool", "r", tool_call_id="x"), reply)
        assert [m.content for m in store.get_history("ed")] == ["hi", "hello"]
        # a retried turn builds the same request without saving the question again
        assert chat.prepare() == reference(engine, "ed", system=None)
        assert len(store.get_history("ed")) == 2


def test_an_empty_anthropic_system_is_no_system():
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer()) as engine:
        request = engine.conversation("fi").prepare("hi", system=[], format="anthropic")
    assert request == {"messages": [{"role": "user", "content": "hi"}]}


def test_a_mixed_tool_turn_keeps_the_request_built_from_what_is_held():
    store = InMemoryStore()
    config = SummaryConfig(threshold=400, keep_recent=20)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("gil")
        chat.prepare("Where is my order?")
        calls = [
            ("h1", "lookup", {"q": "order"}),
            ("r1", "search_history", {"query": "order"}),
        ]
        recorded = chat.record(completion(None, calls=calls))
        assert [c.id for c in recorded.pending] == ["h1"]
        chat.add({"role": "tool", "tool_call_id": "h1", "content": "shipped"})
        assembled = []
        real = engine._assembled
        engine._assembled = lambda *a, **k: assembled.append(1) or real(*a, **k)
        request = chat.prepare()
        assert assembled == []  # built from the held dicts, no assemble
        assert request == reference(engine, "gil", system=None)
        assert [m.get("tool_call_id") for m in request[2:]] == ["h1", "r1"]


def test_a_mixed_tool_turn_read_again_from_the_store_stays_plain():
    store = InMemoryStore()
    config = SummaryConfig(threshold=400, keep_recent=20)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("hal")
        chat.prepare("Where is my order?")
        calls = [
            ("h1", "lookup", {"q": "order"}),
            ("h2", "lookup", {"q": "bill"}),
            ("r1", "search_history", {"query": "order"}),
        ]
        chat.record(completion(None, calls=calls))
        chat.add({"role": "tool", "tool_call_id": "h2", "content": "paid"})
        assert chat.prepare() == reference(engine, "hal", system=None)  # half answered
        chat.add({"role": "tool", "tool_call_id": "h1", "content": "shipped"})
        store.save_message("hal", Message("user", "from another writer"))
        assembled = []
        real = engine._assembled
        engine._assembled = lambda *a, **k: assembled.append(1) or real(*a, **k)
        request = chat.prepare()  # read again: the store holds r1, h2, h1
        assert assembled == []
        assert request == reference(engine, "hal", system=None)
        assert [m.get("tool_call_id") for m in request[2:5]] == ["h1", "h2", "r1"]


def _turn_work(format: str, length: int, monkeypatch) -> int:
    """Count the conversions one turn makes after ``length`` messages were held."""
    store = InMemoryStore()
    config = SummaryConfig(threshold=10_000, keep_recent=9_000)
    conversions = [0]
    for module, name in (
        (anthropic_turns, "turn_content"),
        ("memory_summary.transcripts", "turn_content"),
        ("memory_summary.transcripts", "items_of"),
        ("memory_summary.conversation", "items_of"),
    ):
        target = (
            module
            if not isinstance(module, str)
            else __import__(module, fromlist=[name])
        )
        real = getattr(target, name)

        def counted(*args, _real=real, **kwargs):
            conversions[0] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(target, name, counted)
    original = Message.to_openai

    def to_openai(self):
        conversions[0] += 1
        return original(self)

    monkeypatch.setattr(Message, "to_openai", to_openai)
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("hu")
        for turn in range(length // 2):
            chat.prepare(f"question {turn}", format=format)
            chat.record(completion(f"answer {turn}"))
        conversions[0] = 0
        chat.prepare("one more", system="Be brief.", format=format)
        chat.record(completion("done"))
        monkeypatch.undo()
        return conversions[0]


@pytest.mark.parametrize("format", ["openai", "anthropic", "responses"])
def test_a_turns_work_does_not_grow_with_the_history(format, monkeypatch):
    short = _turn_work(format, 10, monkeypatch)
    long = _turn_work(format, 400, monkeypatch)
    assert 0 < long == short


def test_the_anthropic_request_of_a_history_opening_with_the_assistant():
    store = InMemoryStore()
    store.save_message("ka", Message("assistant", "Welcome back."))
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        chat = engine.conversation("ka")
        request = chat.prepare("Thanks!", format="anthropic")
        items = chat.prepare(format="responses")
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert request["messages"][0]["content"].startswith("[The earlier conversation")
    assert items == items_of(store.get_history("ka"))


@pytest.mark.parametrize("call", ["prepare", "record", "add"])
def test_each_async_call_is_one_worker_thread_hop(call):
    store = InMemoryStore()
    threads = []
    real_save = store.save_messages

    def save_messages(session_id, messages):
        threads.append(threading.get_ident())
        return real_save(session_id, messages)

    store.save_messages = save_messages  # type: ignore[method-assign]

    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        ) as engine:
            chat = engine.conversation("lu")
            await chat.prepare("q0")
            loop = asyncio.get_running_loop()
            hops = []
            real = loop.run_in_executor

            def counting(executor, function, *args):
                hops.append(function)
                return real(executor, function, *args)

            loop.run_in_executor = counting  # type: ignore[method-assign]
            if call == "prepare":
                await chat.prepare("q1", system="Be brief.", format="anthropic")
            elif call == "record":
                calls = [("s1", "search_history", {"query": "q0"}), ("h1", "f", {})]
                await chat.record(completion("a", calls=calls))
            else:
                await chat.add({"role": "tool", "tool_call_id": "h1", "content": "r"})
            loop.run_in_executor = real  # type: ignore[method-assign]
            return hops

    assert len(asyncio.run(main())) == 1
    assert threading.get_ident() not in threads


def test_async_refusals_store_nothing():
    store = InMemoryStore()

    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        ) as engine:
            chat = engine.conversation("mo")
            await chat.prepare("hi")
            refused = 0
            for reply in (None, {"choices": []}, completion(""), Message("user", "x")):
                with pytest.raises((MessageError, TypeError, ValueError)):
                    await chat.record(reply)
                refused += 1
            with pytest.raises(MessageError):
                await chat.add({"role": "nobody"})
            with pytest.raises(MessageError):
                await chat.prepare(Message("user", ""))
            return refused

    assert asyncio.run(main()) == 4
    assert history_dicts(store, "mo") == [{"role": "user", "content": "hi"}]


def test_a_failed_save_in_prepare_or_add_saves_nothing_and_the_next_turn_recovers():
    class Failing(FailingBatch):
        def save_message(self, session_id, message):
            if self.refuse:
                raise StoreError("the disk is full")
            return super().save_message(session_id, message)

    store = Failing()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ned")
        chat.prepare("q0")
        chat.record(completion(None, calls=[("h1", "lookup", {})]))
        store.refuse = True
        with pytest.raises(StoreError):
            chat.add({"role": "tool", "tool_call_id": "h1", "content": "r"})
        with pytest.raises(StoreError):
            chat.prepare("q1")
        store.refuse = False
        assert [m.role for m in store.get_history("ned")] == ["user", "assistant"]
        chat.add({"role": "tool", "tool_call_id": "h1", "content": "r"})
        assert chat.prepare("q1") == reference(engine, "ned", system=None)
        assert chat.prepare(format="anthropic") == {
            "messages": [
                {"role": "user", "content": "q0"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "h1", "name": "lookup", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "h1", "content": "r"},
                        {"type": "text", "text": "q1"},
                    ],
                },
            ]
        }


def test_a_host_changing_the_prompt_it_was_sent_changes_no_later_request():
    """The lead (prompt and summary) is built once per pair; a request gets a copy."""
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        chat = engine.conversation("ann", model="gpt-4o")
        sent = chat.prepare("hi", system="Be brief.")
        sent[0]["content"] += " And rude."  # the host's own edit of its request
        sent[0]["name"] = "edited"
        chat.record(completion("hello"))
        again = chat.prepare("and?", system="Be brief.")
        assert again[0] == {"role": "system", "content": "Be brief."}
        assert again == reference(engine, "ann", "Be brief.")
        other = chat.prepare(system="Be kind.")  # the same turn, another prompt
        assert other[0] == {"role": "system", "content": "Be kind."}
        assert chat.prepare()[0]["role"] == "user"  # no prompt: no lead at all


HUGE_TOKENS = 10**400  # more than a float holds


def huge_usage_replies():
    """The three ways a reply's usage reaches the handle, each past any float."""
    anthropic = {
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "from claude"}],
        "usage": {"input_tokens": HUGE_TOKENS, "output_tokens": 1},
    }
    return [
        (completion("in the reply", prompt_tokens=HUGE_TOKENS), None),
        (anthropic, None),
        (completion("passed beside"), {"prompt_tokens": HUGE_TOKENS}),
        (completion("as an int"), HUGE_TOKENS),
    ]


def test_a_reply_whose_usage_no_float_holds_is_stored_and_reads_as_a_full_window(
    tmp_path,
):
    store = SqliteStore(tmp_path / "s.db")
    try:
        with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
            chat = engine.conversation("hu")
            ids = []
            for reply, usage in huge_usage_replies():
                chat.prepare("next?")
                ids.append(chat.record(reply, usage=usage).reply.id)
            assert engine.wait_idle(timeout=30)
            compressed = engine.summary("hu") is not None  # a full window: compressed
        kept = store.get_archived("hu", after_id=None, through_id=ids[-1], limit=100)
        kept += store.get_history("hu")
        texts = [m.text for m in kept if m.id in ids]
    finally:
        store.close()

    assert compressed
    assert texts == ["in the reply", "from claude", "passed beside", "as an int"]


def test_an_async_reply_whose_usage_no_float_holds_is_stored():
    store = InMemoryStore()

    async def main():
        async with AsyncSummaryEngine(
            SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG)
        ) as engine:
            chat = engine.conversation("ha")
            ids = []
            for reply, usage in huge_usage_replies():
                await chat.prepare("next?")
                ids.append((await chat.record(reply, usage=usage)).reply.id)
            return ids

    ids = asyncio.run(main())
    kept = store.get_archived("ha", after_id=None, through_id=ids[-1], limit=100)
    kept += store.get_history("ha")

    assert [m.text for m in kept if m.id in ids] == [
        "in the reply",
        "from claude",
        "passed beside",
        "as an int",
    ]


@pytest.mark.parametrize("text", ["\x00", " \x00\n\x00 "])
def test_a_user_text_that_is_empty_once_its_nul_bytes_go_is_refused(tmp_path, text):
    """Stored, it would be an empty user turn, which the Anthropic API refuses."""
    store = SqliteStore(tmp_path / "s.db")
    try:
        with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
            chat = engine.conversation("nul")
            chat.prepare("hi")
            with pytest.raises(MessageError, match="empty"):
                chat.prepare(text)
            with pytest.raises(MessageError, match="empty"):
                chat.prepare({"role": "user", "content": text})
            request = chat.prepare(format="anthropic")
        stored = history_dicts(store, "nul")
    finally:
        store.close()

    assert stored == [{"role": "user", "content": "hi"}]
    assert request["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("system", [None, "Be brief."])
@pytest.mark.parametrize("format", ["openai", "anthropic"])
def test_a_stored_message_that_looks_like_the_summary_is_sent(system, format):
    from memory_summary.domain import SUMMARY_KIND
    from memory_summary.domain.injection import HEADERS

    store = InMemoryStore()
    notes = HEADERS["en"] + "\nthe host's own notes"
    copied = "the host's copy of an injected summary"
    with SummaryEngine(store, InstrumentedSummarizer(), config=CONFIG) as engine:
        store.save_message("s", Message("system", notes))  # an instruction: kept
        for i in range(20):
            store.save_message("s", Message("user", f"fact {i}."))
        assert engine.compress("s").result(timeout=30).kind == "compressed"
        store.save_message("s", Message("system", copied, kind=SUMMARY_KIND))
        summary = engine.build_prompt("s")
        chat = engine.conversation("s", model="gpt-4o")

        request = chat.prepare("and now?", system=system, format=format)
        assembled = engine.assemble(
            [Message("system", "Be brief."), *store.get_history("s")], "s"
        )

    sent = "\n".join(texts_in(request))
    assert notes in sent
    assert copied in sent
    assert sent.count(HEADERS["en"]) == 2  # the host's notes and the summary
    assert summary is not None
    assert summary.splitlines()[1] in sent
    assert [m.content for m in assembled if m.id is not None] == [
        m.content for m in store.get_history("s")
    ]
    assert sum(m.content == summary for m in assembled) == 1


def texts_in(value):
    """Every string in a request, nested in dicts and lists."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts_in(item)
