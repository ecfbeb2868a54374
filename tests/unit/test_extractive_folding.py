"""The offline summarizer folds near-duplicates and ranks new content above repeats."""

from __future__ import annotations

import json

from memory_summary.adapters import ExtractiveSummarizer
from memory_summary.domain import Message, ToolCall, summary_request
from memory_summary.domain.redundancy import redundancy
from memory_summary.domain.render import render_message


def _summarize(lines: list[str], previous: str | None = None, **kw: object) -> str:
    locale = str(kw.get("locale", "en"))
    request = summary_request(
        lines, previous_summary=previous, todo=None, system="S", locale=locale
    )
    return ExtractiveSummarizer(len).complete(
        request, max_tokens=int(kw.get("max_tokens", 4000))
    )


def _steps(first: int, last: int) -> list[str]:
    return [
        f"User: Step {n}, and please keep it within my budget."
        for n in range(first, last + 1)
    ]


def test_a_clause_said_with_other_numbers_folds_into_its_range():
    summary = _summarize(_steps(1, 12))

    assert "Step 1\u201312, please keep it within budget" in summary
    assert summary.count("please keep it within budget") == 1
    assert redundancy(summary) == 0.0


def test_the_next_compression_widens_the_range_instead_of_unfolding_it():
    first = _summarize(_steps(1, 12))
    second = _summarize(_steps(13, 20), previous=first)

    assert "Step 1\u201320, please keep it within budget" in second
    assert second.count("please keep it within budget") == 1
    assert _summarize([], previous=second) == second  # the fixed point holds


def test_chinese_clauses_fold_too():
    lines = [f"用户：我的预算有限，希望第{n}步能尽快完成。" for n in range(1, 9)]
    summary = _summarize(lines, locale="zh")

    assert "希望第1\u20138步能尽快完成" in summary
    assert redundancy(summary) == 0.0


def test_requests_that_differ_by_a_few_words_fold_into_their_set():
    lines = [
        f"User: For the Lisbon trip I need to sort out {subject} by Friday 10 May."
        for subject in ("flights", "a hotel near Alfama", "the tram 28 schedule")
    ]
    summary = _summarize(lines)

    assert "flights, hotel near Alfama, tram 28 schedule" in summary
    assert summary.count("Lisbon") == 1


def test_repeated_tool_calls_fold_their_arguments_into_distinct_values():
    lines = []
    todos: list[str] = []
    for n, item in enumerate(["flights", "hotel near Alfama", "flights", "tram 28"]):
        todos.append(item)
        call = ToolCall(f"c{n}", "manage_todo_list", json.dumps({"todos": todos}))
        lines.append(render_message(Message("assistant", "", tool_calls=[call]), {}))
        result = Message("tool", f"updated list {n}", tool_call_id=f"c{n}")
        lines.append(render_message(result, {f"c{n}": "manage_todo_list"}))
    summary = _summarize(lines)

    assert "todos: flights, hotel near Alfama, tram 28" in summary
    assert summary.count("todos") == 1


def test_a_short_budget_keeps_a_new_fact_before_another_instance_of_a_kept_one():
    rows = [  # one record, other values in two places: no fold, each a repeat
        render_message(
            Message("tool", f"row {n} of a.csv read at 10:{n:02d}", tool_call_id="t"),
            {"t": "read_file"},
        )
        for n in range(10, 30)
    ]
    summary = _summarize([*rows, "User: I prefer the window seat."], max_tokens=120)

    assert "prefer window seat" in summary
    assert "row 10 of a.csv read at 10:10" in summary  # the first instance stays
    assert redundancy(summary) == 0.0


def test_a_new_topic_outranks_a_restatement_of_a_kept_fact():
    lines = [
        "User: I adopted a cat named Luna last spring.",
        "User: I started learning the violin with my neighbour.",
        "User: The cat I adopted last spring is named Luna, she sleeps a lot.",
    ]
    full = _summarize(lines)
    short = _summarize(lines, max_tokens=len(full) - 20)

    assert "adopted cat named Luna last spring" in short
    assert "violin" in short
    assert "sleeps" not in short


def _numbered(first: int, last: int) -> list[str]:
    return [f"User: s9 says number {n}: " + "words " * 12 for n in range(first, last)]


def test_a_long_clause_cut_short_folds_whatever_its_number_s_length():
    # cut at 80 characters by character count, "number 9" and "number 10" ended on
    # other letters: two shapes, a fold that stopped at each new digit
    first = _summarize(_numbered(0, 40))
    second = _summarize(_numbered(40, 120), previous=first)

    assert "s9 says number 0\u201339: words" in first
    assert "s9 says number 0\u2013119: words" in second
    assert second.count("says number") == 1
    assert redundancy(second) == 0.0
