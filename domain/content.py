"""Message content given as a list of parts (OpenAI's multimodal form).

A part is a mapping with a ``"type"``: ``text``, ``image_url``, ``input_audio``,
``file`` and ``refusal`` are checked for their required fields; a part of another
type is kept as given. Every part must be JSON-compatible (stores keep it as JSON):
its text is normalized like every message text (``text.normalize_text``), and it is
frozen on the way in (mappings become read-only views, lists become tuples), so a
``Message`` holding parts stays immutable. ``plain_parts`` gives back plain dicts and
lists, equal to the input.

The summarizer reads the parts as text (``content_text``): text and refusal parts as
their text, anything else as a short placeholder (``[image]``, ``[audio]``,
``[file: report.pdf]``, ``[document: title]``, ``[thinking]``); Anthropic's
``compaction`` part (a summary the provider wrote) as its summary text. Budgets
count a part that is not text with a fixed estimate (``content_tokens``): the
model's real cost depends on pixels, seconds and pages, which the message does not
tell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeAlias, cast

from .errors import MessageError
from .text import normalize_text

ContentPart: TypeAlias = Mapping[str, object]
"""One part of a multimodal content list, e.g. ``{"type": "text", "text": "hi"}``."""

Content: TypeAlias = "str | tuple[ContentPart, ...] | None"
"""A message's content: text, a tuple of frozen parts, or None (see ``Message``)."""

IMAGE_TOKENS = 765
"""Estimated tokens of an image part: a 1024x1024 image at high detail (4 tiles)."""
IMAGE_LOW_DETAIL_TOKENS = 85
"""Estimated tokens of an image part with ``"detail": "low"`` (OpenAI's flat rate)."""
AUDIO_TOKENS = 600
"""Estimated tokens of an ``input_audio`` part: about a minute of speech."""
FILE_TOKENS = 1_000
"""Estimated tokens of a ``file`` part: a couple of pages of text."""

MAX_DEPTH = 32
"""How deeply a part may nest mappings and lists (JSON from a hostile writer)."""

# The fields each known part type must carry, and what they hold.
_REQUIRED: Mapping[str, tuple[str, type]] = {
    "text": ("text", str),
    "refusal": ("refusal", str),
    "image_url": ("image_url", Mapping),
    "input_audio": ("input_audio", Mapping),
    "file": ("file", Mapping),
}
_NESTED_TEXT: Mapping[str, tuple[str, ...]] = {
    "image_url": ("url",),
    "input_audio": ("data", "format"),
}


_SAFE_INT_BITS = 10_000
"""Ints this wide (about 3,000 digits) always convert to text; wider ones are tried."""


def _check_int_text(value: int, where: str) -> None:
    """Refuse an int Python will not write as text (stores keep parts as JSON)."""
    try:
        str(value)
    except ValueError as exc:  # over sys.get_int_max_str_digits() (4,300 by default)
        raise MessageError(
            where, f"an int of that many digits is not JSON: {exc}"
        ) from exc


