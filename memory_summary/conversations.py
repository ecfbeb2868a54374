"""Deterministic, realistic chat sessions for the demo, generated from a seed.

Sessions alternate English and Chinese (every third is Chinese). Each session is about
one topic (``Topic``): the user asks about its subjects in varied words, states its
facts once each (a budget, a date, a booking reference, a decision), and the assistant
answers with what it found; about half the turns call a tool (a web search, the
weather, a to-do list, a notes file) whose results are long, so compressions have
real work. ``session_plan`` tells what a session is about and which facts it states,
so a reader can check a summary against its conversation.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import attrs

from memory_summary.domain import Message, ToolCall


@attrs.frozen
class Fact:
    """A fact a session states once: its kind, the words to look for, the sentence."""

    kind: str
    key: str
    said: str


@attrs.frozen
class Topic:
    """What a session is about: its subjects, facts and the assistant's findings."""

    name: str
    place: str
    subjects: tuple[str, ...]
    facts: tuple[Fact, ...]
    findings: dict[str, tuple[str, ...]]


@attrs.frozen
class SessionPlan:
    """The topic and the locale of one session (``session_plan``)."""

    index: int
    zh: bool
    topic: Topic


TOPICS_EN = (
    Topic(
        "a trip to Lisbon",
        "Lisbon",
        ("flights", "a hotel near Alfama", "the tram 28 schedule"),
        (
            Fact(
                "quantity",
                "1,200 EUR",
                "My whole budget is 1,200 EUR, flights included.",
            ),
            Fact("date", "14 May", "We land in Lisbon on 14 May around 10:40."),
            Fact("id", "LIS-4821", "The guesthouse confirmed, booking LIS-4821."),
            Fact(
                "decision",
                "Casa Azul",
                "Let's go with Casa Azul, the cheaper guesthouse.",
            ),
        ),
        {
            "flights": (
                "TAP flies direct at 07:15 for 189 EUR return.",
                "easyJet is cheaper at 142 EUR but lands after 23:00.",
            ),
            "a hotel near Alfama": (
                "Casa Azul has doubles from 68 EUR a night, near the castle.",
                "Alfama Patio is quieter but costs 95 EUR a night.",
            ),
            "the tram 28 schedule": (
                "Tram 28 runs every 12 minutes from 07:00; the first cars are empty.",
                "A 24-hour Carris pass costs 6.80 EUR and covers tram 28.",
            ),
        },
    ),
    Topic(
        "a Python data pipeline",
        "Berlin",
        ("pandas merge errors", "parquet partitioning", "Airflow retries"),
        (
            Fact(
                "path",
                "etl/load_orders.py",
                "The failing job lives in etl/load_orders.py.",
            ),
            Fact("quantity", "40 GB", "Each nightly batch is about 40 GB of parquet."),
            Fact("id", "JIRA-3317", "I track this work in ticket JIRA-3317."),
            Fact(
                "decision",
                "partition by day",
                "We decided to partition by day, not by customer.",
            ),
        ),
        {
            "pandas merge errors": (
                "The merge fails: order_id is int64 on one side, str on the other.",
                "Passing validate='one_to_one' shows the duplicated keys early.",
            ),
            "parquet partitioning": (
                "Daily partitions keep files near 128 MB, which suits the readers.",
                "Partitioning by customer would make 90,000 tiny files.",
            ),
            "Airflow retries": (
                "Set retries=3 with retry_exponential_backoff for the load task.",
                "The sensor should use mode='reschedule' so it frees its worker slot.",
            ),
        },
    ),
    Topic(
        "a home renovation",
        "Leeds",
        ("kitchen tiles", "plumbing quotes", "the electrician's visit"),
        (
            Fact("quantity", "£8,500", "We can spend £8,500 on the kitchen at most."),
            Fact("date", "3 June", "The builders start on 3 June."),
            Fact("name", "Priya Shah", "Our electrician is Priya Shah."),
            Fact(
                "decision", "matte grey", "We picked the matte grey tiles in the end."
            ),
        ),
        {
            "kitchen tiles": (
                "Porcelain tiles at £32 per square metre resist stains best.",
                "Matte finishes hide water marks better than gloss.",
            ),
            "plumbing quotes": (
                "Two plumbers quoted £1,150 and £1,480 for moving the sink.",
                "The cheaper quote leaves out the new isolation valves.",
            ),
            "the electrician's visit": (
                "Ask for a certificate after the new circuit is tested.",
                "Moving four sockets usually takes one day.",
            ),
        },
    ),
    Topic(
        "learning the guitar",
        "Dublin",
        ("barre chords", "a practice plan", "buying a capo"),
        (
            Fact("quantity", "20 minutes", "I can practise 20 minutes a day, no more."),
            Fact("name", "Sean Byrne", "My teacher is Sean Byrne, on Thursdays."),
            Fact("date", "21 March", "My first small gig is on 21 March."),
            Fact(
                "decision",
                "Kyser capo",
                "I'll take the Kyser capo, the quick-change one.",
            ),
        ),
        {
            "barre chords": (
                "Start with the F shape on the 5th fret, where the strings are lower.",
                "Roll the index finger slightly onto its bony side.",
            ),
            "a practice plan": (
                "Split the time: 5 minutes of scales, 10 of chords, 5 of a song.",
                "Record yourself once a week to hear the progress.",
            ),
            "buying a capo": (
                "A Kyser quick-change capo costs about 18 EUR.",
                "The Shubb is more precise but slower to move.",
            ),
        },
    ),
    Topic(
        "a job interview",
        "Toronto",
        ("system design questions", "salary negotiation", "a thank-you note"),
        (
            Fact("date", "9 October", "The onsite interview is on 9 October."),
            Fact("name", "Maria Chen", "The hiring manager is Maria Chen."),
            Fact("quantity", "$145,000", "I'd like at least $145,000 base salary."),
            Fact(
                "decision",
                "URL shortener",
                "I'll practise the URL shortener design first.",
            ),
        ),
        {
            "system design questions": (
                "Expect a rate limiter or a URL shortener; clarify the load first.",
                "Draw the read path before the write path.",
            ),
            "salary negotiation": (
                "Give a range that starts above your target.",
                "Ask about equity refreshers and the signing bonus too.",
            ),
            "a thank-you note": (
                "Send it within 24 hours and mention one topic you discussed.",
                "Keep it to five sentences.",
            ),
        },
    ),
)
TOPICS_ZH = (
    Topic(
        "去成都旅行",
        "成都",
        ("高铁车票", "宽窄巷子附近的酒店", "大熊猫基地的开放时间"),
        (
            Fact("quantity", "3000元", "我的总预算是3000元。"),
            Fact("date", "10月2日", "我们10月2日出发。"),
            Fact("id", "CD-7713", "酒店订单号是CD-7713。"),
            Fact("decision", "早上七点", "决定早上七点去大熊猫基地。"),
        ),
        {
            "高铁车票": (
                "G89次早上8点发车，二等座548元。",
                "提前15天买票比较容易买到。",
            ),
            "宽窄巷子附近的酒店": ("锦里客栈每晚320元，步行五分钟到宽窄巷子。",),
            "大熊猫基地的开放时间": (
                "基地7:30开门，早上熊猫最活跃。",
                "门票55元，可以网上预约。",
            ),
        },
    ),
    Topic(
        "学习机器学习",
        "北京",
        ("梯度下降", "过拟合与正则化", "一个练习项目"),
        (
            Fact("quantity", "每天一小时", "我每天一小时学习时间。"),
            Fact("name", "王老师", "我的导师是王老师。"),
            Fact("date", "12月15日", "课程作业12月15日截止。"),
            Fact("decision", "房价预测", "决定用房价预测做练习项目。"),
        ),
        {
            "梯度下降": ("学习率先试0.01，损失不降再调小。", "小批量梯度下降更稳定。"),
            "过拟合与正则化": (
                "L2正则化和早停都能减轻过拟合。",
                "先画训练和验证曲线再判断。",
            ),
            "一个练习项目": ("房价数据集有1460条记录，适合入门。",),
        },
    ),
    Topic(
        "搬家",
        "上海",
        ("搬家公司报价", "网络宽带迁移", "新家的家具清单"),
        (
            Fact("date", "11月8日", "我们11月8日搬家。"),
            Fact("quantity", "2000元", "搬家预算不超过2000元。"),
            Fact("name", "李师傅", "搬家公司联系人是李师傅。"),
            Fact("decision", "蓝天搬家", "决定选蓝天搬家公司。"),
        ),
        {
            "搬家公司报价": ("蓝天搬家报价1680元，含拆装家具。", "另一家报价2300元。"),
            "网络宽带迁移": ("宽带移机要提前三个工作日预约。",),
            "新家的家具清单": ("先买床、餐桌和书架，沙发可以晚点买。",),
        },
    ),
    Topic(
        "公司年会策划",
        "深圳",
        ("场地预算", "节目安排", "抽奖礼品"),
        (
            Fact("quantity", "120人", "年会大约120人参加。"),
            Fact("date", "1月18日", "年会定在1月18日晚上。"),
            Fact("name", "张经理", "审批人是张经理。"),
            Fact("decision", "海景酒店", "决定在海景酒店办年会。"),
        ),
        {
            "场地预算": ("海景酒店宴会厅每桌1880元，十二桌。", "租音响另加3000元。"),
            "节目安排": ("每个部门出一个节目，每个不超过八分钟。",),
            "抽奖礼品": (
                "一等奖可以是一台平板电脑，约3000元。",
                "三等奖准备二十份购物卡。",
            ),
        },
    ),
)
TOOLS = ("web_search", "get_weather", "manage_todo_list", "read_file")

