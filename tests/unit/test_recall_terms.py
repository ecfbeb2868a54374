"""Indexing terms: the same on any thread, by the fast paths and the general one."""

from __future__ import annotations

import sys
import threading

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.domain import recall
from memory_summary.domain.recall import MAX_TERM_CHARS, text_terms


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