def _frozen(value: object, where: str, depth: int) -> object:
    """Return a read-only, normalized copy of the JSON-compatible ``value``."""
    if depth > MAX_DEPTH:
        raise MessageError(where, f"nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        return normalize_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > _SAFE_INT_BITS:
            _check_int_text(value, where)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MessageError(where, f"{value} is not a JSON number")
        return value
    if isinstance(value, Mapping):
        copy: dict[str, object] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise MessageError(where, f"has a key that is not text: {key!r}")
            copy[normalize_text(key)] = _frozen(item, f"{where}.{key}", depth + 1)
        return MappingProxyType(copy)
    if isinstance(value, (list, tuple)):
        return tuple(
            _frozen(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)
        )
    raise MessageError(where, f"{type(value).__name__} is not JSON-compatible")


def _checked_part(part: object, where: str) -> ContentPart:
    if not isinstance(part, Mapping):
        raise MessageError(where, f"must be a mapping, got {type(part).__name__}")
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        raise MessageError(f"{where}.type", "must be text naming the part's type")
    required = _REQUIRED.get(kind)
    if required is not None:
        field, expected = required
        if not isinstance(part.get(field), expected):
            what = "text" if expected is str else "a mapping"
            raise MessageError(f"{where}.{field}", f"a {kind} part needs it as {what}")
        inner = part[field]
        for name in _NESTED_TEXT.get(kind, ()):
            if not isinstance(inner, Mapping) or not isinstance(inner.get(name), str):
                raise MessageError(f"{where}.{field}.{name}", "must be text")
    return cast(ContentPart, _frozen(part, where, 0))  # a Mapping freezes to one


def content_parts(
    value: Sequence[object], field: str = "content"
) -> tuple[ContentPart, ...]:
    """Return ``value`` checked, normalized and frozen, as a tuple of parts.

    Raises:
        MessageError: a part is not a mapping with a ``type``, a known part lacks a
            required field, or something in it is not JSON-compatible; names it.

    >>> content_parts([{"type": "text", "text": "hi"}])[0]["text"]
    'hi'
    """
    return tuple(_checked_part(part, f"{field}[{i}]") for i, part in enumerate(value))


def plain(value: object) -> object:
    """Return a frozen part value as plain JSON data (dicts and lists)."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    return value


def plain_parts(parts: Sequence[ContentPart]) -> list[dict[str, object]]:
    """Return ``parts`` as a list of plain dicts (what the OpenAI API takes).

    >>> plain_parts(content_parts([{"type": "text", "text": "hi"}]))
    [{'type': 'text', 'text': 'hi'}]
    """
    return [{key: plain(item) for key, item in part.items()} for part in parts]


COMPACTION_PART = "compaction"
"""The ``type`` of Anthropic's compaction part: a summary of all before it."""


def part_text(part: ContentPart) -> str:
    """Return one part as the summarizer reads it: its text, or a placeholder."""
    kind = part.get("type")
    if kind == "text" or kind == "refusal":
        text = part.get(kind)
        return text if isinstance(text, str) else ""
    if kind == COMPACTION_PART:
        summary = part.get("content")
        return f"[compacted: {summary}]" if isinstance(summary, str) else "[compacted]"
    if kind == "image_url" or kind == "image":
        return "[image]"
    if kind == "document":
        title = part.get("title")
        return (
            f"[document: {title}]" if isinstance(title, str) and title else "[document]"
        )
    if kind == "input_audio":
        return "[audio]"
    if kind == "file":
        file = part.get("file")
        name = file.get("filename") if isinstance(file, Mapping) else None
        return f"[file: {name}]" if isinstance(name, str) and name else "[file]"
    return f"[{kind}]"


def content_text(content: Content) -> str:
    r"""Return content as plain text: parts joined by newlines, None as ``""``.

    >>> content_text(content_parts([{"type": "text", "text": "look"},
    ...     {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}]))
    'look\n[image]'
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part_text(part) for part in content)


def part_tokens_estimate(part: ContentPart) -> int | None:
    """Return the estimated tokens of a part that is not text (None for text)."""
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        low = isinstance(image, Mapping) and image.get("detail") == "low"
        return IMAGE_LOW_DETAIL_TOKENS if low else IMAGE_TOKENS
    if kind == "image":  # Anthropic's image block
        return IMAGE_TOKENS
    if kind == "input_audio":
        return AUDIO_TOKENS
    if kind == "file" or kind == "document":
        return FILE_TOKENS
    return None


def carries_compaction(content: Content) -> bool:
    """Tell whether ``content`` holds a ``compaction`` part (``COMPACTION_PART``)."""
    return isinstance(content, tuple) and any(
        part.get("type") == COMPACTION_PART for part in content
    )


def content_tokens(content: Content, count_tokens: Callable[[str], int]) -> int:
    """Return the tokens ``content`` costs a chat model: text counted, media estimated.

    Text and refusal parts (and parts of unknown types, as their placeholder) are
    counted with ``count_tokens``; images, audio and files add their estimate.

    >>> content_tokens(content_parts([{"type": "text", "text": "abc"},
    ...     {"type": "image_url", "image_url": {"url": "u", "detail": "low"}}]), len)
    88
    """
    if content is None:
        return 0
    if isinstance(content, str):
        return count_tokens(content)
    texts: list[str] = []
    estimate = 0
    for part in content:
        tokens = part_tokens_estimate(part)
        if tokens is None:
            texts.append(part_text(part))
        else:
            estimate += tokens
    return (count_tokens("\n".join(texts)) if texts else 0) + estimate
