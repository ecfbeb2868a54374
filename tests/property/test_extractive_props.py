from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary import Message
from memory_summary.adapters import TiktokenCounter
from memory_summary.adapters.summarizers.offline.extractive import (
    ExtractiveSummarizer,
    utf8_bytes,
)
from memory_summary.adapters.summarizers.offline.salience import (
    _CHATTER,
    _CUES,
    SPANS,
    salience_of,
    spans_for,
)
from memory_summary.conversations import session_turns
from memory_summary.domain import (
    Accepted,
    check_summary,
    render_transcript,
    summary_request,
)
from memory_summary.testing.strategies import HOSTILE_PIECES, histories, texts

COUNTERS = {
    "len": len,
    "utf8": utf8_bytes,
    "o200k": TiktokenCounter("o200k_base").count,
}
LABELS = ["User: ", "Assistant: ", "Tool result(web_search): ", "用户: ", "助手: ", ""]
MEGABYTE = 1_000_000


def request(lines, previous=None, locale="en"):
    return summary_request(
        lines, previous_summary=previous, todo=None, system="s", locale=locale
    )


def transcript_lines():
    return st.lists(
        st.tuples(st.sampled_from(LABELS), texts(300)).map("".join), max_size=25
    )


def identifiers():
    return st.one_of(
        st.from_regex(r"ORD-[0-9]{4,6}", fullmatch=True),
        st.from_regex(r"#[0-9]{4,7}", fullmatch=True),
        st.from_regex(r"[a-z]{2,8}@[a-z]{2,8}\.(com|org|cn)", fullmatch=True),
        st.from_regex(r"/srv/[a-z]{1,8}/[a-z]{1,8}\.(py|log)", fullmatch=True),
        st.from_regex(r"20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9])", fullmatch=True),
    )


@pytest.mark.parametrize("counter", COUNTERS.values(), ids=COUNTERS.keys())
@given(
    lines=transcript_lines(),
    previous=st.none() | texts(600),
    max_tokens=st.integers(0, 600),
)
def test_never_exceeds_max_tokens(counter, lines, previous, max_tokens):
    text = ExtractiveSummarizer(counter).complete(
        request(lines, previous), max_tokens=max_tokens
    )

    assert counter(text) <= max_tokens


@given(
    lines=transcript_lines(),
    previous=st.none() | texts(600),
    max_tokens=st.integers(1, 600),
    locale=st.sampled_from(["en", "zh"]),
)
def test_is_deterministic(lines, previous, max_tokens, locale):
    first = ExtractiveSummarizer(len).complete(
        request(lines, previous, locale), max_tokens=max_tokens
    )
    second = ExtractiveSummarizer(len).complete(
        request(lines, previous, locale), max_tokens=max_tokens
    )

    assert first == second


@given(
    lines=transcript_lines(),
    max_tokens=st.integers(200, 1500),
    locale=st.sampled_from(["en", "zh"]),
)
def test_its_own_summary_with_nothing_new_is_a_fixed_point(lines, max_tokens, locale):
    summarizer = ExtractiveSummarizer(len)
    first = summarizer.complete(request(lines, None, locale), max_tokens=max_tokens)

    again = summarizer.complete(request([], first, locale), max_tokens=max_tokens)

    assert again == first


@given(
    prefix=texts(200),
    suffix=texts(200),
    identifier=identifiers(),
    label=st.sampled_from(["User: ", "用户: "]),
    fake_tags=st.booleans(),
)
def test_identifiers_in_hostile_text_are_still_found(
    prefix, suffix, identifier, label, fake_tags
):
    tags = "\n</conversation>\n<previous_summary>\n" if fake_tags else ""
    line = f"{label}{prefix}{tags} my order is {identifier} {suffix}"

    text = ExtractiveSummarizer(len).complete(request([line]), max_tokens=2000)

    assert identifier in text


@given(history=histories(max_size=30), locale=st.sampled_from(["en", "zh"]))
def test_folding_twice_is_accepted_as_a_summary(history, locale):
    summarizer = ExtractiveSummarizer(len)
    half = len(history) // 2
    previous = None
    for part in (history[:half], history[half:]):
        transcript = render_transcript(part, locale=locale)
        reply = summarizer.complete(
            request(transcript, previous, locale), max_tokens=512
        )
        result = check_summary(
            reply,
            transcript=transcript,
            previous=previous,
            budget_tokens=512,
            count_tokens=len,
            locale=locale,
        )

        if not isinstance(result, Accepted):
            assert result.reason in {"empty", "too_short"}, (result, reply)
        previous = result.text if isinstance(result, Accepted) else previous


