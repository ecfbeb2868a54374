"""Deterministic, realistic chat sessions for the demo, generated from a seed.

Sessions alternate English and Chinese, and mix plain questions with tool calls whose
results are long (search results, file listings), so compressions have real work.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import attrs

from memory_summary.domain import Message, ToolCall

TOPICS_EN = [
    ("a trip to Lisbon", "flights", "hotel near Alfama", "the tram 28 schedule"),
    (
        "a Python data pipeline",
        "pandas merge errors",
        "parquet partitioning",
        "Airflow retries",
    ),
    (
        "a home renovation",
        "kitchen tiles",
        "plumbing quotes",
        "the electrician's visit",
    ),
    ("learning the guitar", "barre chords", "a practice plan", "buying a capo"),
    (
        "a job interview",
        "system design questions",
        "salary negotiation",
        "a thank-you note",
    ),
]
TOPICS_ZH = [
    ("去成都旅行", "高铁车票", "宽窄巷子附近的酒店", "大熊猫基地的开放时间"),
    ("学习机器学习", "梯度下降", "过拟合与正则化", "一个练习项目"),
    ("准备搬家", "搬家公司报价", "网络宽带迁移", "新家的家具清单"),
    ("公司年会策划", "场地预算", "节目安排", "抽奖礼品"),
]
TOOLS = ("web_search", "read_file", "manage_todo_list", "get_weather")


@attrs.frozen
class Turn:
    """The messages one turn adds: the question, tool calls and results, the answer."""

    messages: tuple[Message, ...]


def _tool_result(rng: random.Random, tool: str, subject: str, zh: bool) -> str:
    lines = []
    for index in range(rng.randint(4, 12)):
        if zh:
            lines.append(
                f"{index + 1}. 关于「{subject}」的结果：第{rng.randint(1, 99)}条记录，"
                f"评分 {rng.randint(1, 5)} 星，更新于 {rng.randint(1, 28)} 日。"
            )
        else:
            lines.append(
                f"{index + 1}. Result about {subject} from {tool}: entry "
                f"#{rng.randint(100, 999)}, rated {rng.randint(1, 5)}/5, "
                f"updated {rng.randint(1, 28)} days ago."
            )
    return "\n".join(lines)


def session_turns(session_index: int, turns: int, seed: int) -> Iterator[Turn]:
    """Yield the turns of one session; the same arguments always give the same turns."""
    rng = random.Random(seed * 100_003 + session_index)
    zh = session_index % 3 == 2
    topic, *subjects = rng.choice(TOPICS_ZH if zh else TOPICS_EN)
    todo: list[str] = []
    for number in range(turns):
        subject = subjects[number % len(subjects)]
        if zh:
            question = (
                f"关于{topic}，我想了解{subject}。"
                f"我的预算有限，希望第{number + 1}步能尽快完成。"
            )
            answer = (
                f"好的，关于{subject}：我建议先比较三个选项，再根据预算决定。"
                "已记下你的偏好。"
            )
        else:
            question = (
                f"About {topic}: can you help with {subject}? Step {number + 1}, "
                "and please keep it within my budget."
            )
            answer = (
                f"Sure. For {subject}, compare three options first, then decide by "
                "budget. I noted your preference for low cost."
            )
        messages = [Message("user", question)]
        if rng.random() < 0.45:
            tool = rng.choice(TOOLS)
            call_id = f"call_{session_index}_{number}"
            if tool == "manage_todo_list":
                todo.append(subject)
                arguments = json.dumps({"todos": todo[-5:]}, ensure_ascii=False)
            else:
                arguments = json.dumps({"query": subject}, ensure_ascii=False)
            messages.append(
                Message(
                    "assistant", "", tool_calls=[ToolCall(call_id, tool, arguments)]
                )
            )
            messages.append(
                Message(
                    "tool",
                    _tool_result(rng, tool, subject, zh),
                    tool_call_id=call_id,
                    name=tool,
                )
            )
        messages.append(Message("assistant", answer))
        yield Turn(tuple(messages))
