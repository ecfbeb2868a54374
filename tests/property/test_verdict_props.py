from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters.summarizers.offline.extractive import ExtractiveSummarizer
from memory_summary.domain import (
    Accepted,
    Rejected,
    check_summary,
    render_transcript,
    summary_request,
)
from memory_summary.domain.text import normalize_text
from memory_summary.testing.strategies import HOSTILE_PIECES, histories, texts

TAG_PIECES = [
    "<think>",
    "</think>",
    "<THINKING>",
    "</thinking>",
    "<think a=1>",
    "<conversation>",
    "</conversation>",
    "<previous_summary>",
    "</current_task_state>",
    "I'm sorry, ",
    "I can't",
    "抱歉，",
    "Error: 429 ",
    '{"error": ',
    "<html>",
    "User: hi",
    "ok",
]


def replies() -> st.SearchStrategy[str]:
    """Hostile replies: arbitrary text, hostile pieces and the verdict's own cues."""
    piece = st.one_of(
        st.text(max_size=30), st.sampled_from(HOSTILE_PIECES + TAG_PIECES)
    )
    return st.lists(piece, max_size=20).map("".join)


def words(text: str) -> int:
    """A token counter that is not the identity: whitespace-separated pieces."""
    return len(text.split())


COUNTERS = st.sampled_from([len, words, lambda text: len(text.encode("utf-8"))])


@given(
    reply=replies(),
    transcript=st.lists(texts(100), max_size=5),
    previous=st.none() | texts(100),
    budget=st.integers(-2, 120),
    count_tokens=COUNTERS,
    locale=st.sampled_from(["en", "zh"]),
)
def test_check_summary_never_raises_and_an_accepted_text_fits_the_budget(
    reply, transcript, previous, budget, count_tokens, locale
):
    result = check_summary(
        reply,
        transcript=transcript,
        previous=previous,
        budget_tokens=budget,
        count_tokens=count_tokens,
        locale=locale,
    )

    assert isinstance(result, (Accepted, Rejected))
    if isinstance(result, Accepted):
        assert result.tokens == count_tokens(result.text) <= budget
        assert result.text.strip()
        assert normalize_text(result.text) == result.text
    else:
        assert result.reason in {
            "empty",
            "provider_error",
            "refusal",
            "echo",
            "too_short",
        }


@given(
    history=histories(max_size=20),
    locale=st.sampled_from(["en", "zh"]),
    budget=st.integers(512, 2000),
)
def test_the_extractive_summary_of_any_history_is_never_judged_dishonest(
    history, locale, budget
):
    transcript = render_transcript(history, locale=locale)
    request = summary_request(
        transcript, previous_summary=None, todo=None, system="s", locale=locale
    )
    reply = ExtractiveSummarizer(len).complete(request, max_tokens=budget)

    result = check_summary(
        reply,
        transcript=transcript,
        previous=None,
        budget_tokens=budget,
        count_tokens=len,
        locale=locale,
    )

    if isinstance(result, Rejected):
        assert result.reason in {"empty", "too_short"}, (result, reply)
