"""The offline summary's layout: what the budget is spent on besides facts.

One bullet per speaker and day, and date lines that leave out the year of the line
above (``adapters.fitting``, ``adapters.dialogue.written_day`` / ``read_day``).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters import ExtractiveSummarizer
from memory_summary.adapters.summarizers.offline.dialogue import (
    latest_day,
    read_day,
    written_day,
)
from memory_summary.adapters.summarizers.offline.fact_reading import previous_facts
from memory_summary.domain import Accepted, check_summary, summary_request

ALTERNATING = [
    "User: [8 May 2023] I adopted a cat named Luna.",
    "Assistant: My son plays the violin in a school band.",
    "User: I started painting sunsets on Sundays.",
    "Assistant: We went camping in the Rocky Mountains.",
    "User: I moved here from Sweden four years ago.",
]
ACROSS_YEARS = [
    "User: [8 May 2023] I adopted a cat named Luna.",
    "User: [20 May 2023] I started painting sunsets on Sundays.",
    "User: [3 January 2024] I moved here from Sweden four years ago.",
    "User: [9 January 2024] I bought new running shoes in Oslo.",
]


def summarize(lines, previous=None, max_tokens=2000):
    request = summary_request(
        lines, previous_summary=previous, todo=None, system="s", locale="en"
    )
    return ExtractiveSummarizer(len).complete(request, max_tokens=max_tokens)


def test_one_speakers_facts_of_one_day_share_one_part_of_its_line_across_turns():
    text = summarize(ALTERNATING)

    days = [line for line in text.splitlines() if line.startswith("[")]
    assert len(days) == 1
    said = days[0].split("] ", 1)[1].split(" | ")
    assert [part.split(":")[0] for part in said] == ["user", "assistant"]
    assert "Luna" in said[0]
    assert "Sweden" in said[0]
    assert "violin" in said[1]
    assert "Rocky Mountains" in said[1]


def test_a_date_line_leaves_out_the_year_of_the_line_above():
    lines = summarize(ACROSS_YEARS).splitlines()

    assert [line.split("]")[0] + "]" for line in lines if line.startswith("[")] == [
        "[8 May 2023]",
        "[20 May]",
        "[3 January 2024]",
        "[9 January]",
    ]


def test_a_day_written_without_its_year_is_read_back_in_full():
    text = summarize(ACROSS_YEARS)

    facts, _ = previous_facts(text)

    assert [fact.date for fact in facts] == [
        "8 May 2023",
        "20 May 2023",
        "3 January 2024",
        "9 January 2024",
    ]


def test_the_summary_of_its_own_summary_keeps_its_dates_and_bullets():
    text = summarize(ACROSS_YEARS + ALTERNATING[1:])

    again = summarize([], previous=text)
    later = summarize(["User: [21 May 2023] I sold my old bike in Bergen."], text)

    assert again == text
    assert later.splitlines()[-1] == "[21 May 2023] user: sold old bike in Bergen"
    assert later.count("[20 May]") == 1
    assert isinstance(
        check_summary(
            later,
            transcript=["User: I sold my old bike in Bergen."],
            previous=text,
            budget_tokens=2000,
            count_tokens=len,
            locale="en",
        ),
        Accepted,
    )


def test_each_section_names_its_first_days_year():
    previous = "\n".join(
        [
            "Decisions:",
            "[8 May 2023]",
            "- user: We decided book flight Lisbon",
            "[10 May]",
            "- user: We decided take train Porto",
        ]
    )
    text = summarize(["User: [9 May 2023] I adopted a cat named Luna."], previous)

    assert text.splitlines() == [  # read back from date lines, written as day lines
        "Decisions:",
        "[8 May 2023] user: We decided book flight Lisbon",
        "[10 May] user: We decided take train Porto",
        "Facts:",
        "[9 May 2023] user: adopted cat named Luna",  # a section's first day: a year
    ]


@given(
    day=st.integers(1, 28),
    month=st.sampled_from(["May", "January", "Sep"]),
    year=st.integers(1990, 2100).map(str),
    above=st.sampled_from(["", "2023", "2024"]),
)
def test_a_written_day_reads_back_as_itself(day, month, year, above):
    full = f"{day} {month} {year}"

    written, kept = written_day(full, above)

    assert read_day(written, above) == (full, kept)
    assert len(written) <= len(full)


def test_a_day_not_in_day_month_year_form_is_written_and_read_as_it_is():
    assert written_day("2023-05-08", "2023") == ("2023-05-08", "")
    assert read_day("2023-05-08", "2023") == ("2023-05-08", "")
    assert read_day("9 May", "") == ("9 May", "")


def test_an_undated_transcript_goes_on_from_the_latest_day_not_the_last_written():
    previous = (
        "Facts:\n[8 May 2023]\n- user: adopted cat named Luna\n"
        "[20 May]\n- user: started painting sunsets\n"
        "Open tasks:\n[8 May 2023]\n- user: I'll call the vet tomorrow"
    )

    text = summarize(["User: I bought a red kayak in Bergen."], previous)

    facts, _ = previous_facts(text)
    kayak = next(fact for fact in facts if "kayak" in fact.text)
    assert kayak.date == "20 May 2023"


def test_the_latest_day_is_the_last_written_when_a_day_is_no_date():
    assert latest_day(["9 June 2023", "25 May 2023", ""]) == "9 June 2023"
    assert latest_day(["2023-06-09", "2023-05-25"]) == "2023-06-09"
    assert latest_day(["9 June 2023", "day two"]) == "day two"
    assert latest_day([]) == ""


def test_a_dated_transcript_is_a_diary_one_section_by_day():
    said = [
        "I want to open a dance studio.",
        "We decided to rent the space downtown.",
        "I adopted a cat named Luna.",
    ]
    dated = summarize(
        [f"User: [8 May 2023] {said[0]}"] + [f"User: {s}" for s in said[1:]]
    )
    undated = summarize([f"User: {s}" for s in said])

    assert dated.splitlines() == [
        "Facts:",  # one line for the day: no other section repeating its date
        "[8 May 2023] user: I want to open dance studio; "
        "We decided to rent space downtown; adopted cat named Luna",
    ]
    assert [line for line in undated.splitlines() if not line.startswith("-")] == [
        "Goals:",
        "Decisions:",
        "Facts:",
    ]


def test_among_equal_facts_what_happened_outlasts_a_view():
    # Both score alike; the older one would go first, but it tells an event.
    lines = ["User: I went to a pottery class.", "User: I love how art heals people."]

    assert summarize(lines, max_tokens=40) == "Facts:\n- user: went to pottery class"
    assert "art heals" in summarize(lines, max_tokens=80)


def test_a_dated_wish_ranks_as_a_view_and_an_undated_one_as_a_goal():
    # Dated, both are views of one rank: the older goes first. Undated, the wish
    # is a goal the user set, which outranks a view.
    said = ["I want to help people like me.", "I love how art heals people."]
    dated = [f"User: [8 May 2023] {said[0]}", f"User: {said[1]}"]

    assert summarize(dated, max_tokens=60) == (
        "Facts:\n[8 May 2023] user: love how art heals people"
    )
    assert "Goals:\n- user: I want to help people like me" in summarize(
        [f"User: {s}" for s in said], max_tokens=60
    )


@pytest.mark.parametrize(
    ("said", "word"),
    [
        ("I'll send you the video of the recital.", "recital"),  # a promise in talk
        ("I love the scarf you gave me.", "scarf"),  # said of the other
    ],
)
def test_a_dated_word_to_the_other_ranks_below_a_view(said, word):
    # Of one rank otherwise, the older would go first; said to the other, the
    # newer goes first: between people it seldom holds what is later asked.
    dated = ["User: [8 May 2023] I love how art heals people.", f"User: {said}"]

    assert summarize(dated, max_tokens=60) == (
        "Facts:\n[8 May 2023] user: love how art heals people"
    )
    assert word in summarize(dated, max_tokens=120)
