"""The check for a lone surrogate answers exactly as encoding to UTF-8 would, and
``normalize_text``, which uses it, exactly as the pattern it replaced."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters.stores.rows import has_lone_surrogate
from memory_summary.domain import normalize_text

# every width of text: Latin-1, the BMP (surrogates included), beyond it
_CHARS = st.one_of(
    st.characters(max_codepoint=0xFF),
    st.characters(min_codepoint=0x100, max_codepoint=0xFFFF),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(min_codepoint=0x10000),
)


def _utf8_refuses(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@given(st.text(_CHARS, max_size=40))
def test_a_lone_surrogate_is_found_wherever_utf8_refuses_the_text(text: str) -> None:
    assert has_lone_surrogate(text) == _utf8_refuses(text)


@given(st.text(_CHARS, max_size=20), st.sampled_from(["é", "…", "😀", "\ud800"]))
def test_every_width_with_or_without_a_surrogate(text: str, extra: str) -> None:
    for candidate in (text + extra, extra + text, text + extra + text):
        assert has_lone_surrogate(candidate) == _utf8_refuses(candidate)


_REFERENCE = re.compile("[\ud800-\udfff\x00]")


def _normalized_by_pattern(text: str) -> str:
    """``normalize_text`` as it was: one pattern finds every surrogate and NUL."""
    return _REFERENCE.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", text)


@given(st.text(st.one_of(_CHARS, st.just("\x00")), max_size=40))
def test_normalize_text_answers_as_the_pattern_does(text: str) -> None:
    assert normalize_text(text) == _normalized_by_pattern(text)
