from __future__ import annotations

import json

import attrs
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import Message, ToolCall
from memory_summary.domain.config import MAX_INSTRUCTIONS_CHARS
from memory_summary.domain.recall_tools import (
    CompactRequest,
    ReadRequest,
    SearchRequest,
    ToolError,
    compact_result_text,
    parse_recall_call,
    read_result_text,
    search_result_text,
    tool_definitions,
)
from memory_summary.domain.truncate import PROBE_CHARS_PER_TOKEN
from memory_summary.testing.strategies import texts


@attrs.frozen
class FakeHit:
    message: Message
    score: float = 1.0
    archived: bool = True
    summary_version: int | None = 2


def words(text: str) -> int:
    return len(text.split()) + 1


def test_the_definitions_are_valid_json_schema_of_openai_function_tools():
    definitions = tool_definitions()

    for definition in definitions:
        assert definition["type"] == "function"
        function = definition["function"]
        assert function["description"]
        jsonschema.Draft202012Validator.check_schema(function["parameters"])
    assert json.loads(json.dumps(definitions)) == definitions


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search_history", {"query": "Paris"}),
        ("search_history", {"query": "巴黎", "limit": 20, "archived_only": True}),
        ("read_history", {"around_id": 7}),
        ("read_history", {"tool_call_id": "call_1", "before": 0, "after": 20}),
        ("compact_context", {}),
        ("compact_context", {"focus": "keep order 42"}),
    ],
)
def test_what_the_schema_accepts_parses(name, arguments):
    schema = next(
        d["function"]["parameters"]
        for d in tool_definitions()
        if d["function"]["name"] == name
    )
    jsonschema.validate(arguments, schema)

    parsed = parse_recall_call(name, json.dumps(arguments))

    assert isinstance(parsed, (SearchRequest, ReadRequest, CompactRequest))


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("search_history", "{not json", "not valid JSON"),
        ("search_history", "[1, 2]", "must be a JSON object"),
        ("search_history", "", '"query" is required'),
        ("search_history", '{"query": "   "}', '"query" is required'),
        ("search_history", '{"query": 5}', '"query" is required'),
        ("search_history", json.dumps({"query": "x" * 1001}), "at most 1000"),
        ("search_history", '{"query": "a", "limit": "5"}', "limit must be an integer"),
        ("search_history", '{"query": "a", "limit": true}', "limit must be an integer"),
        ("search_history", '{"query": "a", "limit": 0}', "between 1 and 20"),
        ("search_history", '{"query": "a", "archived_only": 1}', "true or false"),
        ("search_history", '{"query": "a", "q": 1}', "unknown argument(s) q"),
        ("read_history", "{}", "exactly one of"),
        ("read_history", '{"around_id": 1, "tool_call_id": "c"}', "exactly one of"),
        ("read_history", '{"around_id": 1.5}', "around_id must be an integer"),
        ("read_history", '{"around_id": 0}', "between 1 and"),
        ("read_history", '{"around_id": 3, "before": 21}', "between 0 and 20"),
        ("read_history", '{"tool_call_id": ""}', "non-empty text"),
        ("compact_context", '{"focus": 7}', '"focus" must be text, not 7'),
        ("compact_context", '{"focus": ["a"]}', '"focus" must be text'),
        ("compact_context", json.dumps({"focus": "x" * 2001}), "at most 2000"),
        ("compact_context", '{"topic": "x"}', "unknown argument(s) topic"),
        ("compact_context", "[]", "must be a JSON object"),
        ("forget_everything", "{}", "unknown tool 'forget_everything'"),
    ],
)
def test_a_bad_call_is_a_tool_error_that_says_what_was_wrong(name, arguments, says):
    parsed = parse_recall_call(name, arguments)

    assert isinstance(parsed, ToolError)
    assert says in parsed.text
    assert parsed.text.startswith("Error: ")


def test_an_integral_float_is_an_integer_as_in_json_schema():
    assert parse_recall_call("read_history", '{"around_id": 7.0}') == ReadRequest(7)


@given(name=texts(80), arguments=texts(400))
def test_parsing_never_raises(name, arguments):
    parsed = parse_recall_call(name, arguments)

    assert isinstance(parsed, (SearchRequest, ReadRequest, CompactRequest, ToolError))


def test_compact_context_is_offered_unless_the_host_leaves_it_out():
    names = [d["function"]["name"] for d in tool_definitions()]
    reading = [d["function"]["name"] for d in tool_definitions(compaction=False)]

    assert names == ["search_history", "read_history", "compact_context"]
    assert reading == ["search_history", "read_history"]


