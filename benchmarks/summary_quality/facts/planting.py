"""The planting of facts: one turn per fact, its keys and the message that states it."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence

from memory_summary.domain import Message, ToolCall

from .phrases import (
    ACKS,
    CONSTRAINTS,
    DATE_LINES,
    DECISION_LINES,
    DECISIONS,
    DONE,
    LEAD_INS,
    MONTHS,
    NAMES,
    ORDER_LINES,
    PATH_LINES,
    PERSON_LINES,
    PLACE_LINES,
    PLACES,
    QUANTITIES,
    TEST_WORDS,
    TICKET_LINES,
    URL_LINES,
)
from .planted import FactKind, Locale, PlantedFact, Planting


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
    kind: FactKind,
    line: str,
    keys: Sequence[Sequence[str]],
) -> Planting:
    """Return a user turn stating ``line`` and a plain acknowledgement."""
    if rng.random() < 0.5:  # half the facts follow a lead-in: not the first sentence
        line = rng.choice(LEAD_INS[locale]) + line
    turn = (Message("user", line), Message("assistant", rng.choice(ACKS[locale])))
    return Planting(PlantedFact(kind, tuple(tuple(forms) for forms in keys)), turn, 0)


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
) -> Planting:
    """Return a turn whose tool result states a fact in its first line.

    The transcript cuts a tool result to CUT_CHARS characters: the fact comes first,
    the long tail after it.
    """
    key, arguments, ask, head = _tool_result_head(rng, locale, tool)
    body = "\n".join([head, *result_lines(rng, tool, subject, locale, 3, 8)])
    call = ToolCall(call_id, tool, json.dumps(arguments))
    turn = (
        Message("user", ask),
        Message("assistant", "", tool_calls=[call]),
        Message("tool", body, tool_call_id=call_id, name=tool),
        Message("assistant", DONE[locale]),
    )
    return Planting(PlantedFact("tool_outcome", ((key,),)), turn, 2)


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


def plant_all(
    rng: random.Random, locale: Locale, index: int, subject: str
) -> list[Planting]:
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


def result_lines(
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
