"""The compaction tool: a model asks for a fold, in an agent loop, on every store."""

from __future__ import annotations

import json
import threading

from memory_summary import Message, SummaryConfig, ToolCall
from memory_summary.domain import EVENT_MARKER
from memory_summary.testing.chat_models import Reply, ScriptedChatModel
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.contract.stores import every_store

REPLY = "Summary: order 42 ships to Porto; the user plans a long migration."


def seed(store, session_id: str, turns: int = 12) -> None:
    store.save_message(session_id, Message("user", "Order 42 ships to Porto."))
    for i in range(turns):
        role = "assistant" if i % 2 else "user"
        store.save_message(session_id, Message(role, f"Small talk number {i}."))


def sides(store, session_id: str) -> dict[str, set[str]]:
    """Return, per tool call id, where its call and its result are: active/archived."""
    active = {m.id for m in store.get_history(session_id)}
    found: dict[str, set[str]] = {}
    for message in store.get_full_history(session_id):
        where = "active" if message.id in active else "archived"
        ids = [c.id for c in message.tool_calls] or [message.tool_call_id]
        for call_id in ids:
            if call_id is not None:
                found.setdefault(call_id, set()).add(where)
    return found


@every_store
def test_a_model_asks_for_a_fold_before_a_long_task(store, make_engine):
    summarizer = ScriptedSummarizer(REPLY)
    config = SummaryConfig(threshold=1000, keep_recent=2)
    engine = make_engine(store, summarizer, config=config).start()
    seed(store, "alice")
    model = ScriptedChatModel(
        Reply(tool_calls=[("compact_context", {"focus": "order 42"})]),
        "Ready for the migration.",
    )
    chat = engine.conversation("alice", model="gpt-4o")
    tools = engine.recall_tools()

    request = chat.prepare("Let us start the long migration.", system="Be brief.")
    for _ in range(4):  # the agent loop: call the model until it stops calling tools
        recorded = chat.record(model(model="gpt-4o", messages=request, tools=tools))
        assert not recorded.pending  # compact_context is the library's to answer
        if not recorded.answered:
            break
        request = chat.prepare(system="Be brief.")
    assert engine.wait_idle(30)

    assert recorded.reply.content == "Ready for the migration."
    first = model.requests[1]["messages"]
    call = next(m for m in first if m.get("tool_calls"))["tool_calls"][0]
    result = next(m for m in first if m.get("role") == "tool")
    assert call["function"]["name"] == "compact_context"
    assert result["tool_call_id"] == call["id"]
    assert "Compaction requested" in result["content"]
    assert "'order 42'" in result["content"]
    assert [t["function"]["name"] for t in model.requests[0]["tools"]][-1] == (
        "compact_context"
    )
    # The fold committed, the summarizer read the focus as host instructions.
    assert engine.summary("alice").text == REPLY
    asked = "\n".join(m.text for m in summarizer.calls[-1])
    assert "<host_instructions>\norder 42\n</host_instructions>" in asked
    # The call and its result are on one side of the cut.
    assert sides(store, "alice")[call["id"]] in ({"active"}, {"archived"})


@every_store
def test_a_fold_that_starts_before_the_result_is_saved_keeps_the_call(
    store, make_engine
):
    """The host saved the call (and a separator after it), not its result yet."""
    gate = threading.Event()
    summarizer = InstrumentedSummarizer(gate=gate)
    config = SummaryConfig(threshold=1000, keep_recent=1)
    engine = make_engine(store, summarizer, config=config).start()
    seed(store, "bob")
    call = ToolCall("call_c1", "compact_context", json.dumps({"focus": "Porto"}))
    store.save_message("bob", Message("assistant", "", tool_calls=(call,)))
    store.save_message("bob", Message("system", "---", kind=EVENT_MARKER))

    answer = engine.call_recall_tool("bob", call)  # the fold starts, unawaited
    assert summarizer.entered.wait(30)  # it has read the history: no result yet
    store.save_message("bob", answer)
    gate.set()
    assert engine.wait_idle(30)

    assert engine.summary("bob") is not None
    assert sides(store, "bob")["call_c1"] == {"active"}
    active = store.get_history("bob")
    assert [m.tool_call_id for m in active if m.role == "tool"] == ["call_c1"]
    asked = "\n".join(m.text for m in summarizer.requests[0])
    assert "<host_instructions>\nPorto\n</host_instructions>" in asked


def test_a_failed_compaction_is_logged_and_a_cancelled_one_is_not(caplog):
    from concurrent.futures import Future

    from memory_summary.recall_tools import _log_failure

    failed: Future[object] = Future()
    failed.set_exception(RuntimeError("the store is gone"))
    cancelled: Future[object] = Future()
    cancelled.cancel()

    _log_failure("s", failed)  # type: ignore[arg-type]
    _log_failure("s", cancelled)  # type: ignore[arg-type]

    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["session s: compact_context failed: the store is gone"]