def test_compact_context_takes_an_optional_focus_bounded_as_instructions():
    schema = tool_definitions()[2]["function"]["parameters"]

    assert parse_recall_call("compact_context", "") == CompactRequest("")
    assert parse_recall_call("compact_context", '{"focus": null}') == CompactRequest()
    assert parse_recall_call(
        "compact_context", '{"focus": "  the refund  "}'
    ) == CompactRequest("the refund")
    longest = json.dumps({"focus": "x" * MAX_INSTRUCTIONS_CHARS})
    assert parse_recall_call("compact_context", longest) == CompactRequest(
        "x" * MAX_INSTRUCTIONS_CHARS
    )
    assert schema["properties"]["focus"]["maxLength"] == MAX_INSTRUCTIONS_CHARS


def test_the_compaction_result_says_it_was_requested_and_its_focus():
    assert compact_result_text("").startswith("Compaction requested")
    assert "'order 42'" in compact_result_text("order 42")
    assert "order 42" in compact_result_text("order 42", locale="zh")


def test_search_results_name_ids_lineage_and_scores():
    hits = [
        FakeHit(Message("user", "I moved to Lisbon in May.", id=12), 3.25),
        FakeHit(Message("assistant", "Lisbon is lovely.", id=13), 1.0, False, None),
    ]

    text = search_result_text("Lisbon", hits, cap_tokens=1500, count_tokens=words)

    lines = text.splitlines()
    assert lines[1] == (
        "[id 12, archived, summary v2, score 3.25] User: I moved to Lisbon in May."
    )
    assert lines[2] == "[id 13, active, score 1.00] Assistant: Lisbon is lovely."


@given(
    bodies=st.lists(texts(3000), min_size=1, max_size=25),
    cap=st.integers(100, 2000),
)
def test_a_result_never_exceeds_the_cap(bodies, cap):
    hits = [FakeHit(Message("user", body, id=i + 1)) for i, body in enumerate(bodies)]

    searched = search_result_text("q", hits, cap_tokens=cap, count_tokens=len)
    read = read_result_text(hits, cap_tokens=cap, count_tokens=len)

    assert len(searched) <= cap
    assert len(read) <= cap


def test_a_huge_tool_result_does_not_crowd_out_the_other_turns():
    call = ToolCall("c1", "read_logs", '{"path": "/var/log/app.log"}')
    entries = [
        FakeHit(Message("assistant", None, tool_calls=[call], id=4)),
        FakeHit(Message("tool", "line ok " * 20_000, tool_call_id="c1", id=5)),
        FakeHit(Message("user", "So the disk is full?", id=6), archived=False),
    ]

    text = read_result_text(entries, cap_tokens=300, count_tokens=words)

    assert words(text) <= 300
    assert "Call read_logs(" in text
    assert "Tool result(read_logs): line ok" in text
    assert text.splitlines()[-1] == "[id 6, active] User: So the disk is full?"


def test_zh_results_use_the_locales_titles_and_labels():
    hits = [FakeHit(Message("user", "我住在里斯本。", id=3), 2.0)]

    searched = search_result_text(
        "里斯本", hits, cap_tokens=500, count_tokens=len, locale="zh"
    )
    read = read_result_text(hits, cap_tokens=500, count_tokens=len, locale="zh")
    nothing = search_result_text(
        "巴黎", [], cap_tokens=500, count_tokens=len, locale="zh"
    )

    assert searched.splitlines() == [
        "1 条消息匹配 '里斯本'，按相关度排序；"
        "read_history(around_id=...) 可查看其前后的对话。",
        "[id 3, archived, summary v2, score 2.00] 用户: 我住在里斯本。",
    ]
    assert read.splitlines()[0] == "本对话中 id 为 3 至 3 的消息，按顺序："
    assert nothing == "本对话中没有消息匹配 '巴黎'。"


def test_the_tokenizer_reads_what_can_be_shown_not_the_whole_hits():
    read: list[int] = []

    def counting(text: str) -> int:
        read.append(len(text))
        return len(text) // 3

    body = "a1b2c3d4e5 " * 40_000  # 440,000 characters a hit
    hits = [FakeHit(Message("user", f"{i} {body}", id=i + 1)) for i in range(20)]
    entries = [FakeHit(Message("user", body, id=i + 1)) for i in range(41)]

    searched = search_result_text("q", hits, cap_tokens=1500, count_tokens=counting)
    searched_chars, read[:] = sum(read), []
    shown = read_result_text(entries, cap_tokens=1500, count_tokens=counting)
    read_chars = sum(read)

    bound = 3 * 1500 * PROBE_CHARS_PER_TOKEN  # a few passes over what fits the cap
    assert searched_chars <= len(hits) * bound < len(hits) * len(body)
    assert read_chars <= len(entries) * bound < len(entries) * len(body)
    assert searched.count("[id ") == 20
    assert counting(shown) <= 1500
