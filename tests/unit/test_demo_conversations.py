"""The demo's generated conversations and what its report says the summary kept."""

from __future__ import annotations

import re

import pytest

from memory_summary.conversations import session_plan, session_turns
from memory_summary.demo import session_kept


def _user_texts(session: int, turns: int = 40) -> list[str]:
    return [
        m.text
        for turn in session_turns(session, turns, seed=7)
        for m in turn.messages
        if m.role == "user"
    ]


@pytest.mark.parametrize("session", range(6))
def test_people_vary_their_phrasing(session):
    texts = _user_texts(session)
    shapes = {re.sub(r"\d+", "0", t) for t in texts}

    assert len(shapes) >= len(texts) // 2  # not one template with a step number
    assert not any("Step" in t for t in texts)


@pytest.mark.parametrize("session", range(6))
def test_each_fact_of_the_topic_is_stated_once(session):
    plan = session_plan(session, 7)
    said = "\n".join(_user_texts(session))

    for fact in plan.topic.facts:
        assert said.count(fact.said) == 1, fact
    assert plan.zh == (session % 3 == 2)


def test_the_report_says_where_each_subject_and_fact_is_kept():
    plan = session_plan(0, 7)
    first, second, third, fourth = plan.topic.facts
    subject = plan.topic.subjects[0]
    summary = (
        f"Facts:\n- user: {subject.removeprefix('a ')}; {first.key}\n"
        f"Pinned facts: {second.key}"
    )

    kept = session_kept("s0", plan, summary, f"user: {third.said}", 120, 3)

    assert kept.subjects[0] == (subject, "summary")
    assert [where for _, _, where in kept.facts] == [
        "summary",
        "pinned",
        "recent messages",
        "not kept",
    ]
    lines = "\n".join(kept.lines())
    assert f"{fourth.key} ({fourth.kind}): not kept" in lines
    assert "after 3 compression(s)" in lines
