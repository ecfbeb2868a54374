"""Hypothesis strategies, hostile text included: surrogates, NUL, CJK, emoji, marks.

Histories with parallel tool-call groups, orphan results and separator markers;
hostile text; JSON-like data; summary records; and OpenAI-format chat messages with
content parts (``openai_messages``), as the openai SDK's ``ChatCompletionMessageParam``
allows them. Needs ``pip install 'memory-summary[testing]'``.

Example:
    >>> from hypothesis import given
    >>> from memory_summary.domain import find_safe_cut
    >>> @given(history=histories())
    ... def test_the_kept_tail_never_starts_with_a_tool_result(history):
    ...     cut = find_safe_cut(history, 3)
    ...     assert cut == 0 or history[cut].role != "tool"
"""

from __future__ import annotations

from typing import Any

try:
    from hypothesis import strategies as st
except ImportError as exc:  # the extra is missing
    raise ImportError(
        "memory_summary.testing needs pytest and hypothesis; install them with: "
        "pip install 'memory-summary[testing]'"
    ) from exc

from memory_summary import Message, ToolCall
from memory_summary.domain import (
    MODEL_RESPONSE,
    SummarizerUsage,
    SummaryRecord,
    normalize_text,
)
from memory_summary.domain.model import Role

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
    "normalized",
    "openai_messages",
    "snippets",
    "summary_records",
    "texts",
    "usages",
]

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


# -- OpenAI-format messages


def json_values() -> st.SearchStrategy[object]:
    """Finite JSON values (what a part of an unknown type may hold), hostile text in."""
    return st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**53), 2**53),
            st.floats(allow_nan=False, allow_infinity=False),
            texts(40),
        ),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text(max_size=8), inner, max_size=3),
        ),
        max_leaves=8,
    )


def _text_parts() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda t: {"type": "text", "text": t}, texts(80))


def _media_parts() -> st.SearchStrategy[dict[str, Any]]:
    image = st.builds(
        lambda url, detail: {
            "type": "image_url",
            "image_url": {"url": url, **({"detail": detail} if detail else {})},
        },
        st.sampled_from(["https://example.com/cat.png", "data:image/png;base64,iVBO"])
        | texts(40),
        st.sampled_from([None, "auto", "low", "high"]),
    )
    audio = st.builds(
        lambda data, fmt: {
            "type": "input_audio",
            "input_audio": {"data": data, "format": fmt},
        },
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
        st.sampled_from(["wav", "mp3"]),
    )
    file = st.builds(
        lambda fields: {"type": "file", "file": fields},
        st.fixed_dictionaries(
            {},
            optional={
                "file_data": st.text("ABCDEFabcdef0123456789+/=", max_size=40),
                "file_id": st.text("abcdef0123456789-", max_size=20),
                "filename": texts(30),
            },
        ),
    )
    foreign = st.builds(
        lambda kind, extra: {**extra, "type": kind},
        st.sampled_from(["video_url", "x-custom"]),
        st.dictionaries(st.sampled_from(["a", "b", "data"]), json_values(), max_size=3),
    )
    return st.one_of(image, audio, file, foreign)


def content_parts(*, media: bool = True) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Lists of content parts: text (hostile too), and images, audio, files, others."""
    part = st.one_of(_text_parts(), _media_parts()) if media else _text_parts()
    return st.lists(part, max_size=5)


def _tool_calls() -> st.SearchStrategy[list[dict[str, Any]]]:
    function = st.builds(
        lambda id_, name, arguments: {
            "id": id_,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        },
        texts(20),
        texts(20),
        bodies(),
    )
    custom = st.builds(
        lambda id_, name, text: {
            "id": id_,
            "type": "custom",
            "custom": {"name": name, "input": text},
        },
        texts(20),
        texts(20),
        bodies(),
    )
    call = function | custom
    return st.lists(call, min_size=1, max_size=3)


def _optional(key: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just({}), values.map(lambda v: {key: v}))


@st.composite
def openai_messages(draw: st.DrawFn, *, media: bool = True) -> dict[str, Any]:
    """One chat message as OpenAI's API takes it (``ChatCompletionMessageParam``).

    Every role (system, developer, user, assistant, tool); content as text or parts,
    None on assistant tool calls and refusals; ``function`` and ``custom`` tool calls;
    ``name`` and ``refusal``. Text is hostile: ``Message`` normalizes it, so compare
    what comes back with ``normalized(message)``.
    """
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    text = texts(200)
    if role in ("system", "developer"):
        content = draw(text | content_parts(media=False))
        return {"role": role, "content": content, **draw(_optional("name", texts(20)))}
    if role == "user":
        content = draw(text | content_parts(media=media))
        return {"role": role, "content": content, **draw(_optional("name", texts(20)))}
    if role == "tool":
        content = draw(text | content_parts(media=False))
        call_id = "call_" + draw(texts(20))  # a tool result needs a non-empty id
        return {"role": role, "content": content, "tool_call_id": call_id}
    message: dict[str, Any] = {"role": "assistant"}
    message.update(draw(_optional("name", texts(20))))
    calls = draw(st.none() | _tool_calls())
    refusal = draw(st.none() | texts(60))
    if calls is not None:
        message["tool_calls"] = calls
    if refusal is not None:
        message["refusal"] = refusal
    refusal_parts = st.lists(
        st.one_of(
            _text_parts(),
            st.builds(lambda t: {"type": "refusal", "refusal": t}, texts(60)),
        ),
        max_size=3,
    )
    nothing = st.none() if calls is not None or refusal is not None else st.nothing()
    message["content"] = draw(st.one_of(text, refusal_parts, nothing))
    return message


def normalized(value: object) -> object:
    """Return ``value`` with every string normalized as ``Message`` stores text.

    Lone surrogates become U+FFFD and NUL bytes are removed (``normalize_text``);
    dict keys too. What a converter or a store gives back equals this.
    """
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, dict):
        return {normalize_text(k): normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value
