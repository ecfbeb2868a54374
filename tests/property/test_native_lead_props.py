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
def test_the_kept_lead_is_the_newest_suffix_that_fits(messages, budget):
    kept = newest_within(messages, budget)

    assert list(kept) == messages[len(messages) - len(kept) :]  # newest, in order
    assert sum(map(size, kept)) <= budget
    if len(kept) < len(messages):  # one more would not have fit
        assert sum(map(size, kept)) + size(messages[-len(kept) - 1]) > budget
