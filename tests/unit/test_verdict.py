from __future__ import annotations

import pytest

from memory_summary.adapters.summarizers.offline.extractive import ExtractiveSummarizer
from memory_summary.conversations import session_turns
from memory_summary.domain import (
    Accepted,
    Message,
    Rejected,
    ToolCall,
    check_summary,
    render_transcript,
    summary_request,
    system_prompt,
)
from memory_summary.domain.injection import TRUNCATION_SUFFIXES

CONVERSATIONS = {
    "en": [
        Message(
            "user",
            "Our nightly billing export fails with HTTP 429 from the billing API. "
            "It started after we moved the job to 02:00 UTC.",
        ),
        Message(
            "assistant",
            "The billing API allows 60 requests per minute. Your export sends 400 "
            "requests in a burst, so retry with exponential backoff and batch the "
            "invoice ids in groups of 50.",
        ),
        Message("user", "Batching worked. Can you write the retry helper in Python?"),
        Message(
            "assistant",
            "Here is the helper:\n```python\ndef retry(call, attempts=5):\n"
            "    for n in range(attempts):\n        try:\n            return call()\n"
            "        except RateLimited:\n            sleep(2 ** n)\n```",
        ),
        Message(
            "assistant",
            "",
            tool_calls=[ToolCall("c1", "run_tests", '{"path": "tests/billing"}')],
        ),
        Message("tool", "12 passed in 3.2s", tool_call_id="c1"),
        Message("user", "Great, all green. Please remember I prefer type hints."),
        Message("assistant", "Noted: type hints in every Python snippet from now on."),
    ],
    "zh": [
        Message(
            "user",
            "我们的夜间账单导出任务调用计费接口时返回 429 错误，"
            "从改到凌晨两点运行后开始出现。",
        ),
        Message(
            "assistant",
            "计费接口每分钟最多允许 60 次请求，而导出任务会瞬间发出 400 次请求。"
            "建议使用指数退避重试，并把发票编号按 50 个一组分批提交。",
        ),
        Message("user", "分批之后好了。能帮我用 Python 写一个重试函数吗？"),
        Message(
            "assistant",
            "函数如下：\n```python\ndef retry(call, attempts=5):\n"
            "    for n in range(attempts):\n        return call()\n```",
        ),
        Message(
            "assistant",
            "",
            tool_calls=[ToolCall("c1", "run_tests", '{"path": "tests/billing"}')],
        ),
        Message("tool", "12 项测试全部通过，用时 3.2 秒", tool_call_id="c1"),
        Message("user", "太好了。请记住我希望代码里都写类型注解。"),
        Message("assistant", "好的，以后所有 Python 代码都会带类型注解。"),
    ],
}


def transcript_of(locale: str, messages=None) -> list[str]:
    return render_transcript(messages or CONVERSATIONS[locale], locale=locale)


def verdict(reply: str, locale: str = "en", **overrides):
    arguments = {
        "transcript": transcript_of(locale),
        "previous": None,
        "budget_tokens": 2000,
        "count_tokens": len,
        "locale": locale,
    }
    arguments.update(overrides)
    return check_summary(reply, **arguments)


def extractive_verdict(messages, *, locale, previous=None, budget=2000):
    transcript = render_transcript(messages, locale=locale)
    system = system_prompt("", locale=locale, budget_tokens=budget, reason="manual")
    request = summary_request(
        transcript, previous_summary=previous, todo=None, system=system, locale=locale
    )
    reply = ExtractiveSummarizer(len).complete(
        request, max_tokens=budget, temperature=0.3
    )
    result = check_summary(
        reply,
        transcript=transcript,
        previous=previous,
        budget_tokens=budget,
        count_tokens=len,
        locale=locale,
    )
    return reply, result


# -- honest summaries are accepted ---------------------------------------------


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_the_extractive_summary_of_a_real_transcript_is_accepted(locale):
    reply, result = extractive_verdict(CONVERSATIONS[locale], locale=locale)

    assert result == Accepted(reply, len(reply), cut=False)


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_the_extractive_summary_with_a_previous_summary_is_accepted(locale):
    messages = CONVERSATIONS[locale]
    previous, _ = extractive_verdict(messages[:4], locale=locale)

    reply, result = extractive_verdict(messages[4:], locale=locale, previous=previous)

    assert previous.splitlines()[0] in reply
    assert isinstance(result, Accepted)


