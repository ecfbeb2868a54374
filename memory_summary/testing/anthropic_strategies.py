"""Hypothesis strategies for Anthropic's Messages format: whole requests, hostile text.

``anthropic_requests()`` draws ``(system, messages)`` as a host sends them: system as
text or text blocks (``cache_control`` marks); user turns with text, images and
documents, and ``tool_result`` blocks (several per turn, with or without content,
``is_error``) answering the previous assistant turn's calls, or orphans; assistant
turns with ``thinking``, ``redacted_thinking``, text, ``tool_use`` (JSON input) and
``compaction`` blocks in any order; sometimes two turns of one role in a row. Text is
hostile: compare what comes back with ``normalized(...)``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .strategies import json_values, texts

__all__ = ["anthropic_requests", "anthropic_system"]


def _cache() -> st.SearchStrategy[dict[str, Any]]:
    mark = st.sampled_from(
        [{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]
    ).map(lambda c: {"cache_control": c})
    return st.one_of(st.just({}), mark)


def _with_cache(block: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    return st.builds(lambda b, c: {**b, **c}, block, _cache())


def _text() -> st.SearchStrategy[dict[str, Any]]:
    return _with_cache(st.builds(lambda t: {"type": "text", "text": t}, texts(80)))


def _media() -> st.SearchStrategy[dict[str, Any]]:
    base64 = st.text("ABCDEFabcdef0123456789+/=", max_size=24)
    image = st.one_of(
        st.builds(
            lambda data: {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": data},
            },
            base64,
        ),
        st.builds(
            lambda url: {"type": "image", "source": {"type": "url", "url": url}},
            texts(30),
        ),
    )
    document = st.builds(
        lambda data, title: {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": data},
            **title,
        },
        texts(60),
        st.one_of(st.just({}), texts(20).map(lambda t: {"title": t})),
    )
    return _with_cache(image | document)


def _tool_result(call_id: str) -> st.SearchStrategy[dict[str, Any]]:
    content = st.one_of(
        st.just({}),
        texts(80).map(lambda t: {"content": t}),
        st.lists(_text() | _media(), max_size=3).map(lambda p: {"content": p}),
    )
    error: st.SearchStrategy[dict[str, Any]] = st.one_of(
        st.just({}), st.booleans().map(lambda e: {"is_error": e})
    )
    return st.builds(
        lambda c, e, k: {"type": "tool_result", "tool_use_id": call_id, **c, **e, **k},
        content,
        error,
        _cache(),
    )


@st.composite
def _user_turn(draw: st.DrawFn, pending: list[str]) -> dict[str, Any]:
    if not pending and draw(st.booleans()):
        return {"role": "user", "content": draw(texts(120))}
    answered = [i for i in pending if draw(st.integers(0, 4))]  # mostly answered
    orphans = draw(st.lists(texts(10).map(lambda t: "toolu_x" + t), max_size=1))
    results = [draw(_tool_result(i)) for i in [*answered, *orphans]]
    rest = draw(st.lists(_text() | _media(), max_size=3))
    content = results + rest if draw(st.integers(0, 5)) else rest + results
    return {"role": "user", "content": content}


@st.composite
def _assistant_turn(draw: st.DrawFn, next_id: list[int]) -> dict[str, Any]:
    if draw(st.integers(0, 3)) == 0:
        return {"role": "assistant", "content": draw(texts(120))}
    thinking = st.builds(
        lambda t, s: {"type": "thinking", "thinking": t, "signature": s},
        texts(80),
        st.text("ABCDEFabcdef0123456789", min_size=1, max_size=16),
    )
    redacted = st.builds(
        lambda d: {"type": "redacted_thinking", "data": d},
        st.text("ABCDEFabcdef0123456789", min_size=1, max_size=16),
    )
    compaction = st.builds(
        lambda c, k: {"type": "compaction", "content": c, **k},
        st.none() | texts(80),
        _cache(),
    )

    def tool_use(name: str, arguments: dict[str, Any], cache: dict[str, Any]) -> Any:
        next_id[0] += 1
        return {
            "type": "tool_use",
            "id": f"toolu_{next_id[0]:04d}",
            "name": name,
            "input": arguments,
            **cache,
        }

    use = st.builds(
        tool_use,
        st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12),
        st.dictionaries(texts(8), json_values(), max_size=3),
        _cache(),
    )
    blocks = draw(
        st.lists(st.one_of(_text(), thinking, redacted, use, compaction), max_size=5)
    )
    return {"role": "assistant", "content": blocks}


def anthropic_system() -> st.SearchStrategy[Any]:
    """A request's ``system``: None, text, or a list of text blocks."""
    return st.one_of(st.none(), texts(120), st.lists(_text(), max_size=3))


@st.composite
def anthropic_requests(draw: st.DrawFn, max_turns: int = 8) -> tuple[Any, list[Any]]:
    """A Messages-API request ``(system, messages)``, mostly alternating roles."""
    system = draw(anthropic_system())
    messages: list[dict[str, Any]] = []
    next_id = [0]
    role = "user"
    for _ in range(draw(st.integers(0, max_turns))):
        if role == "user":
            previous = messages[-1]["content"] if messages else ""
            pending = [
                block["id"]
                for block in (previous if isinstance(previous, list) else [])
                if block.get("type") == "tool_use"
            ]
            messages.append(draw(_user_turn(pending)))
        else:
            messages.append(draw(_assistant_turn(next_id)))
        if draw(st.integers(0, 6)):  # sometimes two turns of one role in a row
            role = "assistant" if role == "user" else "user"
    return system, messages
