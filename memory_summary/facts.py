"""Fact retention: how many facts stated early in a conversation survive summarizing.

``generate_conversation`` builds a deterministic English or Chinese conversation of
about 120 messages (chatter, tool calls with long results) whose first 35 messages plant
facts of nine kinds (``KINDS``), each stated exactly once and never again.
``run_facts`` drives conversations through the real engine (``SummaryEngine`` on an
``InMemoryStore``, threshold 30 and keep_recent 10: at least five compressions each)
and scores the final injected summary (``build_prompt``): a fact is retained when every
one of its keys is found there. By then the facts' messages are all archived.

Matching rules (``normalize_for_match``, ``count_key``): lenient about spelling, never
about the value.

- Both texts are NFKC-normalized and case-folded (full-width letters read as ASCII);
  hyphens and dashes read as spaces; runs of white space as one space; white space next
  to a CJK character is dropped (``3 月`` = ``3月``), and so is a comma between digit
  groups (``4,870`` = ``4870``). Where a key's digits meet a Latin letter, a currency
  sign or ``%``, a space is optional (``4870 kg`` = ``4870kg``, ``€ 90`` = ``€90``).
- A key has a few accepted forms: a date in ISO, English or Chinese notation, a unit
  spelled out or abbreviated, a URL with or without its scheme. Nothing else counts: a
  paraphrase, a rounded number, a first name alone, a partial id.
- A key edged by a Latin letter or a digit matches only at a boundary: ``ORD-4821`` is
  not found in ``ORD-48213``, nor ``1.08`` in ``21.08`` or ``1.083``. A CJK edge matches
  anywhere (Chinese has no word boundaries).
- A fact with several keys (a decision and its reason) needs all of them.
"""

from __future__ import annotations

import functools
import json
import random
import re
import statistics
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from memory_summary.adapters import InMemoryStore
from memory_summary.domain import (
    Compressing,
    ConfigError,
    Message,
    Summarizer,
    SummaryConfig,
    ToolCall,
    injection_budget_tokens,
)

from .engine import SummaryEngine

Locale = Literal["en", "zh"]
Kind = Literal[
    "person",
    "place",
    "quantity",
    "date",
    "id",
    "path",
    "decision",
    "constraint",
    "tool_outcome",
    "assistant_fact",
    "corrected",
    "long_message",
    "tool_detail",
]
HARD_KINDS: tuple[Kind, ...] = (
    "assistant_fact",
    "corrected",
    "long_message",
    "tool_detail",
)
"""The kinds only the harder generator (``quality.hard_facts``) plants."""
KINDS: tuple[Kind, ...] = (
    "person",
    "place",
    "quantity",
    "date",
    "id",
    "path",
    "decision",
    "constraint",
    "tool_outcome",
)
LOCALES: tuple[Locale, ...] = ("en", "zh")
EARLY_MESSAGES = 35  # every fact is planted among the first this many messages
TARGET_MESSAGES = 120  # a conversation ends with the turn that reaches this many
THRESHOLD, KEEP_RECENT = 30, 10
WAIT_IDLE_S = 900.0  # one turn's compressions, a slow endpoint's retries included
CUT_CHARS = 200  # the transcript's cut of a tool result: facts sit before it

