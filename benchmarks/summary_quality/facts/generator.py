"""The generated fact-retention conversations.

An intro, the planted facts among a little chatter, then chatter until the
conversation is long.
"""

from __future__ import annotations

import json
import random

import attrs

from memory_summary.domain import Message, ToolCall

from .matching import count_key, normalize_for_match
from .phrases import CHATTER_TOOLS, EXCHANGES, INTROS, SCENARIOS
from .planted import (
    EARLY_MESSAGES,
    TARGET_MESSAGES,
    FactConversation,
    Locale,
    PlantedFact,
    Planting,
    message_text,
)
from .planting import plant_all, result_lines


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
    body = "\n".join(result_lines(rng, tool, subject, locale, 4, 12))
    result = Message("tool", body, tool_call_id=call_id, name=tool)
    return (question, call, result, answer)


def _build(rng: random.Random, locale: Locale, index: int) -> FactConversation:
    """Return one draw: an intro, the facts among a little chatter, then chatter."""
    topic, *subjects = rng.choice(SCENARIOS[locale])
    planted = plant_all(rng, locale, index, rng.choice(subjects))
    rng.shuffle(planted)
    early: list[tuple[Message, ...] | Planting] = list(planted)
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
    facts: list[PlantedFact] = []
    count = 2
    for item in early:
        if isinstance(item, Planting):
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


def misplaced_facts(conversation: FactConversation) -> list[PlantedFact]:
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