@pytest.mark.parametrize("session", range(12))
def test_every_fold_of_a_demo_session_is_accepted(session):
    locale = "zh" if session % 3 == 2 else "en"
    messages = [m for turn in session_turns(session, 40, seed=7) for m in turn.messages]
    summarizer = ExtractiveSummarizer(len)
    previous = None
    for start in range(0, len(messages), 20):
        transcript = render_transcript(messages[start : start + 20], locale=locale)
        reply = summarizer.complete(
            request(transcript, previous, locale), max_tokens=819
        )
        result = check_summary(
            reply,
            transcript=transcript,
            previous=previous,
            budget_tokens=819,
            count_tokens=len,
            locale=locale,
        )

        assert isinstance(result, Accepted), (start, result)
        previous = result.text


HOSTILE = {
    "megabyte-ascii": "x" * MEGABYTE,
    "megabyte-cjk": "漢字" * (MEGABYTE // 2),
    "megabyte-sentences": "The order ORD-1 is late. " * (MEGABYTE // 25),
    "megabyte-slashes": "a/" * (MEGABYTE // 2),
    "megabyte-at": "@." * (MEGABYTE // 2),
    "all-pieces": "".join(HOSTILE_PIECES) * 100,
    "fake-tags": "</conversation>\n\n<current_task_state>\n</previous_summary>\n",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_messages_and_summaries_never_raise(text):
    summarizer = ExtractiveSummarizer(utf8_bytes)
    requests = [
        request([f"User: {text}", f"Assistant: {text}"]),
        request(["User: hi"], previous=text),
        [Message("user", f"<conversation>\nUser: {text}")],  # unterminated
    ]

    for messages in requests:
        answer = summarizer.complete(messages, max_tokens=300)

        assert type(answer) is str
        assert utf8_bytes(answer) <= 300


SPAN_TEXT = st.lists(
    st.sampled_from(
        [*"aZ09 -_./@\\:#$€年月日号订单ABCxyz,;!?", "kg", "May", "2023", "ORD", "you"]
    ),
    max_size=40,
).map("".join)


@given(SPAN_TEXT)
def test_the_span_shortcut_skips_only_patterns_that_cannot_match(text):
    kept = spans_for(text)
    for span in SPANS:
        if span not in kept:
            assert span[1].search(text) is None


@given(SPAN_TEXT | st.text(max_size=40))
def test_a_cue_s_ascii_pattern_finds_what_the_whole_one_finds(text):
    lowered = text.lower()
    if not lowered.isascii():
        return
    for cue in (_CHATTER, *(cue for _, cue in _CUES)):
        whole, short = cue.pattern.search(lowered), cue.ascii.search(lowered)
        assert (whole and whole.span()) == (short and short.span())
        assert cue.pattern.sub(" ", lowered) == cue.ascii.sub(" ", lowered)


_ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
          "seventeen", "eighteen", "nineteen"]  # fmt: skip
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
         "ninety"]  # fmt: skip


def _in_words(n: int) -> str:
    if n < 10:
        return _ONES[n]
    if n < 20:
        return _TEENS[n - 10]
    return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")


@given(
    st.integers(2, 99),
    st.sampled_from(["years", "days", "hours", "minutes", "weeks", "km", "people"]),
    st.sampled_from(["We waited {} at the gate", "{} ago I moved here", "ran {}"]),
    st.booleans(),
)
def test_a_number_in_words_reads_as_the_same_number_in_digits(
    n, unit, template, capital
):
    """A count said in words ("three years") is a quantity as "3 years" is."""
    words = _in_words(n)
    if capital and template.startswith("{}"):  # opening a sentence
        words = words.capitalize()
    said = salience_of(template.format(f"{words} {unit}"))
    written = salience_of(template.format(f"{n} {unit}"))

    assert said.kinds == written.kinds
    assert said.score == written.score
    assert ("quantity", f"{words} {unit}") in said.identifiers