# fmt: off
NAMES = {
    "en": ["Ingrid Halvorsen", "Tomasz Wierzbicki", "Amara Okonkwo", "Henrik Lindqvist",
           "Priya Raghunathan", "Mateo Villanueva", "Sofia Marchetti", "Yusuf Demirci",
           "Declan Whitfield", "Leena Korhonen", "Rafael Andrade", "Chiara Bellucci"],
    "zh": ["韩雪松", "邵静怡", "龚志远", "贺晓岚", "戴文博", "卢思琪",
           "欧阳明华", "司马婉清", "葛振宇", "尹若兰", "柏嘉树", "诸葛明远"],
}
PLACES = {
    "en": ["Trondheim", "Ljubljana", "Bratislava", "Tampere", "Aarhus", "Cluj-Napoca",
           "Thessaloniki", "Brno", "Ghent", "Innsbruck", "Valparaiso", "Porto Alegre"],
    "zh": ["乌鲁木齐", "呼和浩特", "景德镇", "张家界", "泉州", "大理",
           "喀什", "延吉", "丽水", "洛阳", "开封", "桂林"],
}
PERSON_LINES = {
    "en": ["For context, {v} from finance approves anything we spend.",
           "Please address the updates to {v}, who leads this on the client side."],
    "zh": ["补充一下，财务那边负责审批所有开支的是{v}。",
           "进展请汇报给{v}，客户那边由他负责。"],
}
PLACE_LINES = {
    "en": ["We run all of this out of our office in {v}, so local suppliers are best.",
           "The final event takes place in {v}; plan the logistics around that city."],
    "zh": ["我们的办公室在{v}，所以最好找本地的供应商。",
           "最后的活动在{v}举办，后勤请围绕这座城市安排。"],
}
# (sentence, accepted forms, values)
QUANTITIES = {
    "en": [("The equipment we have to move weighs {v} kg in total.",
            ("{v} kg", "{v} kilograms", "{v} kilos"), range(140, 2401)),
           ("Our storage quota on the new plan is {v} GB.", ("{v} GB", "{v} gigabytes"),
            range(300, 4001)),
           ("The venue is {v} km away from the airport.",
            ("{v} km", "{v} kilometres", "{v} kilometers"), range(23, 96)),
           ("The space we rent is {v} m² in total.",
            ("{v} m²", "{v} square metres", "{v} square meters", "{v} sqm"),
            range(85, 641))],
    "zh": [("需要搬运的设备总重 {v} 公斤。", ("{v}公斤", "{v} kg", "{v}千克"),
            range(140, 2401)),
           ("新套餐的存储配额是 {v} GB。", ("{v} GB",), range(300, 4001)),
           ("场地离机场有 {v} 公里。", ("{v}公里", "{v} km", "{v}千米"),
            range(23, 96)),
           ("我们租的场地一共 {v} 平方米。", ("{v}平方米", "{v} m²", "{v}平米"),
            range(85, 641))],
}
DATE_LINES = {
    "en": ["The hard deadline for all of this is {v}.",
           "We go live on {v}, and that date will not move."],
    "zh": ["整件事的最后期限是{v}。", "我们定在{v}正式上线，这个日期不会变。"],
}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
ORDER_LINES = {
    "en": ["My order number is {v}, in case the supplier asks."],
    "zh": ["我的订单号是 {v}，供应商问起时可以用。"],
}
TICKET_LINES = {
    "en": ["Support opened ticket {v} about the outage yesterday."],
    "zh": ["客服昨天为这次故障开了工单 {v}。"],
}
PATH_LINES = {
    "en": ["The file everything is generated from is {v}."],
    "zh": ["所有内容都由 {v} 这个文件生成。"],
}
URL_LINES = {
    "en": ["The status page for the outage is {v} if you want to follow it."],
    "zh": ["故障的状态页面是 {v} ，可以随时查看。"],
}
DECISIONS = {  # (choice, reason)
    "en": [("Hetzner", "GDPR"), ("Stripe", "PCI DSS"), ("Bosch", "10-year warranty"),
           ("Grafana Cloud", "free tier"), ("Caterwise", "vegan menu"),
           ("Backblaze B2", "egress pricing"), ("Scaleway", "ISO 27001")],
    "zh": [("阿里云", "等保三级"), ("顺丰", "冷链"), ("海尔", "十年质保"),
           ("飞书", "免费版"), ("华为云", "国产化"), ("京东物流", "次日达")],
}
DECISION_LINES = {
    "en": ["After comparing the options we decided on {c}, mainly because of {r}.",
           "Decision made: we go with {c}; the deciding factor was {r}."],
    "zh": ["比较之后，我们决定选{c}，主要是因为{r}。",
           "已经定了：用{c}，决定性的因素是{r}。"],
}
CONSTRAINTS = {  # (sentence, accepted forms, values: numbers or terms)
    "en": [("One hard rule from my side: the total budget must stay under {v} EUR.",
            ("{v} EUR", "EUR {v}", "€{v}", "{v}€", "{v} euros"), range(1500, 9001)),
           ("Please keep every meeting shorter than {v} minutes; no exceptions.",
            ("{v} minutes", "{v} min", "{v} mins"), range(20, 56)),
           ("Whatever we pick must not depend on {v}; our IT department forbids it.",
            ("{v}",), ("Oracle", "WhatsApp", "Microsoft Access", "Adobe Flash"))],
    "zh": [("硬性要求：总预算不能超过 {v} 元。", ("{v}元", "¥{v}", "{v} RMB", "{v}块"),
            range(1500, 9001)),
           ("每次会议请控制在 {v} 分钟以内，这一点没有商量余地。", ("{v}分钟",),
            range(20, 56)),
           ("无论选什么，都不能依赖{v}，公司IT部门禁止使用。", ("{v}",),
            ("微信小程序", "甲骨文数据库", "苹果电脑"))],
}
ACKS = {
    "en": ["Noted, I will keep that in mind.", "Got it, thanks for the detail.",
           "Understood. I will plan around it.", "Thanks, that is useful context."],
    "zh": ["好的，我记下了。", "明白了，谢谢说明。", "了解，我会据此安排。",
           "谢谢，这个信息很有用。"],
}
LEAD_INS = {
    "en": ["Thanks, that was useful. ", "Good, let's keep going. ", "One more thing. "],
    "zh": ["谢谢，很有帮助。", "好的，我们继续。", "还有一件事。"],
}
TEST_WORDS = ("refund", "invoice", "ledger", "rounding", "currency", "discount",
              "webhook", "retry", "coupon", "payout")
