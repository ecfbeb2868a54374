"""The fact-retention generator and scorer (``summary_quality.facts``), no engine.

Matching rules pinned here (the module docstring states them): NFKC and case folding,
dashes as spaces, optional spaces at digit/letter junctions and next to CJK, thousands
commas ignored, a few accepted forms per key (dates, units, URL schemes), and
boundaries at Latin letters and digits, so a partial id or a neighbouring number never
counts.
"""

from __future__ import annotations

import pytest
from summary_quality.facts import (
    CUT_CHARS,
    EARLY_MESSAGES,
    KINDS,
    TARGET_MESSAGES,
    ConversationResult,
    FactsReport,
    PlantedFact,
    count_key,
    generate_conversation,
    message_text,
    misplaced_facts,
    table_rows,
)

SEEDS = range(12)


def fullwidth(text: str) -> str:
    """Return ``text`` in full-width forms, as CJK input methods may type it."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_the_same_seed_gives_the_same_conversation(locale):
    first = generate_conversation(7, locale, 1)

    again = generate_conversation(7, locale, 1)

    assert again == first
    assert generate_conversation(8, locale, 1) != first
    assert generate_conversation(7, locale, 2) != first


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_a_conversation_holds_about_120_messages_and_every_kind_of_fact(locale):
    conversation = generate_conversation(3, locale, 0)

    assert TARGET_MESSAGES <= len(conversation.messages) <= TARGET_MESSAGES + 4
    assert {fact.kind for fact in conversation.facts} == set(KINDS)
    assert len(conversation.facts) == 12
    assert any(m.tool_calls for m in conversation.messages[EARLY_MESSAGES:])


@pytest.mark.parametrize("locale", ["en", "zh"])
@pytest.mark.parametrize("seed", SEEDS)
def test_every_fact_is_stated_exactly_once_and_early(seed, locale):
    conversation = generate_conversation(seed, locale, seed % 4)
    texts = [message_text(m) for m in conversation.messages]

    for fact in conversation.facts:
        for forms in fact.keys:
            counts = [count_key(text, forms) for text in texts]
            assert sum(counts) == 1, fact
            assert counts[fact.message_index] == 1, fact
        assert fact.message_index < EARLY_MESSAGES
    assert misplaced_facts(conversation) == []


@pytest.mark.parametrize("locale", ["en", "zh"])
def test_a_tool_outcome_is_stated_by_a_tool_result_early_in_its_body(locale):
    conversation = generate_conversation(5, locale, 0)
    messages = conversation.messages

    outcomes = [f for f in conversation.facts if f.kind == "tool_outcome"]

    assert len(outcomes) == 2
    for fact in outcomes:
        result = messages[fact.message_index]
        call = messages[fact.message_index - 1]
        assert result.role == "tool"
        assert call.tool_calls[0].id == result.tool_call_id
        assert count_key(result.content[:CUT_CHARS], fact.keys[0]) == 1


def test_facts_of_a_turn_sit_in_a_user_or_tool_message_not_in_the_chatter():
    conversation = generate_conversation(11, "en", 3)

    roles = {conversation.messages[f.message_index].role for f in conversation.facts}

    assert roles <= {"user", "tool"}


@pytest.mark.parametrize(
    ("forms", "summary"),
    [
        (["ORD-48213-KX"], "- User: order ord 48213 kx, for the supplier"),
        (["ORD-48213-KX"], "订单号" + fullwidth("ORD-48213-KX") + "已记录"),
        (["4870 kg", "4870 kilograms"], "The gear weighs 4,870kg."),
        (["4870 kg", "4870 kilograms"], "about 4870 kilograms in total"),
        (["2027-03-14", "14 March 2027", "March 14, 2027"], "live on March 14, 2027."),
        (["https://ex.org/incidents/7731", "ex.org/incidents/7731"],
         "see ex.org/incidents/7731."),
        (["Ingrid Halvorsen"], "INGRID HALVORSEN approves spending"),
        (["3870元", "¥3870"], "预算上限：3870 元"),
        (["欧阳明华"], "进展汇报给欧阳明华。"),
        (["2027-03-14", "2027年3月14日"], "上线日期：2027 年 3 月 14 日"),
        (["91%"], "disk at 91 % used"),
    ],
)  # fmt: skip
def test_the_scorer_finds_a_key_written_another_accepted_way(forms, summary):
    assert count_key(summary, forms) == 1


@pytest.mark.parametrize(
    ("forms", "summary"),
    [
        (["ORD-48213-KX"], "order ORD-48213-KXY was cancelled"),
        (["TCK-4821"], "ticket TCK-48213 is open"),
        (["1.0843"], "the rate was 1.08 or 21.0843 or 1.08431"),
        (["4870 kg"], "it weighs 4870 g, or 14870 kg"),
        (["Ingrid Halvorsen"], "Ingrid from finance approves spending"),
        (["/srv/shop/config/rates_v3.yaml"], "the file is /srv/shop/config/rates_v3"),
        (["欧阳明华"], "进展汇报给欧阳明。"),
        (["3870元"], "预算上限：38700 元"),
        (["2027-03-14", "2027年3月14日"], "上线日期：2027年3月4日"),
    ],
)
def test_the_scorer_does_not_find_a_key_that_is_not_there(forms, summary):
    assert count_key(summary, forms) == 0


def test_a_fact_needs_every_one_of_its_keys():
    decision = PlantedFact("decision", (("Hetzner",), ("GDPR",)))

    assert decision.is_found_in("We chose Hetzner because of GDPR.")
    assert not decision.is_found_in("We chose Hetzner.")
    assert PlantedFact("decision", (("顺丰",), ("冷链",))).is_found_in(
        "选了顺丰，因为冷链。"
    )


def test_a_real_conversation_fact_is_found_in_its_own_sentence_only():
    conversation = generate_conversation(2, "zh", 1)
    fact = conversation.facts[0]
    stated = conversation.messages[fact.message_index].content

    assert fact.is_found_in(f"摘要：{stated}")
    assert not fact.is_found_in("摘要：用户在规划项目。")


def test_the_report_counts_retention_per_kind_and_locale():
    def result(locale, kept):
        facts = (PlantedFact("person", (("A B",),)), PlantedFact("id", (("X-1",),)))
        return ConversationResult(
            locale=locale,
            index=0,
            messages=120,
            facts=facts,
            retained=kept,
            compressions=5,
            degraded=0,
            summarizer_calls=5,
            summary_tokens=400,
            budget_tokens=819,
            seconds=0.5,
            summary=SUMMARIES[locale],
        )

    report = FactsReport(
        "offline",
        7,
        1,
        ("en", "zh"),
        (result("en", (True, False)), result("zh", (True, True))),
    )
    data = report.to_mapping()

    assert data["retention"]["en"]["person"] == {
        "retained": 1,
        "planted": 1,
        "ratio": 1.0,
    }
    assert data["retention"]["all"]["id"] == {"retained": 1, "planted": 2, "ratio": 0.5}
    assert data["retention"]["all"]["all"]["retained"] == 3
    assert data["retention"]["en"]["date"]["planted"] == 0
    assert data["runs"]["all"]["compressions"] == 10
    rows = {row["kind"]: row for row in table_rows(data)}
    assert rows["id"] == {
        "kind": "id",
        "en": "0/1 (0%)",
        "zh": "1/1 (100%)",
        "all": "1/2 (50%)",
    }
    assert rows["summary tokens (mean/max/budget)"]["all"] == "400/400/819"
    assert "all facts" in report.render()
    assert data["runs"]["en"]["redundancy"] == 0.0
    assert data["runs"]["zh"]["redundancy"] == 0.5  # one clause again, other digits
    assert rows["redundancy of the summaries"]["zh"] == "50.0%"


SUMMARIES = {"en": "Facts:\n- user: A B; X-1", "zh": "事实：\n- 用户：第1步；第2步"}