@pytest.mark.parametrize("session", [0, 1, 2, 5])
@pytest.mark.parametrize("size", [2, 4, 10, 30])
def test_extractive_summaries_of_demo_sessions_are_accepted(session, size):
    locale = "zh" if session % 3 == 2 else "en"
    turns = session_turns(session, 12, seed=7)
    messages = [message for turn in turns for message in turn.messages][:size]

    reply, result = extractive_verdict(messages, locale=locale, budget=512)

    assert reply
    assert isinstance(result, Accepted), result


@pytest.mark.parametrize(
    ("locale", "reply"),
    [
        ("en", "The assistant declined to share the admin password; the user agreed."),
        ("en", "The assistant refused to run the migration without a backup."),
        ("en", "The user hit Error 429 from the billing API; fixed by retrying."),
        ("en", "Error handling in the export job was rewritten with backoff."),
        ("en", "Rate limiting came up: the billing API allows 60 requests a minute."),
        ("en", "500 invoices failed overnight; batching them in 50s fixed it."),
        ("en", "Internal server errors stopped once the user batched the requests."),
        ("zh", "助手拒绝提供管理员密码，用户表示理解。"),
        ("zh", "用户调用计费接口时遇到错误 429，重试后解决。"),
        ("zh", "限流策略：计费接口每分钟 60 次，用户改为分批提交。"),
    ],
)
def test_summaries_that_mention_refusals_or_errors_are_accepted(locale, reply):
    assert verdict(reply, locale) == Accepted(reply, len(reply), cut=False)


@pytest.mark.parametrize(
    ("locale", "window", "reply"),
    [
        (
            "en",
            [
                Message("user", "Hi! I'm Ana, I live in Oslo."),
                Message("assistant", "Nice to meet you, Ana."),
                Message("user", "What should I pack for March?"),
            ],
            "Ana lives in Oslo and asked what to pack for a trip in March.",
        ),
        (
            "en",
            [Message("user", "Call me Bo."), Message("assistant", "Sure, Bo.")],
            "The user wants to be called Bo.",
        ),
        (
            "zh",
            [
                Message("user", "你好，我叫小林，住在成都。"),
                Message("assistant", "你好，小林！"),
                Message("user", "三月去北京要带什么衣服？"),
                Message("assistant", "带一件厚外套和围巾。"),
            ],
            "用户小林住在成都，询问三月去北京的穿衣建议；助手建议带厚外套和围巾。",
        ),
        (
            "zh",
            [Message("user", "叫我小波。"), Message("assistant", "好的，小波。")],
            "用户希望被称为小波。",
        ),
    ],
)
def test_a_short_paragraph_over_a_small_window_is_accepted(locale, window, reply):
    result = verdict(reply, locale, transcript=transcript_of(locale, window))

    assert result == Accepted(reply, len(reply), cut=False)


def test_quoting_part_of_a_multi_line_entry_is_not_an_echo():
    reply = (
        "The assistant wrote a retry helper:\n```python\n"
        "def retry(call, attempts=5):\n```\nThe user prefers type hints."
    )

    assert isinstance(verdict(reply), Accepted)


def test_lines_kept_from_the_previous_summary_are_no_echo():
    transcript = transcript_of("en")
    previous = "\n".join(transcript[:3])

    result = verdict(previous + "\nThe tests passed.", previous=previous)

    assert isinstance(result, Accepted)


# -- cleaning ------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "<think>Let me see.</think>The user batched the export.",
        "<THINK>\nplan\n</Think>\nThe user batched the export.",
        "<thinking>a\n<think>b</think>c</thinking>The user batched the export.",
        "the model reasoned here...\n</think>\n\nThe user batched the export.",
        "<think>x</think><think>y</think>The user batched the export.",
        "<conversation>\nThe user batched the export.\n</conversation>",
        "<previous_summary>The user batched the export.</previous_summary>",
        "  <Current_Task_State>The user batched the export.</current_task_state >  ",
    ],
)
def test_reasoning_blocks_and_echoed_prompt_tags_are_removed(reply):
    assert verdict(reply).text == "The user batched the export."