SCENARIOS = {
    "en": [("moving our web shop to a new host", "the database migration",
            "the DNS cutover", "the backup schedule", "load testing"),
           ("planning the team offsite", "the agenda", "catering", "travel bookings",
            "the budget review"),
           ("renovating the flat", "kitchen tiles", "plumbing quotes",
            "the electrician's visit", "paint colours"),
           ("fixing the billing service", "flaky tests", "the refund flow", "log noise",
            "alerting")],
    "zh": [("把网店迁到新服务器", "数据库迁移", "域名切换", "备份计划", "压力测试"),
           ("策划团队团建", "日程安排", "餐饮", "交通预订", "预算审核"),
           ("装修新房", "厨房瓷砖", "水管报价", "电工上门", "墙面颜色"),
           ("修复计费系统", "不稳定的测试", "退款流程", "日志噪音", "告警配置")],
}
EXCHANGES = {  # (question, answer) about a subject {s}
    "en": [("About {s}: what would you do first?",
            "For {s}, start with the simplest option and measure before changing "
            "more."),
           ("Can you compare two options for {s}? Keep it short, please.",
            "There are two reasonable paths for {s}: the cheaper one now, or the "
            "sturdier one later. I would take the cheaper one and revisit it in a "
            "month."),
           ("I read mixed opinions on {s}. Is it worth the effort?",
            "It is worth it if {s} blocks other work; otherwise keep it small."),
           ("What are the common mistakes with {s}?",
            "The usual mistakes with {s} are skipping the checklist, rushing the last "
            "step and not writing decisions down."),
           ("Could you draft a short checklist for {s}?",
            "A short checklist for {s}: list what exists, pick an owner, agree on a "
            "date, and review the result together."),
           ("Thanks, that helps. Anything else I should know about {s}?",
            "Only that {s} goes faster when one person owns it and reports back.")],
    "zh": [("关于{s}，你会先做什么？",
            "关于{s}，先从最简单的方案开始，改动前先做测量。"),
           ("能比较一下{s}的两个方案吗？简短一点。",
            "{s}有两条合理的路：现在选便宜的，或者以后换更稳妥的。"
            "我建议先选便宜的，一个月后再评估。"),
           ("我看到关于{s}的评价褒贬不一，值得花这个精力吗？",
            "如果{s}卡住了其他工作就值得做，否则保持小规模即可。"),
           ("{s}常见的错误有哪些？",
            "{s}常见的错误是跳过清单、最后一步太仓促，以及没有把决定记下来。"),
           ("能帮我列一个{s}的简短清单吗？",
            "{s}的简短清单：列出现状，指定负责人，约定日期，一起复盘结果。"),
           ("谢谢，很有帮助。关于{s}还有什么要注意的？",
            "只有一点：{s}最好由一个人负责并及时反馈，这样推进得更快。")],
}
INTROS = {
    "en": ("Hi! I need help with {t}. Can we go through it step by step?",
           "Sure, happy to help with {t}. Let's take it one piece at a time."),
    "zh": ("你好！我需要{t}方面的帮助，我们能一步一步来吗？",
           "当然可以，我们一块一块地处理{t}。"),
}
CHATTER_TOOLS = ("web_search", "read_file", "get_weather", "manage_todo_list")
DONE = {
    "en": "I checked it; the details are in the result above. Shall we move on?",
    "zh": "查好了，详细结果见上面。我们继续吗？",
}
# fmt: on

_DASHES = str.maketrans(
    dict.fromkeys("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212", " ")
)
_CJK = r"\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"
_GLUE = (
    (re.compile(r"(?<=\d),(?=\d{3}(?!\d))"), ""),  # 4,870 -> 4870
    (re.compile(r"\s+"), " "),
    (re.compile(rf"(?<=[{_CJK}]) | (?=[{_CJK}])"), ""),
)
_WORD = "0-9a-z\u00c0-\u024f"  # Latin letters and digits: the edges with boundaries
_LATIN = "a-z\u00c0-\u024f€$¥£%"
# A digit next to a Latin letter, currency sign or %, with or without a space between.
_JUNCTION = re.compile(rf"(?<=\d) ?(?=[{_LATIN}])|(?<=[{_LATIN}]) ?(?=\d)")