_ASK_EN = (
    "Can you help me with {s}?",
    "Next on my list is {s}. Any suggestions?",
    "I'm still stuck on {s}.",
    "What's the cheapest way to handle {s}?",
    "Could you look into {s} for me?",
    "Let's get back to {s}.",
    "I need to sort out {s} this week.",
    "Quick question about {s}.",
    "Where do we stand with {s}?",
    "OK, {s} next.",
)
_ASK_ZH = (
    "关于{t}，我想了解{s}。",
    "{s}怎么安排比较好？",
    "我还在考虑{s}。",
    "能帮我查一下{s}吗？",
    "接下来说说{s}吧。",
    "{s}有什么建议？",
    "这周要把{s}定下来。",
)
_ASIDES_EN = ("", "", "", " Keep it cheap, please.", " No rush.", " Thanks!")
_ASIDES_ZH = ("", "", "", "预算有限。", "不着急。", "谢谢！")
_ANSWER_EN = ("{f}", "Good question. {f}", "{f} Want me to compare more options?")
_ANSWER_ZH = ("{f}", "好的。{f}", "{f}要不要再比较几个？")


@attrs.frozen
class Turn:
    """The messages one turn adds: the question, tool calls and results, the answer."""

    messages: tuple[Message, ...]


def session_plan(session_index: int, seed: int) -> SessionPlan:
    """Return what session ``session_index`` is about (the same for the same seed)."""
    rng = random.Random(seed * 100_003 + session_index)
    zh = session_index % 3 == 2
    return SessionPlan(session_index, zh, rng.choice(TOPICS_ZH if zh else TOPICS_EN))


