"""The offline summarizer's memory grows with its input, not with its square."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable

import pytest

from memory_summary.adapters import ExtractiveSummarizer
from memory_summary.domain import Message, summary_request
from memory_summary.domain.clause_fold import stable_cut

INPUT_CHARS = 2_000_000
PEAK_PER_INPUT_BYTE = 8
"""A fold copies its request a few times (normalized, sections, a scanned head)."""
KEPT_PER_INPUT_BYTE = 1 / 16
"""What a fold leaves behind (its caches) is its facts, never its sentences."""
TEXTS = {
    "one-sentence-repeated": "The order ORD-1 is late. " * (INPUT_CHARS // 25),
    "one-word": "x" * INPUT_CHARS,
    "slashes": "a/" * (INPUT_CHARS // 2),
    "cjk": "\u6f22\u5b57" * (INPUT_CHARS // 2),
    "digits": "1 " * (INPUT_CHARS // 2),
}


def _requests(text: str) -> dict[str, list[Message]]:
    def request(lines: list[str], previous: str | None = None) -> list[Message]:
        return summary_request(
            lines, previous_summary=previous, todo=None, system="s", locale="en"
        )

    return {
        "transcript": request([f"User: {text}", f"Assistant: {text}"]),
        "previous-summary": request(["User: hi"], previous=text),
        "unterminated": [Message("user", f"<conversation>\nUser: {text}")],
    }


def _traced_bytes(fold: Callable[[], object]) -> tuple[int, int]:
    """Return the peak and the still-held bytes allocated while calling ``fold``."""
    gc.collect()
    # The suite's earlier tests leave a large heap; frozen, it is not walked again by
    # the collections the fold and the measurement make (each would take a second).
    # Never unfrozen: that would also thaw what the suite's conftest froze.
    gc.freeze()
    tracemalloc.start()
    try:
        answer = fold()
        del answer
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, kept


@pytest.mark.parametrize("shape", ["transcript", "previous-summary", "unterminated"])
@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_a_fold_of_megabyte_messages_takes_a_small_multiple_of_their_size(text, shape):
    messages = _requests(text)[shape]
    summarizer = ExtractiveSummarizer()
    summarizer.complete(_requests("The order ORD-2 is late.")[shape], max_tokens=300)
    input_bytes = sum(sys.getsizeof(message.text) for message in messages)

    peak, kept = _traced_bytes(lambda: summarizer.complete(messages, max_tokens=300))

    assert peak <= PEAK_PER_INPUT_BYTE * input_bytes
    assert kept <= KEPT_PER_INPUT_BYTE * input_bytes


def test_a_summary_repeating_one_sentence_folds_to_that_sentence():
    previous = "The order ORD-1 is late. " * 20_000
    request = summary_request(
        ["User: hi"], previous_summary=previous, todo=None, system="s", locale="en"
    )

    summary = ExtractiveSummarizer().complete(request, max_tokens=300)

    assert summary.count("ORD-1 is late") == 1


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_cutting_a_megabyte_clause_reads_only_its_head(text):
    stable_cut("warm up the tokens", 8)

    peak, kept = _traced_bytes(lambda: stable_cut(text, 160))

    assert peak <= 64 * 1024
    assert kept <= 4 * 1024