def normalize_for_match(text: str) -> str:
    """Return ``text`` in the canonical spelling both the summary and keys are read in.

    >>> normalize_for_match("Order \uff2f\uff32\uff24\u2013 4,870 - 12 Kg 于 2027 年")
    'order ord 4870 12 kg于2027年'
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_DASHES)
    for pattern, replacement in _GLUE:
        text = pattern.sub(replacement, text)
    return text.strip()


@functools.lru_cache(maxsize=4096)
def _key_pattern(forms: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = []
    for form in sorted({normalize_for_match(f) for f in forms}, key=len, reverse=True):
        left = f"(?<![{_WORD}])" if re.match(f"[{_WORD}]", form) else ""
        right = f"(?![{_WORD}])" if re.search(f"[{_WORD}]$", form) else ""
        if form[-1:].isdigit():
            right += r"(?![.,]\d)"  # 1.08 is not in 1.083
        pieces = _JUNCTION.split(form)  # the junctions' spaces become optional
        body = " ?".join(re.escape(piece) for piece in pieces)
        alternatives.append(left + body + right)
    return re.compile("|".join(alternatives))


def count_key(text: str, forms: Sequence[str], *, normalized: bool = False) -> int:
    """Return how often ``text`` mentions a key given as its accepted ``forms``.

    ``normalized``: ``text`` already went through ``normalize_for_match``.

    >>> count_key("Ticket TCK-4821 and TCK-48213", ["TCK-4821"])
    1
    """
    if not normalized:
        text = normalize_for_match(text)
    return sum(1 for _ in _key_pattern(tuple(forms)).finditer(text))


@attrs.frozen
class Fact:
    """A fact planted in a conversation.

    Attributes:
        kind: what sort of fact it is (``KINDS``).
        keys: what must be found for it to count: every key, each in one of its forms
            (the first form is the canonical one).
        message_index: the position of the one message that states it.
    """

    kind: Kind
    keys: tuple[tuple[str, ...], ...]
    message_index: int = -1

    @property
    def label(self) -> str:
        """Return the canonical key(s), for reports."""
        return " + ".join(forms[0] for forms in self.keys)

    def is_found_in(self, text: str) -> bool:
        """Tell whether ``text`` holds every key of the fact."""
        text = normalize_for_match(text)
        return all(count_key(text, forms, normalized=True) for forms in self.keys)


def message_text(message: Message) -> str:
    """Return what a message says: its content and its tool calls' arguments."""
    return "\n".join([message.text, *(c.arguments for c in message.tool_calls)])


@attrs.frozen
class FactConversation:
    """A generated conversation: its turns (message tuples) and the facts it plants."""

    locale: Locale
    index: int
    turns: tuple[tuple[Message, ...], ...]
    facts: tuple[Fact, ...]

    @property
    def messages(self) -> list[Message]:
        """Return every message in order."""
        return [message for turn in self.turns for message in turn]


@attrs.frozen
class _Planted:
    fact: Fact
    turn: tuple[Message, ...]
    carrier: int  # which message of the turn states it


def _pick(
    rng: random.Random, table: Mapping[str, Sequence[str]], locale: Locale
) -> str:
    return rng.choice(table[locale])


def _written(rng: random.Random, value: int | str, locale: Locale) -> str:
    """Return how the text writes ``value``: English groups thousands half the time."""
    if (
        isinstance(value, int)
        and value >= 1000
        and locale == "en"
        and rng.random() < 0.5
    ):
        return f"{value:,}"
    return str(value)


def _stated(
    rng: random.Random,
    locale: Locale,
    kind: Kind,
    line: str,
    keys: Sequence[Sequence[str]],
) -> _Planted:
    """Return a user turn stating ``line`` and a plain acknowledgement."""
    if rng.random() < 0.5:  # half the facts follow a lead-in: not the first sentence
        line = rng.choice(LEAD_INS[locale]) + line
    turn = (Message("user", line), Message("assistant", rng.choice(ACKS[locale])))
    return _Planted(Fact(kind, tuple(tuple(forms) for forms in keys)), turn, 0)


def _date(rng: random.Random, locale: Locale) -> tuple[str, list[str]]:
    """Return a date as the text says it and its accepted forms (ISO first)."""
    year, month, day = rng.randint(2026, 2028), rng.randint(1, 12), rng.randint(1, 28)
    name = MONTHS[month - 1]
    short = name[:3]
    th = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(day, "th")
    forms = [
        f"{year}-{month:02d}-{day:02d}",
        f"{year}/{month:02d}/{day:02d}",
        f"{year}年{month}月{day}日",
        f"{day} {name} {year}",
        f"{name} {day}, {year}",
        f"{name} {day} {year}",
        f"{day}{th} {name} {year}",
        f"{name} {day}{th}, {year}",
        f"{day} {short} {year}",
        f"{short} {day}, {year}",
        f"{short} {day} {year}",
        f"{day}.{month:02d}.{year}",
    ]
    said = forms[2] if locale == "zh" else rng.choice(forms[3:5])
    return said, forms


def _tool_result_head(
    rng: random.Random, locale: Locale, tool: str
) -> tuple[str, dict[str, str], str, str]:
    """Return a fact-carrying tool's key, arguments, the user's ask and result line."""
    zh = locale == "zh"
    if tool == "get_exchange_rate":
        key = f"1.{rng.randint(0, 9999):04d}"
        return (
            key,
            {"base": "EUR", "quote": "USD"},
            "帮我查一下今天欧元兑美元的汇率？"
            if zh
            else "Can you check today's EUR to USD rate?",
            f"汇率：1 欧元 = {key} 美元（中间价，刚刚获取）。"
            if zh
            else f"1 EUR = {key} USD (mid-market rate, fetched just now).",
        )
    if tool == "run_tests":
        key = "test_" + "_".join(rng.sample(TEST_WORDS, 2))
        passed, failed = rng.randint(200, 600), rng.randint(2, 9)
        return (
            key,
            {"suite": "integration"},
            "能跑一下集成测试吗？" if zh else "Can you run the integration tests?",
            f"集成测试：通过 {passed} 个，失败 {failed} 个；第一个失败的是 {key}。"
            if zh
            else f"{passed} passed, {failed} failed. First failure: {key}.",
        )
    if tool == "track_parcel":
        key = f"JJD{rng.randint(10**11, 10**12 - 1)}"
        return (
            key,
            {"carrier": "DHL"},
            "包裹现在到哪儿了？" if zh else "Where is the parcel now?",
            f"包裹 {key}：被海关扣留，等待发票。"
            if zh
            else f"Parcel {key}: held at customs, waiting for an invoice.",
        )
    key = f"{rng.randint(71, 97)}%"  # check_disk
    return (
        key,
        {"host": "db-primary"},
        "数据库磁盘用了多少？" if zh else "How full is the database disk?",
        f"/var/lib/mysql：已使用 {key}，每周增长约 2%。"
        if zh
        else f"/var/lib/postgresql: {key} used, growing about 2% a week.",
    )