def test_an_unclosed_tag_after_text_is_a_mention_and_kept():
    reply = "The user asked how to strip <think> tags from model output."

    assert verdict(reply).text == reply


def test_hostile_characters_are_normalized():
    result = verdict("The user\x00 likes tea \ud800 and coffee.")

    assert result.text == "The user likes tea \ufffd and coffee."


# -- rejections ----------------------------------------------------------------


@pytest.mark.parametrize("locale", ["en", "zh"])
@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n\t ",
        "<think>I should summarize this.</think>",
        "<think>I should summarize this, first the billing part, then",
        "  <thinking>cut off mid-thought",
        "<conversation>\n</conversation>",
        "\x00\x00",
    ],
)
def test_nothing_left_after_cleaning_is_empty(reply, locale):
    result = verdict(reply, locale)

    assert isinstance(result, Rejected)
    assert result.reason == "empty"


@pytest.mark.parametrize(
    "reply",
    [
        "Error: 429 Too Many Requests",
        "Error code: 500 - {'error': {'message': 'The server had an error'}}",
        "error: upstream timed out",
        "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min.",
        "rate_limit_exceeded",
        "Too Many Requests",
        "Internal Server Error",
        "upstream connect error or disconnect/reset before headers. reset reason: "
        "connection failure",
        "no healthy upstream",
        '{"error": {"message": "Overloaded", "type": "overloaded_error"}}',
        '{"object": "error", "message": "model not found", "code": 404}',
        '{"detail": "Not Found"}',
        "502 Bad Gateway",
        "HTTP/1.1 503 Service Unavailable",
        "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
        "<!DOCTYPE html>\n<html>" + "<p>Cloudflare</p>" * 200 + "</html>",
        "The server had an error while processing your request. Sorry about that!",
        "That model is currently overloaded with other requests.",
        "You exceeded your current quota, please check your plan and billing details.",
        "Incorrect API key provided: sk-abc.",
        "Connection error.",
        "Request timed out.",
        "Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: 'a'",
    ],
)
def test_english_provider_error_text_is_rejected(reply):
    result = verdict(reply)

    assert isinstance(result, Rejected)
    assert result.reason == "provider_error"


@pytest.mark.parametrize(
    "reply",
    [
        "错误：请求过于频繁，请稍后再试",
        "错误码：429",
        "请求过于频繁，请稍后再试。",
        "服务器内部错误",
        "系统繁忙，请稍后再试",
        "服务暂时不可用",
        "账户欠费，请充值后重试",
        "Error: 429 Too Many Requests",
    ],
)
def test_chinese_provider_error_text_is_rejected(reply):
    result = verdict(reply, "zh")

    assert isinstance(result, Rejected)
    assert result.reason == "provider_error"


def test_a_long_reply_that_starts_like_an_error_is_not_a_provider_error():
    reply = "Error: " + "the user and the assistant fixed the export. " * 20

    assert isinstance(verdict(reply), Accepted)


@pytest.mark.parametrize(
    "reply",
    [
        "I can't help with that.",
        "I cannot summarize this conversation.",
        "I'm sorry, but I cannot assist with that request.",
        "I\u2019m sorry, but I can\u2019t continue.",
        "Sorry, I can't do that.",
        "Unfortunately, I am unable to help with this request.",
        "As an AI language model, I cannot summarize private conversations.",
        "I won't summarize this.",
        "I apologize, but this conversation contains content I can't process.",
        "**I'm sorry**, I can't help with that.",
    ],
)
def test_english_refusals_are_rejected(reply):
    result = verdict(reply)

    assert isinstance(result, Rejected)
    assert result.reason == "refusal"


@pytest.mark.parametrize(
    "reply",
    [
        "抱歉，我无法完成这个请求。",
        "对不起，我不能提供该内容的摘要。",
        "我不能帮助你处理这个请求。",
        "我无法总结这段对话。",
        "作为一个AI语言模型，我无法总结私人对话。",
        "很遗憾，我无法完成该任务。",
        "I can't help with that.",
    ],
)
def test_chinese_refusals_are_rejected(reply):
    result = verdict(reply, "zh")

    assert isinstance(result, Rejected)
    assert result.reason == "refusal"


