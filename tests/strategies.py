"""Hypothesis strategies, hostile text included: surrogates, NUL, CJK, emoji, marks."""

from __future__ import annotations

from hypothesis import strategies as st

from memory_summary import Message, ToolCall
from memory_summary.domain import SummarizerUsage, SummaryRecord

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
    return texts(max_size).map(lambda s: Message("user", s).content)


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


@st.composite
def histories(draw: st.DrawFn, max_size: int = 40) -> list[Message]:
    """Histories with ids, tool-call groups (whole, partial, orphans) and noise."""
    messages: list[Message] = []
    call_number = 0
    for _ in range(draw(st.integers(0, max_size))):
        kind = draw(
            st.sampled_from(
                ["user", "assistant", "group", "orphan", "system", "marker"]
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
        elif kind == "orphan":
            messages.append(
                Message("tool", draw(snippets()), tool_call_id="missing", name="lost")
            )
        elif kind == "marker":
            messages.append(Message("system", "[compressed]", kind="event-marker"))
        else:
            messages.append(Message(kind, draw(snippets())))
    return [
        Message(
            m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.kind, id=i + 1
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
