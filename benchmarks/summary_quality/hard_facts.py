"""A harder generator for the fact-retention benchmark (``summary_quality.facts``).

Each conversation is the standard one (``generate_conversation``: twelve facts among
chatter) with seven more facts of the kinds it never tests, placed among its first
turns, and distractors:

- ``assistant_fact``: three facts the assistant states (a booking reference it got, a
  place it looked up, a period it read in a contract);
- ``corrected``: a budget and a date the user states, then corrects a few turns
  later: the fact is the latest value ("the summary must hold the latest");
- ``long_message``: a code said at the end of one long sentence, past its 200th
  character;
- ``tool_detail``: a slot number on the second line of a tool result (within the
  transcript's cut), under a line that says nothing;
- distractors, never facts: a sample id the assistant quotes from a template and a
  log's request ids.

The same seed, locale and index give the same conversation.
"""

from __future__ import annotations

import json
import random

import attrs

from memory_summary.domain import Message, ToolCall
from memory_summary.domain.model import Role

from .facts import (
    MONTHS,
    PLACES,
    FactConversation,
    Locale,
    PlantedFact,
    count_key,
    generate_conversation,
    message_text,
    normalize_for_match,
)

LABEL = "hard"
FIRST_TURN = 2  # hard facts go after the intro and a few standard ones


def _date(rng: random.Random, locale: Locale) -> tuple[str, list[str]]:
    year, month, day = rng.randint(2027, 2028), rng.randint(1, 12), rng.randint(1, 28)
    name = MONTHS[month - 1]
    forms = [
        f"{year}-{month:02d}-{day:02d}",
        f"{year}年{month}月{day}日",
        f"{day} {name} {year}",
        f"{name} {day}, {year}",
        f"{name} {day} {year}",
    ]
    return (forms[1] if locale == "zh" else forms[2]), forms


def _turn(*messages: Message) -> tuple[Message, ...]:
    return messages


def _hard_turns(
    rng: random.Random, locale: Locale, index: int
) -> list[tuple[tuple[Message, ...], list[tuple[int, PlantedFact]]]]:
    """Return the hard turns, each with (carrier offset, fact) pairs, in order."""
    zh = locale == "zh"
    ref = f"BK-{rng.randint(10_000, 99_999)}-{rng.choice('DFHJKLQRVW')}"
    depot = rng.choice(PLACES[locale])
    notice = rng.randint(31, 89)
    budget_old, budget_new = rng.randint(2100, 4900), rng.randint(5100, 9800)
    (old_said, _), (new_said, new_forms) = _date(rng, locale), _date(rng, locale)
    code = f"{rng.randint(1000, 9999)}#{rng.choice('ABCDEFGH')}"
    slot = f"B-{rng.randint(10, 99)}-{rng.randint(100, 999)}"
    sample = f"BK-{rng.randint(10_000, 99_999)}-X"
    request_ids = [f"req_{rng.getrandbits(40):010x}" for _ in range(3)]
    preamble = (
        "我把整个项目的背景再完整地说一遍：我们从去年秋天开始准备，团队里有设计、后端、"
        "前端和运维四个小组，每周一开例会，周五交周报，所有文档都放在共享盘里，"
        "大家对流程都比较熟悉，沟通也一直很顺畅，只是最近事情多了起来，"
        "有些细节容易被忽略，所以我想趁现在把关键的信息都整理清楚，"
        "免得之后有人找不到，另外，仓库储物间的门禁密码是 "
        if zh
        else "Let me give you the whole background once more, since a few people "
        "joined late: we started preparing last autumn, the team has design, "
        "backend, frontend and operations groups that meet every Monday and report "
        "every Friday, all documents live on the shared drive and everyone knows "
        "the process well, and the door code for the storage room is "
    )
    call_id = f"call_h{index}"
    listing = "\n".join(
        f"{n + 1}. Result: entry #{rng.randint(100, 999)}, request {rid}"
        for n, rid in enumerate(request_ids)
    )
    en = {
        "ask_ref": "Did the venue confirm the booking?",
        "ref": f"Yes, they confirmed it: the booking reference is {ref}.",
        "ask_depot": "Where is the nearest depot for the deliveries?",
        "depot": f"I looked it up: the nearest depot is in {depot}.",
        "ask_notice": "What does the contract say about cancelling?",
        "notice": f"I checked the contract: the notice period is {notice} days.",
        "budget_old": f"The budget for this is {budget_old} EUR.",
        "budget_new": f"Correction: the budget is now {budget_new} EUR.",
        "date_old": f"The launch is planned for {old_said}.",
        "date_new": f"Update: the launch moved to {new_said}.",
        "ack": "Noted.",
        "ask_slot": "Which warehouse slot did they give us?",
        "slot_head": "Lookup finished (3 sources, 0.4 s).",
        "slot": f"Warehouse slot: {slot}, reserved until further notice.",
        "sample": f"Booking references look like the template's sample {sample}.",
    }
    zh_text = {
        "ask_ref": "场地确认预订了吗？",
        "ref": f"确认了：预订编号是 {ref}。",
        "ask_depot": "离我们最近的配送仓库在哪里？",
        "depot": f"我查过了：最近的仓库在{depot}。",
        "ask_notice": "合同里关于取消是怎么写的？",
        "notice": f"我看了合同：提前通知期是 {notice} 天。",
        "budget_old": f"这件事的预算是 {budget_old} 欧元。",
        "budget_new": f"更正一下：预算现在是 {budget_new} 欧元。",
        "date_old": f"上线时间定在{old_said}。",
        "date_new": f"更新：上线时间改到{new_said}。",
        "ack": "好的，记下了。",
        "ask_slot": "他们给我们分配的是哪个仓位？",
        "slot_head": "查询完成（3 个来源，0.4 秒）。",
        "slot": f"仓位：{slot}，保留至另行通知。",
        "sample": f"预订编号的格式类似模板里的示例 {sample}。",
    }
    t = zh_text if zh else en
    result = "\n".join([t["slot_head"], t["slot"], listing])
    call = ToolCall(call_id, "lookup_slot", json.dumps({"site": "main"}))
    money = (
        (f"{budget_new}欧元", f"{budget_new} EUR", f"€{budget_new}")
        if zh
        else (f"{budget_new} EUR", f"EUR {budget_new}", f"€{budget_new}",
              f"{budget_new} euros")
    )  # fmt: skip
    days = (f"{notice}天", f"{notice} days") if zh else (f"{notice} days",)
    user: Role = "user"
    assistant: Role = "assistant"
    return [
        (_turn(Message(user, t["ask_ref"]), Message(assistant, t["ref"])),
         [(1, PlantedFact("assistant_fact", ((ref,),)))]),
        (_turn(Message(user, t["budget_old"]), Message(assistant, t["ack"])), []),
        (_turn(Message(user, t["ask_depot"]), Message(assistant, t["depot"])),
         [(1, PlantedFact("assistant_fact", ((depot,),)))]),
        (_turn(Message(user, t["date_old"]), Message(assistant, t["ack"])), []),
        (_turn(Message(user, preamble + code + ("。" if zh else "."))),
         [(0, PlantedFact("long_message", ((code,),)))]),
        (_turn(Message(assistant, t["sample"])), []),
        (_turn(Message(user, t["ask_notice"]), Message(assistant, t["notice"])),
         [(1, PlantedFact("assistant_fact", (days,)))]),
        (_turn(Message(user, t["budget_new"]), Message(assistant, t["ack"])),
         [(0, PlantedFact("corrected", (money,)))]),
        (_turn(Message(user, t["ask_slot"]),
               Message(assistant, "", tool_calls=[call]),
               Message("tool", result, tool_call_id=call_id, name="lookup_slot")),
         [(2, PlantedFact("tool_detail", ((slot,),)))]),
        (_turn(Message(user, t["date_new"]), Message(assistant, t["ack"])),
         [(0, PlantedFact("corrected", (tuple(new_forms),)))]),
    ]  # fmt: skip


