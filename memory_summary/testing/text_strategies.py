"""Hypothesis strategies of hostile text: surrogates, NUL, CJK, emoji, marks.

Part of ``memory_summary.testing.strategies`` (which re-exports every name here).
"""

from __future__ import annotations

from memory_summary.domain import normalize_text

from .extra import st

__all__ = ["HOSTILE_PIECES", "bodies", "clean_texts", "snippets", "texts"]

HOSTILE_PIECES = [
    "\x00",
    "\ud800",
    "\udfff",
    "👩‍👩‍👧",
    "🇳🇴",
    "e\u0301",
    "\u0915\u094d\u0937",
    "你好，世界",
    "<|endoftext|>",
    "\n",
    " " * 40,
    "ﷺ",
]


def texts(max_size: int = 300) -> st.SearchStrategy[str]:
    """Arbitrary text mixed with hostile pieces."""
    return st.lists(
        st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE_PIECES)),
        max_size=max_size // 20,
    ).map("".join)


def clean_texts(max_size: int = 300) -> st.SearchStrategy[str]:
    """Text as it is after normalization (no surrogates, no NUL)."""
    return texts(max_size).map(normalize_text)


def snippets() -> st.SearchStrategy[str]:
    """Cheap message text: hostile pieces, short arbitrary text, or nothing."""
    return st.one_of(
        st.sampled_from(["", "hello", *HOSTILE_PIECES]), st.text(max_size=8)
    )


def bodies() -> st.SearchStrategy[str]:
    """Tool-result bodies and arguments: hostile snippets or long runs that get cut."""
    return st.one_of(
        snippets(),
        st.tuples(
            st.integers(150, 600), st.sampled_from(["x", "漢", "👍", "e\u0301"])
        ).map(lambda pair: pair[1] * pair[0]),
    )
