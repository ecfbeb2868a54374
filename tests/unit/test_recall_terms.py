"""Indexing terms: the same on any thread, by the fast paths and the general one."""

from __future__ import annotations

import re
import sys
import threading
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import recall
from memory_summary.domain.recall import MAX_TERM_CHARS, text_terms

ROOT = Path(__file__).resolve().parents[2]


def _reference_terms(text: str) -> list[str]:
    """``text_terms`` written plainly: every run through ``_words``, one at a time."""
    terms: list[str] = []
    for run, cjk in recall._words(text):
        if cjk:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
            terms.extend(run)
        else:
            terms.append(recall._stem(run[:MAX_TERM_CHARS]))
    return terms


_MIXED = st.lists(
    st.sampled_from(
        ["running", "Jumps", "42", "北京大学", "café", "naïve", "\u2019", "😀"]
    )
    | st.text(max_size=8)
    | st.text(alphabet="ab", min_size=41, max_size=60),  # longer than a term
    max_size=30,
).map(" ".join)


@given(st.text() | _MIXED)
def test_the_terms_are_those_of_the_plain_reading(text: str) -> None:
    assert text_terms(text) == _reference_terms(text)


def test_threads_stemming_at_once_each_get_their_own_words_stems() -> None:
    suffixes = ("ing", "ed", "ations", "ness", "ly", "s", "er", "ingly", "ful")
    stems = ("connect", "run", "happi", "generaliz", "nation", "relat", "hope")
    words = [f"{s}{x}{'z' * k}" for k in range(20) for s in stems for x in suffixes]
    stem = recall._stemmed.__wrapped__  # past the cache: every call stems
    expected = {word: stem(word) for word in words}
    wrong: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        try:
            wrong.extend(word for word in words if stem(word) != expected[word])
        except Exception as exc:  # noqa: BLE001 - a shared stemmer fails mid-word
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads inside a stem, as often as can be
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert (wrong, errors) == ([], [])


def _pure_stem(word: str) -> str:
    from snowballstemmer.english_stemmer import EnglishStemmer

    return str(EnglishStemmer().stemWord(word))


def test_the_c_stemmer_is_the_one_in_use() -> None:
    pytest.importorskip("Stemmer")  # a dependency wherever its wheels are (CPython)
    assert type(recall._new_stemmer()).__module__ == "Stemmer"


def test_the_c_stemmer_stems_the_docs_words_as_the_python_one_does() -> None:
    # Stored terms are compared with a query's: a store written where PyStemmer is
    # missing (PyPy) must be found by the same words where it is installed.
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    words = set()
    for path in texts:
        words.update(re.findall(r"[^\W\d_]+", path.read_text("utf-8").casefold()))
    words.update(
        f"{stem}{suffix}"
        for stem in ("connect", "run", "happi", "generaliz", "nation", "relat", "arg")
        for suffix in ("", "ing", "ed", "ational", "ness", "ly", "ies", "iveness")
    )
    assert len(words) > 2_000  # the docs were read
    different = [
        w for w in sorted(words) if recall._stemmed.__wrapped__(w) != _pure_stem(w)
    ]
    assert different == []


@given(st.text(st.characters(categories=["Ll", "Lu", "Lo"]), min_size=1, max_size=24))
def test_the_c_stemmer_stems_any_word_as_the_python_one_does(word: str) -> None:
    word = word.casefold()
    assert recall._stemmed.__wrapped__(word) == (
        word if not word.isascii() and not word.isalpha() else _pure_stem(word)
    )


_INDEX_TERMS = st.lists(
    st.one_of(
        st.sampled_from(["a", "zebra", "北京", "𐌰" * MAX_TERM_CHARS, "x" * 40]),
        st.integers(0, 10**9).map(str),
    ),
    max_size=60,
)


@given(_INDEX_TERMS, st.integers(1, 8), st.integers(1, 200))
def test_indexed_terms_are_the_longest_prefix_inside_both_bounds(
    terms: list[str], max_terms: int, max_bytes: int
) -> None:
    def fits(prefix: list[str]) -> bool:
        distinct = set(prefix)
        size = sum(len(t.encode("utf-8")) for t in distinct)
        return len(distinct) <= max_terms and size <= max_bytes

    with (
        mock.patch.object(recall, "MAX_INDEXED_TERMS", max_terms),
        mock.patch.object(recall, "MAX_INDEXED_BYTES", max_bytes),
    ):
        kept = recall.indexed_terms(terms)

    assert kept == terms[: len(kept)]
    assert fits(kept)
    assert len(kept) == len(terms) or not fits(terms[: len(kept) + 1])


def test_a_message_of_400k_distinct_words_is_indexed_under_a_bounded_prefix() -> None:
    # 400k distinct numbers (numbers skip the stemmer), then hashes past the bound.
    text = " ".join(map(str, range(400_000))) + " ab12cd" * 10
    stems = mock.Mock(wraps=recall._stem)

    with mock.patch.object(recall, "_stem", stems):
        terms = recall.message_terms(recall.Message("tool", text, tool_call_id="c"))

    assert terms == [str(i) for i in range(recall.MAX_INDEXED_TERMS)]
    assert stems.call_count == recall.MAX_INDEXED_TERMS + 1  # read lazily
    long_text = "Ünïcode 北京 " + " ".join(f"w{i}x" for i in range(20_000))
    assert recall.message_terms(
        recall.Message("user", long_text)
    ) == recall.indexed_terms(text_terms(long_text))
