"""Hypothesis strategies, hostile text included: surrogates, NUL, CJK, emoji, marks.

Histories with parallel tool-call groups, orphan results and separator markers;
hostile text; JSON-like data; summary records; and OpenAI-format chat messages with
content parts (``openai_messages``), as the openai SDK's ``ChatCompletionMessageParam``
allows them. Needs ``pip install 'memory-summary[testing]'``. The text strategies
live in ``text_strategies`` and the OpenAI-format ones in ``openai_strategies``; every
one is importable from here.

Example:
    >>> from hypothesis import given
    >>> from memory_summary.domain import find_safe_cut
    >>> @given(history=histories())
    ... def test_the_kept_tail_never_starts_with_a_tool_result(history):
    ...     cut = find_safe_cut(history, 3)
    ...     assert cut == 0 or history[cut].role != "tool"
"""

from __future__ import annotations

from memory_summary import Message, ToolCall
from memory_summary.domain import (
    MODEL_RESPONSE,
    SummarizerUsage,
    SummaryRecord,
)
from memory_summary.domain.model import Role

from .extra import st
from .openai_strategies import content_parts, json_values, normalized, openai_messages
from .text_strategies import HOSTILE_PIECES, bodies, clean_texts, snippets, texts

__all__ = [
    "HOSTILE_PIECES",
    "MAX_ID",
    "RECORD_KEYS",
    "bodies",
    "clean_texts",
    "content_parts",
    "histories",
    "id_ranges",
    "json_like",
    "json_scalars",
    "json_values",
    "normalized",
    "openai_messages",
    "snippets",
    "summary_records",
    "texts",
    "usages",
]

_PLAIN_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
}


@st.composite
def histories(draw: st.DrawFn, max_size: int = 40) -> list[Message]:
    """Histories with ids, tool-call groups (whole, partial, orphans) and noise."""
    messages: list[Message] = []
    call_number = 0
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "assistant",
                    "group",
                    "response",
                    "orphan",
                    "system",
                    "marker",
                ]
            )
        )
        if kind == "group":
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_number += 1
                calls.append(
                    ToolCall(
                        f"c{call_number}", f"tool{call_number % 4}", draw(bodies())
                    )
                )
            messages.append(Message("assistant", draw(snippets()), tool_calls=calls))
            answered = draw(
                st.lists(st.sampled_from(calls), unique=True, max_size=len(calls))
            )
            for call in answered:
                if draw(st.booleans()):
                    messages.append(Message("user", "interleaved"))
                messages.append(Message("tool", draw(bodies()), tool_call_id=call.id))
        elif kind == "response":  # a reasoning item, then the calls it led to
            call_number += 1
            group = {MODEL_RESPONSE: f"resp{call_number}"}
            messages.append(
                Message("system", "[reasoning]", kind="item", metadata=group)
            )
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_number += 1
                name = f"tool{call_number % 4}"
                call = ToolCall(f"c{call_number}", name, draw(bodies()))
                calls.append(call)
                messages.append(
                    Message("assistant", "", tool_calls=[call], metadata=group)
                )
            answered = draw(st.lists(st.sampled_from(calls), unique=True))
            messages.extend(
                Message("tool", draw(bodies()), tool_call_id=call.id)
                for call in answered
            )
        elif kind == "orphan":
            messages.append(
                Message("tool", draw(snippets()), tool_call_id="missing", name="lost")
            )
        elif kind == "marker":
            messages.append(Message("system", "[compressed]", kind="event-marker"))
        else:
            messages.append(Message(_PLAIN_ROLES[kind], draw(snippets())))
    return [
        Message(
            m.role,
            m.content,
            m.tool_calls,
            m.tool_call_id,
            m.name,
            m.kind,
            metadata=m.metadata,
            id=i + 1,
        )
        for i, m in enumerate(messages)
    ]


MAX_ID = 2**63 - 1
RECORD_KEYS = [
    "text",
    "summary",
    "tokens",
    "covered_through_id",
    "summarized_count",
    "compressions",
    "model",
    "updated_at",
    "generation",
    "unsummarized",
    "coveredUpTo",
    "messageCount",
]


def json_scalars() -> st.SearchStrategy[object]:
    """JSON-like leaves, hostile ones included: huge ints, nan, inf, lone surrogates."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([10**400, -(10**400), 2**63, MAX_ID, -1, 0]),
        st.floats(allow_nan=True, allow_infinity=True),
        texts(60),
    )


def json_like() -> st.SearchStrategy[object]:
    """Arbitrary JSON-like data whose mappings often use the summary record's keys."""
    keys = st.one_of(st.sampled_from(RECORD_KEYS), st.text(max_size=12))
    return st.recursive(
        json_scalars(),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(keys, inner, max_size=6),
        ),
        max_leaves=20,
    )


@st.composite
def id_ranges(draw: st.DrawFn, max_size: int = 6) -> tuple[tuple[int, int], ...]:
    """Canonical id ranges: sorted, disjoint, with a gap between neighbours."""
    ranges: list[tuple[int, int]] = []
    next_free = draw(st.integers(0, 50))
    for _ in range(draw(st.integers(0, max_size))):
        first = next_free + draw(st.integers(0, 20))
        last = first + draw(st.integers(0, 20))
        ranges.append((first, last))
        next_free = last + 2
    return tuple(ranges)


def summary_records() -> st.SearchStrategy[SummaryRecord]:
    """Valid summary records, as ``read_record`` returns them (normalized text)."""
    counts = st.integers(0, MAX_ID)
    return st.builds(
        SummaryRecord,
        text=clean_texts(),
        covered_through_id=st.none() | counts,
        tokens=counts,
        summarized_count=counts,
        compressions=counts,
        model=st.none() | clean_texts(40),
        updated_at=st.floats(0.0, 1e12) | st.integers(0, MAX_ID).map(float),
        generation=st.none() | st.text(max_size=20),
        unsummarized=id_ranges(),
        usage=usages(),
    )


def usages() -> st.SearchStrategy[SummarizerUsage]:
    """Valid usage totals, as ``read_usage`` returns them (counted <= calls)."""
    counts = st.integers(0, MAX_ID)
    return st.builds(
        lambda inp, out, calls, counted, seconds: SummarizerUsage(
            inp, out, calls, min(counted, calls), seconds
        ),
        counts,
        counts,
        counts,
        counts,
        st.floats(0.0, 1e9),
    )