def _tool_outcome(
    rng: random.Random, locale: Locale, tool: str, call_id: str, subject: str
) -> _Planted:
    """Return a turn whose tool result states a fact in its first line.

    The transcript cuts a tool result to CUT_CHARS characters: the fact comes first,
    the long tail after it.
    """
    key, arguments, ask, head = _tool_result_head(rng, locale, tool)
    body = "\n".join([head, *_result_lines(rng, tool, subject, locale, 3, 8)])
    call = ToolCall(call_id, tool, json.dumps(arguments))
    turn = (
        Message("user", ask),
        Message("assistant", "", tool_calls=[call]),
        Message("tool", body, tool_call_id=call_id, name=tool),
        Message("assistant", DONE[locale]),
    )
    return _Planted(Fact("tool_outcome", ((key,),)), turn, 2)


def _ids(rng: random.Random) -> tuple[str, str, str, str]:
    """Return an order number, a ticket id, a file path and a URL."""
    letters = "".join(rng.sample("ABCDEFGHKMNPRSTX", 2))
    order = f"ORD-{rng.randint(10_000, 99_999)}-{letters}"
    ticket = f"{rng.choice(('TCK', 'INC', 'SR'))}-{rng.randint(100_000, 999_999)}"
    root = rng.choice(("srv", "opt", "home/deploy"))
    app = rng.choice(("shop", "billing", "events"))
    folder = rng.choice(("config", "exports", "deploy"))
    name = rng.choice(("rates", "settings", "inventory", "schedule"))
    ext = rng.choice(("yaml", "toml", "csv", "json"))
    path = f"/{root}/{app}/{folder}/{name}_v{rng.randint(2, 9)}.{ext}"
    host = rng.choice(
        ("status.northwind-cloud.com", "wiki.acme-internal.net", "docs.fjordhosting.io")
    )
    section = rng.choice(("incidents", "pages", "runbooks"))
    url = f"https://{host}/{section}/{rng.randint(1000, 99_999)}"
    return order, ticket, path, url


def _plant_all(
    rng: random.Random, locale: Locale, index: int, subject: str
) -> list[_Planted]:
    """Return one turn per fact: twelve facts of the nine kinds."""
    name, place = rng.choice(NAMES[locale]), rng.choice(PLACES[locale])
    amount_line, amount_forms, amounts = rng.choice(QUANTITIES[locale])
    amount = rng.choice(amounts)
    date, date_forms = _date(rng, locale)
    order, ticket, path, url = _ids(rng)
    choice, reason = rng.choice(DECISIONS[locale])
    rule, rule_forms, limits = rng.choice(CONSTRAINTS[locale])
    limit = rng.choice(limits)
    tools = rng.sample(
        ("get_exchange_rate", "run_tests", "track_parcel", "check_disk"), 2
    )
    decision = _pick(rng, DECISION_LINES, locale).format(c=choice, r=reason)
    return [
        _stated(
            rng,
            locale,
            "person",
            _pick(rng, PERSON_LINES, locale).format(v=name),
            [[name]],
        ),
        _stated(
            rng,
            locale,
            "place",
            _pick(rng, PLACE_LINES, locale).format(v=place),
            [[place]],
        ),
        _stated(
            rng,
            locale,
            "quantity",
            amount_line.format(v=_written(rng, amount, locale)),
            [[form.format(v=amount) for form in amount_forms]],
        ),
        _stated(
            rng,
            locale,
            "date",
            _pick(rng, DATE_LINES, locale).format(v=date),
            [date_forms],
        ),
        _stated(
            rng,
            locale,
            "id",
            _pick(rng, ORDER_LINES, locale).format(v=order),
            [[order]],
        ),
        _stated(
            rng,
            locale,
            "id",
            _pick(rng, TICKET_LINES, locale).format(v=ticket),
            [[ticket]],
        ),
        _stated(
            rng, locale, "path", _pick(rng, PATH_LINES, locale).format(v=path), [[path]]
        ),
        _stated(
            rng,
            locale,
            "path",
            _pick(rng, URL_LINES, locale).format(v=url),
            [[url, url.removeprefix("https://")]],
        ),
        _stated(rng, locale, "decision", decision, [[choice], [reason]]),
        _stated(
            rng,
            locale,
            "constraint",
            rule.format(v=_written(rng, limit, locale)),
            [[form.format(v=limit) for form in rule_forms]],
        ),
        *(
            _tool_outcome(rng, locale, tool, f"call_f{index}_{n}", subject)
            for n, tool in enumerate(tools)
        ),
    ]


