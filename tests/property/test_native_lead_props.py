"""The user messages kept with an OpenAI compaction item: the newest that fit."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from memory_summary.adapters.summarizers.openai.native import newest_within

MESSAGES = st.lists(
    st.builds(
        lambda text: {"type": "message", "role": "user", "content": text}, st.text()
    ),
    max_size=12,
)


def size(message: dict[str, object]) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode("utf-8", "replace"))


@given(MESSAGES, st.integers(0, 2000))
def test_the_kept_lead_is_what_fits_taken_newest_first(messages, budget):
    kept = newest_within(messages, budget)
    total = sum(map(size, kept))

    indices, at = [], 0
    for message in kept:  # a subsequence of the messages, in their order
        at = messages.index(message, at)
        indices.append(at)
        at += 1
    assert total <= budget
    skipped = [m for i, m in enumerate(messages) if i not in indices]
    assert all(total + size(m) > budget for m in skipped)  # none of them fit
