from __future__ import annotations

from memory_summary import Message, ToolCall
from memory_summary.domain import (
    input_limit_tokens,
    latest_todo_call,
    plan_chunks,
    summary_budget_tokens,
    summary_request,
    system_prompt,
)
from memory_summary.domain.prompt import AUTO_HINTS, BUILTIN_PROMPTS


def test_budget_is_context_times_ratio_with_a_512_floor_and_4096_when_unknown():
    assert summary_budget_tokens(128_000, 0.05) == 6400
    assert summary_budget_tokens(8_000, 0.05) == 512
    assert summary_budget_tokens(None, 0.5) == 2048
    assert summary_budget_tokens(0, 0.5) == 2048


def test_input_limit_leaves_room_for_answer_and_overhead_never_below_256():
    assert input_limit_tokens(32_000, 1_600, 2_000) == 32_000 - 1_600 - 2_000 - 64
    assert input_limit_tokens(1_000, 512, 900) == 256


def test_chunks_respect_count_and_token_limits_and_flag_oversized():
    spans = plan_chunks([3, 50, 3, 3], max_count=10, limit_tokens=10)

    assert [(c.start, c.stop, c.oversized) for c in spans] == [
        (0, 1, False),
        (1, 2, True),
        (2, 4, False),
    ]
    assert [(c.start, c.stop) for c in plan_chunks([1] * 5, 2, 100)] == [
        (0, 2),
        (2, 4),
        (4, 5),
    ]


def test_system_prompt_tells_the_budget_and_the_auto_hint_only_for_auto():
    manual = system_prompt("", locale="en", budget_tokens=777, reason="manual")
    auto = system_prompt("", locale="en", budget_tokens=777, reason="auto")

    assert manual.startswith(BUILTIN_PROMPTS["en"])
    assert "777 tokens" in manual
    assert AUTO_HINTS["en"] not in manual
    assert AUTO_HINTS["en"] in auto


def test_custom_prompt_replaces_the_builtin_and_chinese_hints_are_chinese():
    text = system_prompt("只保留事实。", locale="zh", budget_tokens=600, reason="auto")

    assert text.startswith("只保留事实。")
    assert BUILTIN_PROMPTS["zh"] not in text
    assert "600 个 token" in text
    assert AUTO_HINTS["zh"] in text


def test_builtin_prompts_cover_the_seed_topics():
    english = BUILTIN_PROMPTS["en"]
    for topic in (
        "needs",
        "decisions",
        "facts",
        "entities",
        "preferences",
        "who is speaking",
        "multi-step tasks",
        "commitments",
    ):
        assert topic in english
    for topic in ("需求", "决定", "事实", "实体", "偏好", "身份", "多步骤任务", "承诺"):
        assert topic in BUILTIN_PROMPTS["zh"]


def test_latest_todo_call_is_found_in_the_kept_part():
    kept = [
        Message(
            "assistant", "", tool_calls=[ToolCall("a", "manage_todo_list", '["old"]')]
        ),
        Message("assistant", "", tool_calls=[ToolCall("b", "search", "{}")]),
        Message("assistant", "", tool_calls=[ToolCall("c", "todo_manage", '["new"]')]),
        Message("tool", "ok", tool_call_id="c"),
    ]

    assert (
        latest_todo_call(kept, ("manage_todo_list", "todo_manage")).arguments
        == '["new"]'
    )
    assert latest_todo_call(kept, ("other",)) is None


def test_request_has_previous_summary_transcript_and_task_state_sections():
    todo = ToolCall("c", "manage_todo_list", '["step 2"]')

    system, user = summary_request(
        ["User: hi"], previous_summary="old facts", todo=todo, system="SYS", locale="en"
    )

    assert (system.role, system.content) == ("system", "SYS")
    assert (
        user.content.index("<previous_summary>\nold facts")
        < user.content.index("<conversation>\nUser: hi")
        < user.content.index("<current_task_state>")
    )
    assert 'manage_todo_list(["step 2"])' in user.content


def test_request_without_previous_summary_or_todo_has_only_the_conversation():
    _, user = summary_request(
        ["User: hi"], previous_summary=None, todo=None, system="S", locale="zh"
    )

    assert user.content == "<conversation>\nUser: hi\n</conversation>"