def test_a_long_reply_that_opens_with_an_apology_is_a_summary():
    reply = "I'm sorry for the length. " + "The user fixed the billing export. " * 20

    assert isinstance(verdict(reply), Accepted)


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_a_reply_that_repeats_the_transcript_is_an_echo(locale):
    reply = "\n".join(transcript_of(locale))

    result = verdict(reply, locale)

    assert isinstance(result, Rejected)
    assert result.reason == "echo"


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_an_echo_of_the_whole_request_is_an_echo(locale):
    transcript = transcript_of(locale)
    request = summary_request(
        transcript, previous_summary=None, todo=None, system="s", locale=locale
    )

    result = verdict(request[-1].content, locale)

    assert isinstance(result, Rejected)
    assert result.reason == "echo"


def test_mostly_echoed_entries_under_a_short_heading_are_an_echo():
    transcript = transcript_of("en")
    reply = "Summary:\n" + "\n".join(transcript[:3])

    result = verdict(reply)

    assert isinstance(result, Rejected)
    assert result.reason == "echo"


def test_an_echo_longer_than_the_budget_is_still_an_echo():
    transcript = transcript_of("en")

    result = verdict("\n".join(transcript), budget_tokens=100)

    assert isinstance(result, Rejected)
    assert result.reason == "echo"


@pytest.mark.parametrize(
    ("locale", "reply"),
    [
        ("en", "ok"),
        ("en", "Done."),
        ("en", "Nothing to summarize."),
        ("en", "..."),
        ("zh", "好的"),
        ("zh", "无"),
        ("zh", "已总结。"),
    ],
)
def test_a_bare_reply_for_hundreds_of_tokens_is_too_short(locale, reply):
    result = verdict(reply, locale)

    assert isinstance(result, Rejected)
    assert result.reason == "too_short"


def test_a_bare_reply_may_still_replace_a_long_previous_summary_only_if_long():
    previous = "The user set up billing exports, batching and retries. " * 10

    result = verdict("ok", transcript=["User: hi"], previous=previous)

    assert isinstance(result, Rejected)
    assert result.reason == "too_short"


def test_a_bare_reply_to_a_tiny_window_is_accepted():
    result = verdict("ok", transcript=["User: hi", "Assistant: hello"])

    assert result == Accepted("ok", 2, cut=False)


def test_a_short_reply_that_a_tiny_budget_squeezed_is_accepted():
    result = verdict("- Assistant: Sure.", budget_tokens=64)

    assert isinstance(result, Accepted)


def test_details_never_quote_the_reply():
    secret = "4111 1111 1111 1111"
    replies = [
        f"Error: 429 {secret}",
        f"I can't help with {secret}.",
        "\n".join([*transcript_of("en"), secret]),
        secret[:2],
    ]
    for reply in replies:
        result = verdict(reply)

        assert isinstance(result, Rejected)
        assert "4111" not in result.detail
        assert "41" not in result.detail.split()


# -- the budget ----------------------------------------------------------------


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_a_summary_over_the_budget_is_cut_with_the_locales_suffix(locale):
    reply = "The user fixed the billing export with batching and retries. " * 40

    result = verdict(reply, locale, budget_tokens=300)

    assert isinstance(result, Accepted)
    assert result.cut
    assert result.tokens == len(result.text) <= 300
    assert result.text.endswith(TRUNCATION_SUFFIXES[locale])
    assert reply.startswith(result.text[: -len(TRUNCATION_SUFFIXES[locale])])


def test_a_summary_within_the_budget_is_not_cut():
    reply = "The user fixed the billing export."

    assert verdict(reply, budget_tokens=len(reply)) == Accepted(reply, 34, cut=False)


@pytest.mark.parametrize("budget", [0, -5, 10])
def test_nothing_fits_a_budget_smaller_than_the_suffix(budget):
    result = verdict("The user fixed the billing export.", budget_tokens=budget)

    assert isinstance(result, Rejected)
    assert result.reason == "empty"
    assert str(budget) in result.detail
