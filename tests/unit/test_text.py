from __future__ import annotations

from memory_summary.domain import cut_chars, normalize_text
from memory_summary.domain.text import safe_boundary


def test_normalize_leaves_clean_text_alone():
    text = "plain 文本 👍"

    assert normalize_text(text) is text


def test_cut_keeps_text_that_fits_and_marks_cuts():
    assert cut_chars("short", 10) == "short"
    assert cut_chars("x" * 300, 200) == "x" * 199 + "…"
    assert len(cut_chars("x" * 300, 200)) == 200


def test_cut_never_separates_a_combining_mark_from_its_base():
    text = "ab" + "e\u0301" * 3

    cut = cut_chars(text, 4)  # would end between 'e' and its accent

    assert cut == "ab…"


def test_safe_boundary_keeps_emoji_zwj_sequences_whole():
    family = "👩\u200d👩\u200d👧"

    for index in range(1, len(family)):
        assert safe_boundary("x" + family, index + 1) in (1, len(family) + 1)
