"""What the engine remembers of a session's Anthropic requests: clean, own copies."""

from __future__ import annotations

import json
import logging

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.actors.session_facts import MAX_REQUEST_BYTES, SessionMemory

HEADER = "Summary of the earlier conversation (older messages were archived):"
TOOL = {
    "name": "lookup",
    "description": "Look a word up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
}


def test_the_system_is_kept_without_a_merged_summary():
    memory = SessionMemory()

    memory.set_request("s1", f"Be brief.\n\n{HEADER}\nAn old summary.", [TOOL])

    assert memory.get("s1").system == "Be brief."


def test_the_tools_are_a_copy_the_host_cannot_change():
    memory = SessionMemory()
    tool = {"name": "lookup", "input_schema": {"type": "object", "properties": {}}}
    system = [{"type": "text", "text": "Be brief."}]

    memory.set_request("s1", system, [tool])
    tool["input_schema"]["properties"]["q"] = object()
    system[0]["text"] = "changed"

    facts = memory.get("s1")
    assert facts.tools == (
        {"name": "lookup", "input_schema": {"type": "object", "properties": {}}},
    )
    assert facts.system == [{"type": "text", "text": "Be brief."}]


def test_a_request_without_tools_keeps_the_tools_remembered():
    memory = SessionMemory()

    memory.set_request("s1", "Be brief.", [TOOL])
    memory.set_request("s1", "Be terse.")

    facts = memory.get("s1")
    assert (facts.system, facts.tools) == ("Be terse.", (TOOL,))


def test_an_empty_tools_list_forgets_them():
    memory = SessionMemory()

    memory.set_request("s1", "Be brief.", [TOOL])
    memory.set_request("s1", "Be brief.", [])

    assert memory.get("s1").tools == ()


def test_a_request_over_the_cap_is_not_remembered(caplog):
    memory = SessionMemory()
    memory.set_request("s1", "Be brief.", [TOOL])

    with caplog.at_level(logging.DEBUG, logger="memory_summary.actors.session_facts"):
        memory.set_request("s1", "x" * MAX_REQUEST_BYTES, [TOOL])

    facts = memory.get("s1")
    assert (facts.system, facts.tools) == (None, ())
    assert "not remembered" in caplog.text


def test_tools_that_are_not_json_are_not_remembered():
    memory = SessionMemory()

    memory.set_request("s1", "Be brief.", [{"name": "t", "x": object()}])

    assert (memory.get("s1").system, memory.get("s1").tools) == (None, ())


def test_sessions_sending_the_same_prompt_share_one_copy():
    memory = SessionMemory()
    system = "Be brief. " * 100

    for n in range(50):
        memory.set_request(f"s{n}", system, [TOOL])

    assert memory.get("s0").system is memory.get("s49").system
    assert memory.get("s0").tools is memory.get("s49").tools
    assert memory.requests_chars == len(json.dumps(system)) + len(json.dumps([TOOL]))


def test_distinct_prompts_past_the_cap_drop_the_oldest_sessions_copies(caplog):
    memory = SessionMemory(max_requests_chars=10_000)

    with caplog.at_level(logging.DEBUG, logger="memory_summary.actors.session_facts"):
        for n in range(40):
            memory.set_model(f"s{n}", "claude-x")
            memory.set_request(f"s{n}", f"You serve user {n}. " + "x" * 1_000)

    assert memory.requests_chars <= 10_000
    assert memory.get("s39").system.startswith("You serve user 39.")
    assert memory.get("s0").system is None
    assert memory.get("s0").model == "claude-x"  # only the copies go
    assert "no longer remembered" in caplog.text
    memory.set_request("s0", "You serve user 0. " + "x" * 1_000)  # named again
    assert memory.get("s0").system.startswith("You serve user 0.")


def _held(memory: SessionMemory) -> int:
    """The characters the sessions' facts hold, each distinct JSON once."""
    texts = {
        (kind, text)
        for n in range(6)
        for kind, text in (
            ("system", memory.get(f"s{n}").system_json),
            ("tools", memory.get(f"s{n}").tools_json),
        )
        if text is not None
    }
    return sum(len(text) for _, text in texts)


SYSTEMS = st.sampled_from(
    ["Be brief.", "Be terse.", "x" * 300, "y" * 600, None, [], [TOOL]]
)
TOOLSETS = st.sampled_from([None, [], [TOOL], [TOOL, {**TOOL, "name": "other"}]])
ACTIONS = st.one_of(
    st.tuples(st.just("request"), st.integers(0, 5), SYSTEMS, TOOLSETS),
    st.tuples(st.just("pop"), st.integers(0, 5)),
    st.tuples(st.just("model"), st.integers(0, 5)),
)


@given(st.lists(ACTIONS, max_size=40), st.integers(1, 6), st.integers(0, 2_000))
def test_the_copies_counted_are_the_copies_the_sessions_hold(actions, capacity, cap):
    memory = SessionMemory(capacity=capacity, max_requests_chars=cap)
    for action in actions:
        sid = f"s{action[1]}"
        if action[0] == "request":
            memory.set_request(sid, action[2], action[3])
        elif action[0] == "pop":
            memory.pop(sid)
        else:
            memory.set_model(sid, "m")
        assert memory.requests_chars == _held(memory)
        holding = [
            n
            for n in range(6)
            if memory.get(f"s{n}").system_json or memory.get(f"s{n}").tools_json
        ]
        assert memory.requests_chars <= cap or len(holding) <= 1


def test_the_copies_dropped_first_are_those_of_the_sessions_least_recently_touched():
    memory = SessionMemory(max_requests_chars=2_500)
    for n in range(2):
        memory.set_request(f"s{n}", f"You serve user {n}. " + "x" * 1_000)
    memory.set_model("s0", "claude-x")  # s0 is now the more recent

    memory.set_request("s2", "You serve user 2. " + "x" * 1_000)

    assert memory.get("s1").system is None
    assert memory.get("s0").system.startswith("You serve user 0.")
    assert memory.get("s2").system.startswith("You serve user 2.")


def test_a_system_and_tools_of_the_same_json_are_kept_apart():
    """One session's system may be another's tools, JSON for JSON: two copies."""
    memory = SessionMemory()

    memory.set_request("a", [], None)
    memory.set_request("b", "Hi", [])
    memory.set_request("c", [TOOL], None)
    memory.set_request("d", "Hi", [TOOL])

    assert memory.get("b").tools == ()
    assert memory.get("d").tools == (TOOL,)