def _result_lines(
    rng: random.Random, tool: str, subject: str, locale: Locale, low: int, high: int
) -> list[str]:
    """Return the long tail of a tool result: search hits, as the demo's tools give."""
    if locale == "zh":
        return [
            f"{n + 1}. 关于「{subject}」的结果：第{rng.randint(1, 99)}条记录，"
            f"评分 {rng.randint(1, 5)} 星，更新于 {rng.randint(1, 28)} 天前。"
            for n in range(rng.randint(low, high))
        ]
    return [
        f"{n + 1}. Result about {subject} from {tool}: entry #{rng.randint(100, 999)}, "
        f"rated {rng.randint(1, 5)}/5, updated {rng.randint(1, 28)} days ago."
        for n in range(rng.randint(low, high))
    ]


def _chatter(
    rng: random.Random,
    locale: Locale,
    subject: str,
    call_id: str,
    todo: list[str],
) -> tuple[Message, ...]:
    """Return a question and answer, and maybe a long tool call if ``call_id``."""
    asked, answered = rng.choice(EXCHANGES[locale])
    question = Message("user", asked.format(s=subject))
    answer = Message("assistant", answered.format(s=subject))
    if not call_id or rng.random() >= 0.4:
        return (question, answer)
    tool = rng.choice(CHATTER_TOOLS)
    if tool == "manage_todo_list":
        todo.append(subject)
        arguments = json.dumps({"todos": todo[-5:]}, ensure_ascii=False)
    else:
        arguments = json.dumps({"query": subject}, ensure_ascii=False)
    call = Message("assistant", "", tool_calls=[ToolCall(call_id, tool, arguments)])
    body = "\n".join(_result_lines(rng, tool, subject, locale, 4, 12))
    result = Message("tool", body, tool_call_id=call_id, name=tool)
    return (question, call, result, answer)


