"""``record`` reads a Responses API ``Response`` (``client.responses.create``).

It was refused (``MessageError``: no choices, no role): a Responses host could not
record its replies. Its output items are stored as the Agents SDK session stores
them, one message each and verbatim, and its usage's ``input_tokens`` is read.
"""

from __future__ import annotations

import pytest
from openai.types.responses import Response

from memory_summary import (
    CompressRequested,
    MessageError,
    PartiallySaved,
    StoreError,
    SummaryConfig,
    SummaryEngine,
)
from memory_summary.adapters import InMemoryStore
from memory_summary.testing.fakes import InstrumentedSummarizer

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}
TEXT = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "lookup",
    "arguments": '{"q": 1}',
    "status": "completed",
}
REFUSAL = {
    "type": "message",
    "id": "msg_2",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "refusal", "refusal": "I can't."}],
}


def response(*output, input_tokens=7000, model="gpt-4"):
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1.0,
            "model": model,
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": list(output),
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": {
                    "cached_tokens": 6000,
                    "cache_write_tokens": 0,
                },
                "output_tokens": 20,
                "output_tokens_details": {"reasoning_tokens": 5},
                "total_tokens": input_tokens + 20,
            },
        }
    )


def unset(value):
    """``value`` without the None fields a dumped ``Response`` holds."""
    if isinstance(value, dict):
        return {k: unset(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [unset(v) for v in value]
    return value


@pytest.fixture
def engine():
    config = SummaryConfig(context_window={"gpt-4": 8192})
    with SummaryEngine(InMemoryStore(), InstrumentedSummarizer(), config=config) as e:
        yield e


@pytest.mark.parametrize("dumped", [False, True])
def test_a_response_is_stored_item_by_item_and_sent_back_as_returned(engine, dumped):
    chat = engine.conversation("r")
    ratios = []
    engine.token_usage = lambda sid, ratio: ratios.append((sid, ratio))
    reply = response(REASONING, TEXT, CALL)
    chat.prepare("Look it up.", format="responses")

    recorded = chat.record(reply.model_dump() if dumped else reply)
    chat.add({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    items = chat.prepare(format="responses")

    assert recorded.reply.text == "Looking."
    assert [m.id for m in recorded.output] == [2, 3, 4]
    assert [call.id for call in recorded.pending] == ["call_1"]
    assert recorded.needs_model
    assert ratios == [("r", 7000 / 8192)]  # input_tokens over the model's window
    assert [unset(item) for item in items[1:4]] == [REASONING, TEXT, CALL]
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "42",
    }


def test_a_refused_response_is_stored_as_the_assistants_refusal(engine):
    chat = engine.conversation("r")
    chat.prepare("hi")

    recorded = chat.record(response(REFUSAL))
    items = chat.prepare("ok?", format="responses")

    assert not recorded.needs_model
    assert recorded.reply.text == "I can't."
    assert unset(items[1]) == REFUSAL


def test_a_recall_call_in_a_response_is_answered(engine):
    chat = engine.conversation("r")
    chat.prepare("hi")
    call = {**CALL, "name": "search_history", "arguments": '{"query": "x"}'}

    recorded = chat.record(response(call))

    assert recorded.pending == ()
    assert [m.tool_call_id for m in recorded.answered] == ["call_1"]
    assert recorded.reply.tool_calls[0].name == "search_history"


@pytest.mark.parametrize(
    "output", [(), (REASONING,), ({**TEXT, "content": []},)], ids=str
)
def test_a_response_with_nothing_to_say_is_refused_and_nothing_stored(engine, output):
    chat = engine.conversation("r")
    chat.prepare("hi")

    with pytest.raises(MessageError, match="empty"):
        chat.record(response(*output))

    assert len(engine.memory.get_history("r")) == 1


def test_a_kept_tail_that_starts_with_reasoning_gets_the_summary_before_it():
    config = SummaryConfig(context_window={"gpt-4": 8192}, keep_recent=4)
    store = InMemoryStore()
    with SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine:
        chat = engine.conversation("r", model="gpt-4")
        for turn in range(3):
            chat.prepare(f"question {turn}")
            chat.record(response({**TEXT, "id": f"msg_{turn}"}))
        chat.prepare("Look it up.")
        second = {**CALL, "id": "fc_2", "call_id": "call_2"}
        chat.record(response(REASONING, CALL, second))
        chat.add(
            {"role": "tool", "tool_call_id": "call_1", "content": "1"},
            {"role": "tool", "tool_call_id": "call_2", "content": "2"},
        )
        assert engine.compress("r").result(timeout=10).code == "summary_written"

        items = chat.prepare(format="responses")
        chats = chat.prepare(format="openai")
        anthropic = chat.prepare(format="anthropic")

    assert store.get_history("r")[0].text == "[reasoning]"  # the kept tail's first
    assert items[0]["role"] == "system"
    assert items[0]["content"].startswith("Summary of the earlier")
    assert [item.get("id") for item in items[1:3]] == ["rs_1", "fc_1"]
    assert chats[0]["content"] == items[0]["content"]
    assert anthropic["system"].startswith(items[0]["content"])


@pytest.mark.parametrize("dumped", [False, True])
def test_response_items_go_back_by_the_apis_field_names_without_none_fields(
    engine, dumped
):
    chat = engine.conversation("r")
    chat.prepare("hi")
    call = {**CALL, "async": False, "namespace": "tools"}
    reply = response(REASONING, TEXT, call)

    chat.record(reply.model_dump() if dumped else reply)
    chat.add({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    items = chat.prepare(format="responses")

    assert items[1:4] == [REASONING, TEXT, call]  # "async", no "async_", no None


CODE = {
    "type": "code_interpreter_call",
    "id": "ci_1",
    "code": "print(1)",
    "container_id": "cntr_1",
    "outputs": None,  # required by the API as input, and null unless included
    "status": "completed",
}


@pytest.mark.parametrize("dumped", [False, True])
def test_a_null_field_the_api_requires_goes_back_as_null(engine, dumped):
    chat = engine.conversation("r")
    chat.prepare("run it")
    reply = response(CODE, TEXT)

    chat.record(reply.model_dump() if dumped else reply)
    items = chat.prepare(format="responses")

    assert items[1:3] == [CODE, TEXT]


class OneByOneStore:
    """A store without ``save_messages``, failing at its ``fail_at``-th save."""

    def __init__(self, error=None):
        self.inner, self.fail_at, self.saves = InMemoryStore(), None, 0
        self.error = error or StoreError("the disk is full")

    def save_message(self, session_id, message):
        self.saves += 1
        if self.saves == self.fail_at:
            raise self.error
        return self.inner.save_message(session_id, message)

    def __getattr__(self, name):
        if name == "save_messages":
            raise AttributeError(name)
        return getattr(self.inner, name)


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_store_failing_midway_through_a_response_says_what_it_saved(fail_at):
    store = OneByOneStore()
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        chat = engine.conversation("r")
        chat.prepare("hi")
        store.saves, store.fail_at = 0, fail_at

        with pytest.raises(StoreError) as raised:
            chat.record(response(REASONING, TEXT, CALL))
        if fail_at == 1:  # nothing saved: a plain StoreError, to retry
            assert not isinstance(raised.value, PartiallySaved)
            assert len(store.inner.get_history("r")) == 1
            return
        error = raised.value
        stored = store.inner.get_history("r")[1:]
        chat.add(*error.unsaved)  # completes the turn, nothing twice
        items = chat.prepare(format="responses")

    assert isinstance(error, PartiallySaved)
    assert error.saved == tuple(stored)
    assert "ids [2]" in str(error)
    assert [m.metadata["openai_agents_item"]["id"] for m in error.unsaved] == [
        "msg_1",
        "fc_1",
    ]
    assert [item.get("id") for item in items] == [None, "rs_1", "msg_1", "fc_1"]


def test_a_foreign_error_midway_is_partially_saved_too():
    """A custom store raising an ``OSError`` once it saved a message: the host is
    told what was saved, not left to guess (a retry would store it twice)."""
    disk = OSError(28, "No space left on device")
    store = OneByOneStore(disk)
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        chat = engine.conversation("r")
        chat.prepare("hi")
        store.saves, store.fail_at = 0, 2

        with pytest.raises(PartiallySaved) as raised:
            chat.record(response(REASONING, TEXT, CALL))
        chat.add(*raised.value.unsaved)

        assert raised.value.__cause__ is disk
        assert raised.value.saved == tuple(store.inner.get_history("r")[1:2])
        assert len(store.inner.get_history("r")) == 4  # user, reasoning, text, call


def test_a_foreign_error_before_any_save_is_raised_as_it_is():
    store = OneByOneStore(OSError(28, "No space left on device"))
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        chat = engine.conversation("r")
        store.fail_at = 1

        with pytest.raises(OSError, match="No space"):
            chat.prepare("hi")
        assert store.inner.get_history("r") == []


def test_a_custom_tool_call_is_pending_as_custom_and_answered_by_its_own_item(engine):
    chat = engine.conversation("r")
    chat.prepare("hi")
    custom = {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_c",
        "name": "grammar",
        "input": "free text",
    }
    answer = {"type": "custom_tool_call_output", "call_id": "call_c", "output": "ok"}

    recorded = chat.record(response(custom))
    chat.add(answer)
    items = chat.prepare(format="responses")

    assert [(c.id, c.type, c.arguments) for c in recorded.pending] == [
        ("call_c", "custom", "free text")
    ]
    assert items[1:] == [custom, answer]


def test_add_names_what_a_responses_item_or_a_message_lacks(engine):
    chat = engine.conversation("r")

    with pytest.raises(MessageError, match="names the call it answers"):
        chat.add({"type": "function_call_output", "output": "x"})
    with pytest.raises(MessageError, match="needs a role"):
        chat.add({"content": "x"})
    assert engine.memory.get_history("r") == []


def test_a_message_item_of_no_content_beside_a_call_is_left_out(engine):
    chat = engine.conversation("r")
    chat.prepare("hi")

    recorded = chat.record(response(REASONING, {**TEXT, "content": []}, CALL))
    chat.add({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    items = chat.prepare(format="responses")
    chats = chat.prepare(format="openai")

    assert len(recorded.output) == 2
    assert [item.get("type") for item in items[1:]] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert all(m.get("content") != "" for m in chats)


SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "weather"},
}


def test_items_only_the_responses_api_reads_stay_out_of_chat_and_anthropic(engine):
    chat = engine.conversation("r")
    systems = []
    for turn in range(3):
        chat.prepare(f"question {turn}")
        reasoning = {**REASONING, "id": f"rs_{turn}"}
        text, search = {**TEXT, "id": f"msg_{turn}"}, {**SEARCH, "id": f"ws_{turn}"}
        chat.record(response(reasoning, text, search))
        anthropic = chat.prepare(format="anthropic", system="Be brief.")
        systems.append(anthropic["system"])
    chats = chat.prepare(format="openai", system="Be brief.")
    items = chat.prepare(format="responses", system="Be brief.")

    assert systems == ["Be brief."] * 3  # the same prefix every turn: cached
    assert [m["role"] for m in chats] == ["system", *["user", "assistant"] * 3]
    assert "[reasoning]" not in str(anthropic["messages"])
    assert [unset(item) for item in items[-3:]] == [
        {**REASONING, "id": "rs_2"},
        {**TEXT, "id": "msg_2"},
        {**SEARCH, "id": "ws_2"},
    ]
    stored = [m.text for m in engine.memory.get_history("r")]
    assert stored.count("[reasoning]") == stored.count("[web_search_call]") == 3


def test_a_call_beside_items_left_out_still_pairs_with_its_output(engine):
    chat = engine.conversation("r")
    chat.prepare("Look it up.")
    chat.record(response(REASONING, CALL, SEARCH))
    chat.add({"role": "tool", "tool_call_id": "call_1", "content": "42"})

    chats = chat.prepare()
    anthropic = chat.prepare(format="anthropic")
    items = chat.prepare(format="responses")
    stored = engine.memory.get_history("r")

    assert [(m["role"], m.get("tool_call_id")) for m in chats] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
    ]
    assert chats[1]["tool_calls"][0]["id"] == "call_1"
    assert [block["type"] for block in anthropic["messages"][1]["content"]] == [
        "tool_use"
    ]
    assert anthropic["messages"][2]["content"][0]["tool_use_id"] == "call_1"
    assert [item.get("type") for item in items] == [
        None,  # the user's message
        "reasoning",
        "function_call",
        "function_call_output",  # repaired next to its call, as before
        "web_search_call",
    ]
    assert [m.role for m in engine.assemble(stored, "r")] == [
        "user",
        "assistant",
        "tool",
    ]


def test_a_partially_saved_reply_still_reports_its_turn_and_usage():
    """The stored part of the turn counts: its usage (over the threshold here)
    asks for a compression, as a whole turn's would."""
    store = OneByOneStore()
    events = []
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        engine.subscribe(events.append)
        chat = engine.conversation("r", model="gpt-4o")
        chat.prepare("hi")
        store.saves, store.fail_at = 0, 2

        with pytest.raises(PartiallySaved):
            chat.record(response(REASONING, TEXT, CALL), usage=120_000)
        engine.wait_idle(timeout=10)

    assert [e.reason for e in events if isinstance(e, CompressRequested)] == ["auto"]


def test_a_partial_save_stays_partially_saved_when_reporting_it_fails():
    """Reporting the partly saved turn reads the store; a store of one's own that
    is down raises its own error there, and the host must still learn what was
    saved (a retried ``record`` would store it twice)."""

    class Down(OneByOneStore):
        counts_locally = True

        def count_history(self, session_id):
            if self.fail_at is not None and self.saves >= self.fail_at:
                raise ConnectionError("the store is down")
            return self.inner.count_history(session_id)

    store = Down(ConnectionError("the store is down"))
    with SummaryEngine(store, InstrumentedSummarizer()) as engine:
        chat = engine.conversation("r")
        chat.prepare("hi")
        store.saves, store.fail_at = 0, 2

        with pytest.raises(PartiallySaved) as raised:
            chat.record(response(REASONING, TEXT, CALL))

    assert raised.value.saved == tuple(store.inner.get_history("r")[1:2])
    assert len(raised.value.unsaved) == 2