def _stated_once(conversation: FactConversation) -> bool:
    """Tell whether every fact's keys occur in its own message and nowhere else."""
    texts = [normalize_for_match(message_text(m)) for m in conversation.messages]
    for fact in conversation.facts:
        for forms in fact.keys:
            counts = [count_key(text, forms, normalized=True) for text in texts]
            if counts[fact.message_index] != 1 or sum(counts) != 1:
                return False
    return True


def generate_hard_conversation(
    seed: int, locale: Locale, index: int
) -> FactConversation:
    """Return hard conversation ``index`` of ``locale``: the standard one, and more.

    >>> conversation = generate_hard_conversation(7, "en", 0)
    >>> len(conversation.facts)
    19
    """
    base = generate_conversation(seed, locale, index)
    for attempt in range(100):
        rng = random.Random(f"hard-facts:{seed}:{locale}:{index}:{attempt}")
        hard = _hard_turns(rng, locale, index)
        turns = list(base.turns)
        starts = [0]
        for turn in turns:
            starts.append(starts[-1] + len(turn))
        # the standard facts: (turn, offset) in the base conversation
        placed: list[tuple[tuple[Message, ...], int, PlantedFact]] = []
        for fact in base.facts:
            at = max(
                i for i, start in enumerate(starts[:-1]) if start <= fact.message_index
            )
            placed.append((turns[at], fact.message_index - starts[at], fact))
        merged: list[tuple[Message, ...]] = turns[:FIRST_TURN]
        rest = turns[FIRST_TURN:]
        for position, (turn, _) in enumerate(hard):
            merged.append(turn)
            merged.extend(rest[position * 2 : position * 2 + 2])
        merged.extend(rest[len(hard) * 2 :])
        carriers = {id(turn): offsets for turn, offsets in hard}
        facts: list[PlantedFact] = []
        count = 0
        for turn in merged:
            for offset, fact in carriers.get(id(turn), []):
                facts.append(attrs.evolve(fact, message_index=count + offset))
            for base_turn, offset, fact in placed:
                if base_turn is turn:
                    facts.append(attrs.evolve(fact, message_index=count + offset))
            count += len(turn)
        conversation = FactConversation(locale, index, tuple(merged), tuple(facts))
        if _stated_once(conversation):
            return conversation
    raise RuntimeError(f"no clean hard conversation for seed {seed}, {locale} #{index}")


class HardGenerator:
    """``generate_hard_conversation`` as ``run_facts(generator=...)`` takes it."""

    label = LABEL

    def __call__(self, seed: int, locale: Locale, index: int) -> FactConversation:
        return generate_hard_conversation(seed, locale, index)


HARD = HardGenerator()
