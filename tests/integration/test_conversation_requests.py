"""The handle's request is assemble's, whatever happened to the session between turns.

``prepare`` keeps each session's messages and their dicts between turns and reads
the store again only when its ``ActiveSpan`` says something changed. A hypothesis
rule machine drives the handle, other writers and compressions in any order and
checks every request against ``assemble_openai`` over the stored history; the real
openai and anthropic SDKs, over loopback HTTP, send what ``prepare`` returns and
hand ``record`` what they got back.
"""

from __future__ import annotations

import json

import anthropic
import openai
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from memory_summary import Message, SummaryConfig, SummaryEngine, ToolCall
from memory_summary.adapters import InMemoryStore
from memory_summary.domain import anthropic_pairs, messages_to_anthropic
from memory_summary.response_items import items_of
from memory_summary.testing.fakes import InstrumentedSummarizer
from tests.anthropic_server import AnthropicServer
from tests.anthropic_server import Behaviour as AnthropicBehaviour
from tests.openai_server import Behaviour, OpenAICompatibleServer

SID = "s"
words = st.sampled_from(["alpha", "beta", "gamma", "delta", "order 17", "tram 28"])
formats = st.sampled_from(["openai", "anthropic", "responses"])


class HandleAgainstAssemble(RuleBasedStateMachine):
    """Turns, tool calls, foreign writes, pops and compressions in any order."""

    @initialize(
        mask=st.sampled_from([None, 1, 3]),
        system=st.sampled_from([None, "", " \n", "Be brief."]),
    )
    def start(self, mask, system):
        self.store = InMemoryStore()
        config = SummaryConfig(
            threshold=400, keep_recent=3, mask_tool_results_after=mask
        )
        self.engine = SummaryEngine(
            self.store, InstrumentedSummarizer(), config=config
        ).start()
        self.chat = self.engine.conversation(SID)
        self.system = system
        self.calls = 0

    def teardown(self):
        if hasattr(self, "engine"):
            self.engine.stop()

    @rule(text=words, kind=formats)
    def user_turn(self, text, kind):
        self.check(self.chat.prepare(text, system=self.system, format=kind), kind)

    @rule(text=words)
    def reply(self, text):
        self.chat.record(
            {"choices": [{"message": {"role": "assistant", "content": text}}]}
        )

    @rule(count=st.integers(1, 3), recall=st.booleans(), data=st.data())
    def tool_call(self, count, recall, data):
        calls = []
        where = data.draw(st.integers(0, count - 1)) if recall else -1
        for index in range(count):
            self.calls += 1
            name = "search_history" if index == where else "lookup"
            args = {"query": "order"} if name == "search_history" else {"q": "x"}
            calls.append(ToolCall(f"c{self.calls}", name, json.dumps(args)))
        recorded = self.chat.record(Message("assistant", None, tool_calls=calls))
        # the host answers any of its calls, in any order (or none yet)
        answered = data.draw(st.permutations(recorded.pending))
        answered = answered[: data.draw(st.integers(0, len(answered)))]
        if answered:
            self.chat.add(
                *(
                    {"role": "tool", "tool_call_id": c.id, "content": f"result {c.id}"}
                    for c in answered
                )
            )

    @rule(text=words, role=st.sampled_from(["user", "assistant", "system"]))
    def foreign_save(self, text, role):
        self.store.save_message(SID, Message(role, text))

    @rule()
    def foreign_pop(self):
        self.store.pop_message(SID)

    @rule()
    def compress(self):
        self.engine.compress(SID).result(timeout=10)

    @rule()
    def clear_history(self):
        self.store.clear_session(SID)

    @rule(kind=formats)
    def prepare_again(self, kind):
        self.check(self.chat.prepare(system=self.system, format=kind), kind)

    def check(self, request, kind="openai"):
        head = [Message("system", self.system)] if (self.system or "").strip() else []
        stored = self.store.get_history(SID)
        given = [*head, *stored]
        if kind == "anthropic":
            assembled = self.engine.assemble(
                given, SID, placement="merge", repair=False
            )
            system, turns = messages_to_anthropic(
                anthropic_pairs(assembled, True), alternate=True
            )
            expected = {"messages": turns}
            if system is not None:
                expected["system"] = system
            assert request == expected
            return
        assembled = self.engine.assemble(given, SID, placement="merge")
        if kind == "responses":
            assert request == items_of(assembled)
        else:
            assert request == [message.to_openai() for message in assembled]

    @invariant()
    def a_request_list_is_the_callers(self):
        if hasattr(self, "chat"):
            for kind in ("openai", "anthropic", "responses"):
                first = self.chat.prepare(system=self.system, format=kind)
                listed = first["messages"] if kind == "anthropic" else first
                listed.append({"role": "assistant", "content": "appended by the host"})
                listed.pop(0)
                self.check(self.chat.prepare(system=self.system, format=kind), kind)


HandleAgainstAssemble.TestCase.settings = settings(
    settings.get_profile(settings._current_profile or "dev"),
    stateful_step_count=25,
)
TestHandleAgainstAssemble = HandleAgainstAssemble.TestCase


def test_the_openai_sdk_sends_the_request_and_its_reply_is_recorded():
    store = InMemoryStore()
    config = SummaryConfig(threshold=400, keep_recent=3, context_window=1000)
    with (
        OpenAICompatibleServer() as server,
        SummaryEngine(store, InstrumentedSummarizer(), config=config) as engine,
    ):
        server.then(Behaviour(text="Hello there.", usage={"prompt_tokens": 900}))
        client = openai.OpenAI(base_url=server.base_url, api_key="none")
        chat = engine.conversation("o", model="local-model")
        request = chat.prepare("Hi!", system="Be kind.")
        reply = client.chat.completions.create(model="local-model", messages=request)
        recorded = chat.record(reply)
        assert engine.wait_idle(timeout=10)
        client.close()

    assert server.requests[0]["messages"] == request
    assert recorded.reply.content == "Hello there."
    assert [m.content for m in store.get_history("o")] == ["Hi!", "Hello there."]


def test_the_anthropic_sdk_sends_the_request_and_its_reply_is_recorded():
    store = InMemoryStore()
    with (
        AnthropicServer() as server,
        SummaryEngine(store, InstrumentedSummarizer()) as engine,
    ):
        server.then(AnthropicBehaviour(text="Bonjour.", cache_read=1000))
        client = anthropic.Anthropic(base_url=server.base_url, api_key="none")
        chat = engine.conversation("a")
        request = chat.prepare(
            "Salut", system="Réponds en français.", format="anthropic"
        )
        reply = client.messages.create(
            model="claude-haiku-4-5", max_tokens=64, **request
        )
        recorded = chat.record(reply)
        client.close()

    sent = server.requests[0]
    assert sent["system"] == "Réponds en français."
    assert sent["messages"] == [{"role": "user", "content": "Salut"}]
    assert recorded.reply.text == "Bonjour."
    assert [m.role for m in store.get_history("a")] == ["user", "assistant"]