def _build(rng: random.Random, locale: Locale, index: int) -> FactConversation:
    """Return one draw: an intro, the facts among a little chatter, then chatter."""
    topic, *subjects = rng.choice(SCENARIOS[locale])
    planted = _plant_all(rng, locale, index, rng.choice(subjects))
    rng.shuffle(planted)
    early: list[tuple[Message, ...] | _Planted] = list(planted)
    spare = EARLY_MESSAGES - 2 - sum(len(p.turn) for p in planted)
    for _ in range(rng.randint(0, spare // 2)):  # plain chatter between the facts
        chatter = _chatter(rng, locale, rng.choice(subjects), "", [])
        early.insert(rng.randint(0, len(early)), chatter)
    intro, reply = INTROS[locale]
    turns: list[tuple[Message, ...]] = [
        (
            Message("user", intro.format(t=topic)),
            Message("assistant", reply.format(t=topic)),
        )
    ]
    facts: list[Fact] = []
    count = 2
    for item in early:
        if isinstance(item, _Planted):
            facts.append(attrs.evolve(item.fact, message_index=count + item.carrier))
            turns.append(item.turn)
        else:
            turns.append(item)
        count += len(turns[-1])
    todo: list[str] = []
    while count < TARGET_MESSAGES:
        subject = subjects[len(turns) % len(subjects)]
        turns.append(_chatter(rng, locale, subject, f"call_{index}_{len(turns)}", todo))
        count += len(turns[-1])
    return FactConversation(locale, index, tuple(turns), tuple(facts))


def misplaced_facts(conversation: FactConversation) -> list[Fact]:
    """Return the facts not stated exactly once, in their own early message."""
    texts = [normalize_for_match(message_text(m)) for m in conversation.messages]
    wrong = []
    for fact in conversation.facts:
        index = fact.message_index
        for forms in fact.keys:
            counts = [count_key(text, forms, normalized=True) for text in texts]
            if not (0 <= index < EARLY_MESSAGES and counts[index] == sum(counts) == 1):
                wrong.append(fact)
                break
    return wrong


def generate_conversation(seed: int, locale: Locale, index: int) -> FactConversation:
    """Return conversation ``index`` of ``locale``; the same arguments, the same result.

    A draw whose chatter happens to repeat a planted key (say, the same number with the
    same unit) is discarded for the next one, so every fact is stated exactly once.

    >>> conversation = generate_conversation(7, "en", 0)
    >>> len(conversation.facts), len(conversation.messages) >= TARGET_MESSAGES
    (12, True)
    """
    for attempt in range(100):
        rng = random.Random(f"facts:{seed}:{locale}:{index}:{attempt}")
        conversation = _build(rng, locale, index)
        if not misplaced_facts(conversation):
            return conversation
    raise RuntimeError(f"no clean conversation for seed {seed}, {locale} #{index}")


@attrs.frozen
class ConversationResult:
    """What one conversation's final summary kept, and what it took."""

    locale: Locale
    index: int
    messages: int
    facts: tuple[Fact, ...]
    retained: tuple[bool, ...]
    compressions: int
    degraded: int
    summarizer_calls: int
    summary_tokens: int
    budget_tokens: int
    seconds: float

    def to_mapping(self) -> dict[str, object]:
        return {
            "locale": self.locale,
            "index": self.index,
            "messages": self.messages,
            "compressions": self.compressions,
            "degraded": self.degraded,
            "summarizer_calls": self.summarizer_calls,
            "summary_tokens": self.summary_tokens,
            "budget_tokens": self.budget_tokens,
            "seconds": round(self.seconds, 3),
            "facts": [
                {
                    "kind": f.kind,
                    "key": f.label,
                    "message_index": f.message_index,
                    "retained": kept,
                }
                for f, kept in zip(self.facts, self.retained, strict=True)
            ],
        }


class _Compressions:
    """Counts each session's finished and degraded compressions from engine events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done: dict[str, int] = {}
        self.degraded: dict[str, int] = {}

    def on_event(self, event: object) -> None:
        if not isinstance(event, Compressing) or event.status == "start":
            return
        if event.status == "done" and event.detail == "nothing to compress":
            return
        counts = self.done if event.status == "done" else self.degraded
        with self._lock:
            counts[event.session_id] = counts.get(event.session_id, 0) + 1


def _drive(
    engine: SummaryEngine,
    store: InMemoryStore,
    conversation: FactConversation,
    events: _Compressions,
    budget: int,
) -> ConversationResult:
    started = time.perf_counter()
    sid = f"facts-{conversation.locale}-{conversation.index}"
    for turn in conversation.turns:
        for message in turn:
            store.save_message(sid, message)
        engine.turn_after(sid)
        if not engine.wait_idle(timeout=WAIT_IDLE_S):
            raise TimeoutError(
                f"{sid}: the engine did not settle within {WAIT_IDLE_S} s"
            )
    summary = engine.build_prompt(sid) or ""
    record = engine.summary(sid)
    return ConversationResult(
        locale=conversation.locale,
        index=conversation.index,
        messages=len(conversation.messages),
        facts=conversation.facts,
        retained=tuple(fact.is_found_in(summary) for fact in conversation.facts),
        compressions=events.done.get(sid, 0),
        degraded=events.degraded.get(sid, 0),
        summarizer_calls=record.compressions if record else 0,
        summary_tokens=record.tokens if record else 0,
        budget_tokens=budget,
        seconds=time.perf_counter() - started,
    )


def run_facts(
    llm: Summarizer | None = None,
    *,
    seed: int = 7,
    conversations: int = 4,
    locales: Sequence[Locale] = LOCALES,
    config: SummaryConfig | None = None,
    progress: Callable[[str], None] | None = None,
    generator: Callable[[int, Locale, int], FactConversation] | None = None,
) -> FactsReport:
    """Drive generated conversations through the engine and score their summaries.

    Args:
        llm: the summarizer; None: the offline ``ExtractiveSummarizer``.
        seed: the conversations' seed.
        conversations: how many conversations per locale.
        locales: which locales (``en``, ``zh``), in order.
        config: other settings (prompt, ratio, ...); threshold, keep_recent and locale
            are the benchmark's own.
        progress: called with one line per finished conversation.
        generator: ``(seed, locale, index) -> FactConversation``; None: the standard
            ``generate_conversation`` (``memory_summary.quality.hard_facts`` has a
            harder one).

    Raises:
        ConfigError: ``conversations`` < 1 or an unknown locale.
        TimeoutError: the engine did not settle after a turn.
    """
    if (
        isinstance(conversations, bool)
        or not isinstance(conversations, int)
        or conversations < 1
    ):
        raise ConfigError("conversations", conversations, "int >= 1")
    if not locales or any(locale not in LOCALES for locale in locales):
        raise ConfigError("locale", list(locales), "en / zh / both")
    results: list[ConversationResult] = []
    label = ""
    for locale in locales:
        settings = attrs.evolve(
            config or SummaryConfig(),
            threshold=THRESHOLD,
            keep_recent=KEEP_RECENT,
            locale=locale,
        )
        store = InMemoryStore()
        events = _Compressions()
        with SummaryEngine(store, llm, config=settings) as engine:
            engine.subscribe(events.on_event)
            budget = injection_budget_tokens(settings, engine.llm.context_length(None))
            label = engine.summarizer_label()
            for index in range(conversations):
                conversation = (generator or generate_conversation)(seed, locale, index)
                result = _drive(engine, store, conversation, events, budget)
                results.append(result)
                if progress is not None:
                    progress(
                        f"facts: {locale} conversation {index + 1}/{conversations}: "
                        f"{sum(result.retained)}/{len(result.facts)} facts kept, "
                        f"{result.compressions} compressions, {result.seconds:.1f} s"
                    )
    name = getattr(generator, "label", "standard") if generator else "standard"
    return FactsReport(
        label, seed, conversations, tuple(locales), tuple(results), str(name)
    )


def _share(retained: int, planted: int) -> dict[str, object]:
    ratio = round(retained / planted, 3) if planted else None
    return {"retained": retained, "planted": planted, "ratio": ratio}


@attrs.frozen
class FactsReport:
    """The retention of a run, per locale and kind, and what the run took."""

    summarizer: str
    seed: int
    conversations_per_locale: int
    locales: tuple[Locale, ...]
    results: tuple[ConversationResult, ...]
    generator: str = "standard"

    @property
    def compressions(self) -> int:
        """Return the compressions that wrote a summary, over every conversation."""
        return sum(r.compressions for r in self.results)

    def to_mapping(self) -> dict[str, object]:
        """Return the report as JSON-compatible data (what ``table_rows`` reads)."""
        groups: dict[str, list[ConversationResult]] = {
            locale: [r for r in self.results if r.locale == locale]
            for locale in self.locales
        }
        groups["all"] = list(self.results)
        planted = {f.kind for r in self.results for f in r.facts}
        kinds = [*KINDS, *(kind for kind in HARD_KINDS if kind in planted)]
        retention: dict[str, dict[str, object]] = {}
        runs: dict[str, dict[str, object]] = {}
        for name, results in groups.items():
            pairs = [
                (f.kind, kept)
                for r in results
                for f, kept in zip(r.facts, r.retained, strict=True)
            ]
            retention[name] = {
                kind: _share(
                    sum(kept for k, kept in pairs if k == kind),
                    sum(1 for k, _ in pairs if k == kind),
                )
                for kind in kinds
            }
            retention[name]["all"] = _share(sum(kept for _, kept in pairs), len(pairs))
            tokens = [r.summary_tokens for r in results]
            runs[name] = {
                "conversations": len(results),
                "compressions": sum(r.compressions for r in results),
                "degraded": sum(r.degraded for r in results),
                "summarizer_calls": sum(r.summarizer_calls for r in results),
                "summary_tokens_mean": round(statistics.fmean(tokens), 1)
                if tokens
                else 0,
                "summary_tokens_max": max(tokens, default=0),
                "budget_tokens": max((r.budget_tokens for r in results), default=0),
            }
        return {
            "summarizer": self.summarizer,
            "generator": self.generator,
            "seed": self.seed,
            "conversations_per_locale": self.conversations_per_locale,
            "locales": list(self.locales),
            "threshold": THRESHOLD,
            "keep_recent": KEEP_RECENT,
            "retention": retention,
            "runs": runs,
            "conversations": [r.to_mapping() for r in self.results],
        }

    def render(self) -> str:
        """Return the printed report: a heading and the per-kind table."""
        data = self.to_mapping()
        heading = (
            f"fact retention: {self.summarizer}, {self.generator} conversations, "
            f"seed {self.seed}, "
            f"{self.conversations_per_locale} conversation(s) per locale, "
            f"threshold {THRESHOLD}, keep_recent {KEEP_RECENT}"
        )
        return heading + "\n" + render_table(table_rows(data))


def _cell(share: Mapping[str, object]) -> str:
    ratio = share["ratio"]
    percent = "-" if not isinstance(ratio, float) else f"{ratio:.0%}"
    return f"{share['retained']}/{share['planted']} ({percent})"


def table_rows(data: Mapping[str, Any]) -> list[dict[str, str]]:
    """Return the table (one row per kind, then the run's figures) of ``to_mapping``."""
    retention, runs = data["retention"], data["runs"]
    columns = [*data["locales"], "all"]
    rows = [
        {
            "kind": kind if kind != "all" else "all facts",
            **{c: _cell(retention[c][kind]) for c in columns},
        }
        for kind in (*(k for k in retention["all"] if k != "all"), "all")
    ]
    figures = {
        "summary tokens (mean/max/budget)": lambda r: (
            f"{r['summary_tokens_mean']:.0f}/{r['summary_tokens_max']}/"
            f"{r['budget_tokens']}"
        ),
        "compressions (degraded)": lambda r: f"{r['compressions']} ({r['degraded']})",
        "summarizer calls": lambda r: str(r["summarizer_calls"]),
    }
    rows += [
        {"kind": name, **{c: show(runs[c]) for c in columns}}
        for name, show in figures.items()
    ]
    return rows


def render_table(rows: Sequence[Mapping[str, str]]) -> str:
    """Return ``rows`` (dicts with the same keys) as aligned text."""
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(row[k]) for row in rows)) for k in keys}
    lines = ["  ".join(k.ljust(widths[k]) for k in keys)]
    lines.append("  ".join("-" * widths[k] for k in keys))
    lines += ["  ".join(row[k].ljust(widths[k]) for k in keys) for row in rows]
    return "\n".join("  " + line.rstrip() for line in lines)
