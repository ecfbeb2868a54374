from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary import Message
from memory_summary.adapters import ExtractiveSummarizer, TiktokenCounter
from memory_summary.domain import summary_request

COUNT = TiktokenCounter("o200k_base").count


def request(lines, previous=None):
    return summary_request(
        lines, previous_summary=previous, todo=None, system="S", locale="en"
    )


def test_keeps_the_telling_sentences_of_each_line_deterministically():
    # Changed by the salience issue: sections, a speaker per line, later sentences
    # kept when they tell something, chatter ("Noted!") left out.
    summarizer = ExtractiveSummarizer(COUNT)
    lines = ["User: I live in Oslo. I like skiing.", "Assistant: Noted! Anything else?"]

    first = summarizer.complete(request(lines), max_tokens=500, temperature=0.3)

    # compacted: the speaker's "I" goes, facts of one speaker share a bullet
    assert first == "Facts:\n- user: live in Oslo; like skiing"
    assert summarizer.complete(request(lines), max_tokens=500, temperature=0.3) == first


def test_keeps_the_previous_summarys_facts():
    summarizer = ExtractiveSummarizer(COUNT)

    text = summarizer.complete(
        request(["User: My cat is Tom."], previous="- User: I live in Oslo."),
        max_tokens=500,
        temperature=0.3,
    )

    assert text.splitlines() == ["Facts:", "- user: I live in Oslo; cat Tom"]


@given(
    lines=st.lists(st.text(min_size=1, max_size=300), max_size=60),
    max_tokens=st.integers(1, 400),
)
def test_never_exceeds_max_tokens(lines, max_tokens):
    clean = [Message("user", line).content.replace("\n", " ") for line in lines]

    text = ExtractiveSummarizer(COUNT).complete(
        request(clean), max_tokens=max_tokens, temperature=0.3
    )

    assert COUNT(text) <= max_tokens


def test_drops_the_oldest_of_equally_plain_lines_first_when_over_budget():
    words = [a + b + c for a in "bdfkmst" for b in "aeiou" for c in "lnr"][:100]
    lines = [  # a hundred facts of their own: nothing to fold
        f"User: {word.title()} hikers loved {word}ville." for word in words
    ]

    text = ExtractiveSummarizer(COUNT).complete(
        request(lines), max_tokens=60, temperature=0.3
    )

    assert text.splitlines()[-1].endswith(
        f"; {words[-1].title()} hikers loved {words[-1]}ville"
    )
    assert f"{words[0]}ville" not in text
    assert f"{words[9]}ville" not in text


def test_keeps_early_identifiers_over_later_plain_lines_when_over_budget():
    # Changed by the salience issue: the oldest lines no longer go first.
    lines = [
        "User: My order number is ORD-58213.",
        *(
            f"User: the walk was long and the view was nice, part {i}."
            for i in range(40)
        ),
    ]

    text = ExtractiveSummarizer(COUNT).complete(
        request(lines), max_tokens=60, temperature=0.3
    )

    assert "ORD-58213" in text
    assert COUNT(text) <= 60


def test_is_labelled_as_not_an_llm():
    assert "not an LLM" in ExtractiveSummarizer.label


def test_a_tool_result_keeps_its_first_line_and_list_numbers_do_not_end_sentences():
    # Changed by the salience issue: a tool result keeps its first line (its
    # outcome), labelled with its tool; a user's message keeps its telling sentences.
    lines = [
        "Tool result(search): 1. First hit.\n2. Second hit at https://example.com/2.",
        "用户: 我住在上海。我喜欢茶。",
    ]

    text = ExtractiveSummarizer(COUNT).complete(
        request(lines), max_tokens=500, temperature=0.3
    )

    assert text.splitlines() == [
        "Facts:",
        "- tool search: 1. First hit",
        "- user: 我住在上海; 我喜欢茶",
    ]
