"""What the engine remembers of a session's Anthropic requests: clean, own copies."""

from __future__ import annotations

import logging

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
