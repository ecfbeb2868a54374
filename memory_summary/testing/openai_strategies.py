"""Hypothesis strategies of OpenAI-format chat messages, content parts included.

As the openai SDK's ``ChatCompletionMessageParam`` allows them. Part of
``memory_summary.testing.strategies`` (which re-exports every name here).
"""

from __future__ import annotations

from typing import Any

from memory_summary.domain import normalize_text

from .extra import st
from .text_strategies import bodies, texts

__all__ = ["content_parts", "json_values", "normalized", "openai_messages"]


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
    def call(kind: str, field: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.builds(
            lambda id_, name, value: {
                "id": id_,
                "type": kind,
                kind: {"name": name, field: value},
            },
            texts(20),
            texts(20),
            bodies(),
        )

    both = call("function", "arguments") | call("custom", "input")
    return st.lists(both, min_size=1, max_size=3)


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
