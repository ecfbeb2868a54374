"""The real-conversation benchmark on generated chats (``summary_quality``)."""

from __future__ import annotations

import pytest
from summary_quality.benchmark import (
    TUNING_IDS,
    half_of,
    run_quality,
    table_rows,
)
from summary_quality.locomo import parse_locomo
from summary_quality.replay import TEXTS, _cut_tokens
from summary_quality.synthetic import generate_dialogue

from memory_summary.domain import ConfigError


@pytest.fixture(scope="module")
def report():
    conversations = parse_locomo([generate_dialogue(5, i) for i in range(2)])
    return run_quality(conversations, budget_factors=(1,))


def test_every_view_scores_every_text_on_the_same_questions(report):
    [run] = report["runs"]
    views = [run["headline"], *run["checkpoints"].values(), *run["speakers"].values()]
    for shares in views:
        assert set(shares) == set(TEXTS)
        totals = {share["of"] for share in shares.values()}
        assert len(totals) == 1
        assert all(0 <= s["kept"] <= s["of"] for s in shares.values())
    assert run["headline"]["summary"]["of"] > 0


def test_later_checkpoints_score_at_least_the_questions_of_earlier_ones(report):
    [run] = report["runs"]
    counts = [shares["summary"]["of"] for shares in run["checkpoints"].values()]

    assert counts == sorted(counts)
    assert counts[-1] == run["headline"]["summary"]["of"]


def test_the_final_summary_and_active_messages_hold_what_each_alone_holds(report):
    [run] = report["runs"]
    headline = run["headline"]

    assert headline["summary+active"]["kept"] >= headline["summary"]["kept"]
    assert table_rows(report)[0]["view"] == "end, cat 1/2/4"


def test_the_report_gives_the_final_summaries_redundancy_and_each_half(report):
    [run] = report["runs"]

    assert 0.0 <= run["redundancy"] <= 1.0
    assert run["halves"] == {"measuring": run["headline"]}  # generated: no tuning id
    rows = table_rows(report)
    [row] = [r for r in rows if r["view"] == "redundancy, end"]
    assert row["summary"] == f"{run['redundancy']:.1%}"


def test_the_tuning_conversations_are_reported_apart_from_the_others():
    tuned, other = generate_dialogue(5, 0), generate_dialogue(5, 1)
    tuned["sample_id"], other["sample_id"] = TUNING_IDS[0], "conv-99"

    [run] = run_quality(parse_locomo([tuned, other]), budget_factors=(1,))["runs"]

    halves = run["halves"]
    assert set(halves) == {"tuning", "measuring"}
    assert (
        halves["tuning"]["summary"]["of"] + halves["measuring"]["summary"]["of"]
        == run["headline"]["summary"]["of"]
    )
    assert half_of("conv-26") == "tuning"
    assert half_of("conv-41") == "measuring"


def test_the_same_chats_give_the_same_report():
    conversations = parse_locomo([generate_dialogue(9, 0)])

    def figures():
        [run] = run_quality(conversations, budget_factors=(1,))["runs"]
        return {k: v for k, v in run.items() if k != "cpu_ms_per_call"}  # a timing

    assert figures() == figures()


def test_the_lead_and_tail_cuts_fit_their_budget():
    texts = [f"line {i} says something" for i in range(50)]

    lead = _cut_tokens(texts, 60, len, tail=False)
    tail = _cut_tokens(texts, 60, len, tail=True)

    assert lead.startswith("line 0 ")
    assert tail.endswith("line 49 says something")
    assert len(lead) <= 60 + lead.count("\n")
    assert len(tail) <= 60 + tail.count("\n")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"budget_factors": ()}, "budget_factors"), ({"budget_factors": (0,)}, "budget")],
)
def test_bad_arguments_are_config_errors(kwargs, field):
    conversations = parse_locomo([generate_dialogue(5, 0)])

    with pytest.raises(ConfigError, match=field):
        run_quality(conversations, **kwargs)
    with pytest.raises(ConfigError, match="conversations"):
        run_quality([])
