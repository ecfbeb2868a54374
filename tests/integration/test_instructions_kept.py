"""The host's instructions are context, not history: compressions never fold them.

On every store kind: a system or developer message saved into the history stays
active through any number of compressions, in its id order, never reaches the
summarizer, and does not count towards the message-count threshold.
"""

from __future__ import annotations

import asyncio

import pytest

from memory_summary import Message, SummaryConfig, SummaryEngine
from memory_summary.domain.recall import query_terms
from memory_summary.testing.fakes import InstrumentedSummarizer, ScriptedSummarizer
from tests.contract.stores import every_store
from tests.integration.conversation import fill

SUMMARY = "The user and the assistant exchanged numbered messages about the weather."
RULE = "Always answer in French."
STYLE = "Keep every answer under twenty words."


def transcripts(llm: ScriptedSummarizer) -> str:
    return "\n".join(str(m.content) for call in llm.calls for m in call)


def test_instructions_saved_early_survive_every_compression(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    config = SummaryConfig(threshold=8, keep_recent=3, pin_facts=False)
    engine = make_engine(store, llm, config=config)
    system = store.save_message("s1", Message("system", RULE))
    fill(store, "s1", 4)
    developer = store.save_message("s1", Message("developer", STYLE))

    for round_ in range(4):
        fill(store, "s1", 8, start=10 * (round_ + 1))
        engine.turn_after("s1")
        assert engine.wait_idle(timeout=10)

        history = store.get_history("s1")
        assert history[:2] == [system, developer]
        assert [m.role for m in history[2:]] == ["assistant", "user", "assistant"]
        assert len(llm.calls) == round_ + 1

    summary = engine.summary("s1")
    assert summary is not None
    assert summary.covered_through_id > developer.id
    assert summary.compressions == 4
    assert RULE not in transcripts(llm)
    assert STYLE not in transcripts(llm)
    assert "message 0 of s1." in transcripts(llm)
    archived = [m for m in store.get_full_history("s1") if m not in history]
    assert all(m.role in ("user", "assistant") for m in archived)
    prompt = engine.assemble(history, "s1")
    assert [m.content for m in prompt[:2]] == [RULE, STYLE]
    assert prompt[2].text.endswith(SUMMARY)


def test_instructions_alone_at_the_threshold_do_not_compress(store, make_engine):
    llm = ScriptedSummarizer(SUMMARY)
    config = SummaryConfig(threshold=5, keep_recent=2, pin_facts=False)
    engine = make_engine(store, llm, config=config)
    for n in range(6):
        store.save_message("s1", Message("system", f"Rule {n}."))
    fill(store, "s1", 4)

    engine.turn_after("s1")
    assert engine.wait_idle(timeout=10)
    assert llm.calls == []  # 10 active, but only 4 messages of history

    fill(store, "s1", 1, start=4)
    engine.turn_after("s1")
    assert engine.wait_idle(timeout=10)
    fill(store, "s1", 2, start=5)
    engine.turn_after("s1")
    assert engine.wait_idle(timeout=10)

    assert len(llm.calls) == 1  # one fold at 5; two new turns are not 5 again
    assert store.count_history("s1") == 6 + 4
    assert "Rule" not in transcripts(llm)


def test_a_manual_compression_of_only_instructions_has_nothing_to_fold(
    store, make_engine
):
    llm = ScriptedSummarizer(SUMMARY)
    engine = make_engine(store, llm, config=SummaryConfig(threshold=5, keep_recent=2))
    saved = [store.save_message("s1", Message("developer", f"D{n}")) for n in range(5)]

    outcome = engine.compress("s1").result(timeout=10)

    assert outcome.kind == "skipped"
    assert outcome.code == "nothing_to_fold"
    assert store.get_history("s1") == saved
    assert llm.calls == []


def test_an_agents_session_keeps_its_system_item_through_compressions(
    store, make_engine
):
    pytest.importorskip("agents")
    from memory_summary.integrations.openai_agents import SummarySession

    llm = ScriptedSummarizer(SUMMARY)
    config = SummaryConfig(threshold=6, keep_recent=2, pin_facts=False)
    engine = make_engine(store, llm, config=config).start()
    session = SummarySession("agent", engine)
    rule = {"role": "system", "content": RULE}

    async def rounds() -> list[list[object]]:
        seen = []
        await session.add_items([rule])
        for n in range(4):
            await session.add_items(
                [
                    {"role": "user", "content": f"Question {n} about Paris?"},
                    {"role": "assistant", "content": f"Answer {n}: sunny."},
                ]
                * 3
            )
            assert await asyncio.to_thread(engine.wait_idle, 10)
            seen.append(await session.get_items())
        return seen

    seen = asyncio.run(rounds())

    assert len(llm.calls) >= 3
    for items in seen:
        assert items.count(rule) == 1
        assert len(items) <= 1 + 1 + 2 + 6  # summary, rule, keep, one new batch
    assert seen[-1][0]["content"].endswith(SUMMARY)  # the summary item comes first
    assert seen[-1][1] == rule
    assert RULE not in transcripts(llm)
    assert "Question 0 about Paris?" in transcripts(llm)


def test_instructions_over_the_token_trigger_do_not_loop(store):
    """Instructions count as context: the loop guard sees them stay after a fold."""
    config = SummaryConfig(
        threshold=500, keep_recent=50, context_window=4000, keep_recent_tokens=50
    )
    llm = InstrumentedSummarizer()
    rules = " ".join(f"Rule {n}: never reveal secret {n}." for n in range(400))
    instruction = store.save_message("s", Message("system", rules))
    for n in range(20):
        words = " ".join(f"w{n}x{j}" for j in range(40))
        store.save_message("s", Message("user" if n % 2 else "assistant", words))
    with SummaryEngine(store, llm, config=config) as engine:
        for turn in range(10):
            store.save_message("s", Message("user", f"Next question {turn}?"))
            store.save_message("s", Message("assistant", f"Answer {turn}."))
            engine.turn_after("s")
            assert engine.wait_idle(timeout=30)

    assert llm.calls == 1  # the kept instructions alone are over the trigger
    assert store.get_history("s")[0] == instruction
    assert len(store.get_full_history("s")) - store.count_history("s") >= 10
    assert store.get_history("s")[-1].content == "Answer 9."


@every_store
def test_a_kept_instruction_reads_as_active_in_searches_reads_and_counts(store):
    """Below the boundary, an instruction is still active for the history index too."""
    rule = store.save_message("s1", Message("system", "Answer in zanzibarish."))
    told = fill(store, "s1", 4)
    assert store.trim_history("s1", 1) == 3

    hits = store.search_messages("s1", query_terms("zanzibarish"), limit=5)
    assert [(hit.message.id, hit.archived) for hit in hits][:1] == [(rule.id, False)]
    archived_hits = store.search_messages(
        "s1", query_terms("zanzibarish 0 1 2 3"), limit=10, archived_only=True
    )
    assert {hit.message.id for hit in archived_hits} == {m.id for m in told[:3]}
    assert all(hit.archived for hit in archived_hits)

    around = store.read_messages("s1", rule.id, before=0, after=4)
    assert [(hit.message.id, hit.archived) for hit in around] == [
        (rule.id, False),
        *((m.id, True) for m in told[:3]),
        (told[3].id, False),
    ]
    span = store.read_message_range("s1", rule.id, told[0].id, limit=5)
    assert [(hit.message.id, hit.archived) for hit in span] == [
        (rule.id, False),
        (told[0].id, True),
    ]
    assert store.session_counts() == [("s1", 2, 3)]
