from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory_summary import Message, ToolCall
from memory_summary.domain import cut_chars, render_message, render_transcript
from memory_summary.domain.render import UNKNOWN_TOOL, fenced_text
from memory_summary.domain.text import safe_boundary
from memory_summary.testing.strategies import clean_texts, histories


@given(text=clean_texts(2000), limit=st.integers(1, 400))
def test_every_cut_piece_fits_and_untouched_text_is_unchanged(text, limit):
    cut = cut_chars(text, limit)

    assert len(cut) <= limit
    if len(text) <= limit:
        assert cut == text
    else:
        assert cut.endswith("…")
        assert text.startswith(cut[:-1])


@given(text=clean_texts(500), index=st.integers(0, 600))
def test_cut_ends_on_a_character_boundary(text, index):
    end = safe_boundary(text, index)

    assert 0 <= end <= min(index, len(text))
    assert end == safe_boundary(text, end)


@given(
    history=histories(), cut=st.integers(1, 300), locale=st.sampled_from(["en", "zh"])
)
def test_tool_pieces_are_cut_and_chat_text_is_verbatim(history, cut, locale):
    lines = render_transcript(history, locale=locale, cut=cut)

    for message, line in zip(history, lines, strict=True):
        if message.role == "tool":
            body = line.split("): ", 1)[1]
            assert body == fenced_text(cut_chars(message.content, cut))
            assert len(cut_chars(message.content, cut)) <= cut
        elif message.role == "user":
            assert line.endswith(fenced_text(message.content))
        elif message.role == "assistant" and message.content:
            assert line.startswith(
                f"{'Assistant' if locale == 'en' else '助手'}: "
                f"{fenced_text(message.content)}"
            )
        for call in message.tool_calls:
            name = (
                call.name
                if call.name.splitlines() in ([call.name], [])
                else (" ".join(call.name.split()))
            )
            assert f"{name}({fenced_text(cut_chars(call.arguments, cut))})" in line


@given(history=histories(), locale=st.sampled_from(["en", "zh"]))
def test_no_text_inside_a_message_starts_a_transcript_line(history, locale):
    from memory_summary.adapters.summarizers.offline.transcript import entries

    for message, line in zip(
        history, render_transcript(history, locale=locale), strict=True
    ):
        said = 1 if message.role != "assistant" or message.text else 0
        expected = max(said + len(message.tool_calls), 1)
        assert len(list(entries(line))) == expected, line


@given(name=st.text(min_size=1, max_size=20), fallback=st.text(min_size=1, max_size=20))
def test_name_lookup_prefers_the_tool_call_id(name, fallback):
    call = Message("assistant", "", tool_calls=[ToolCall("id1", name, "{}")])
    result = Message("tool", "body", tool_call_id="id1", name=fallback)

    line = render_message(result, {"id1": call.tool_calls[0].name})

    # an empty name: the fallback; both empty (a NUL is dropped): the unknown tool
    shown = call.tool_calls[0].name or result.name or UNKNOWN_TOOL
    if shown.splitlines() not in ([shown], []):  # a name never breaks its line
        shown = " ".join(shown.split())
    assert line == f"Tool result({shown}): body"