def _tool_turn(
    rng: random.Random, plan: SessionPlan, subject: str, number: int, todo: list[str]
) -> tuple[str, str, str]:
    """Return a tool's name, its call's arguments and its result."""
    tool = rng.choice(TOOLS)
    topic, zh = plan.topic, plan.zh
    if tool == "web_search":
        hits = [
            f"{i + 1}. {subject} — {rng.choice(('guide', 'forum', 'review', 'news'))} "
            f"from site{rng.randint(1, 40)}.example, {rng.randint(1, 28)} days ago"
            for i in range(rng.randint(4, 10))
        ]
        return tool, json.dumps({"query": subject}, ensure_ascii=False), "\n".join(hits)
    if tool == "get_weather":
        day = 1 + (number % 7)
        sky = rng.choice(("晴", "多云", "小雨") if zh else ("sunny", "cloudy", "rain"))
        arguments = json.dumps({"city": topic.place, "day": day}, ensure_ascii=False)
        if zh:
            return tool, arguments, f"{topic.place}：{rng.randint(8, 28)}°C，{sky}"
        return tool, arguments, f"{topic.place}: {rng.randint(8, 28)}°C, {sky}"
    if tool == "manage_todo_list":
        if subject not in todo:
            todo.append(subject)
        arguments = json.dumps({"todos": todo[-5:]}, ensure_ascii=False)
        return tool, arguments, "已保存。" if zh else "Saved."
    path = f"notes/{plan.index}.md"
    lines = [f"# {topic.name}"] + [f"- {s}" for s in topic.subjects]
    return tool, json.dumps({"path": path}), "\n".join(lines)


def session_turns(session_index: int, turns: int, seed: int) -> Iterator[Turn]:
    """Yield the turns of one session; the same arguments always give the same turns.

    The topic's facts are stated once each, spread over the first turns.
    """
    plan = session_plan(session_index, seed)
    rng = random.Random(seed * 100_003 + session_index + 1)
    topic, zh = plan.topic, plan.zh
    facts = list(topic.facts)
    at = sorted(rng.sample(range(1, max(turns, len(facts) + 1)), len(facts)))
    stated = dict(zip(at, facts, strict=True))
    todo: list[str] = []
    for number in range(turns):
        subject = rng.choice(topic.subjects)
        ask = rng.choice(_ASK_ZH if zh else _ASK_EN).format(s=subject, t=topic.name)
        if number == 0:
            ask = (
                f"我在准备{topic.name}。{ask}"
                if zh
                else f"I'm working on {topic.name}. {ask}"
            )
        ask += rng.choice(_ASIDES_ZH if zh else _ASIDES_EN)
        if number in stated:
            ask += ("" if zh else " ") + stated[number].said
        finding = rng.choice(topic.findings[subject])
        answer = rng.choice(_ANSWER_ZH if zh else _ANSWER_EN).format(f=finding)
        messages = [Message("user", ask)]
        if rng.random() < 0.45:
            tool, arguments, result = _tool_turn(rng, plan, subject, number, todo)
            call_id = f"call_{session_index}_{number}"
            messages.append(
                Message(
                    "assistant", "", tool_calls=[ToolCall(call_id, tool, arguments)]
                )
            )
            messages.append(Message("tool", result, tool_call_id=call_id, name=tool))
        messages.append(Message("assistant", answer))
        yield Turn(tuple(messages))
