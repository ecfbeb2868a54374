"""Clearing old thinking from an Anthropic request: the other cheap tier, like masking.

With extended thinking, every assistant turn carries its ``thinking`` (or
``redacted_thinking``) blocks, signatures and all, and a long agent loop sends them all
again on every request. ``clear_old_thinking`` drops those of the assistant turns older
than the last ``keep_turns``, in the request only (the stored history stays as it is),
and never touches what Anthropic requires:

- the open tool loop keeps its thinking verbatim: every assistant turn after the last
  user turn without a ``tool_result`` block, and the assistant turn holding the latest
  ``tool_use`` whose ``tool_result`` is in the request (the API refuses a request whose
  tool loop lost the thinking it began with);
- an assistant turn that holds nothing but thinking keeps it (no empty turn is sent,
  and roles keep alternating).

Invariants (``tests/property/test_thinking_props.py``): the list keeps its length,
roles and every non-thinking block in order; the latest ``keep_turns`` assistant turns
and the open tool loop are unchanged; no turn is emptied; clearing is idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})
"""Block types cleared: Anthropic's thinking, readable or redacted."""


def _blocks(message: Mapping[str, object]) -> list[Mapping[str, object]]:
    content = message.get("content")
    if isinstance(content, str) or not isinstance(content, Sequence):
        return []
    return [block for block in content if isinstance(block, Mapping)]


def _is_thinking(block: object) -> bool:
    return isinstance(block, Mapping) and block.get("type") in THINKING_TYPES


def _answered_ids(messages: Sequence[Mapping[str, object]]) -> set[object]:
    return {
        block.get("tool_use_id")
        for message in messages
        if message.get("role") == "user"
        for block in _blocks(message)
        if block.get("type") == "tool_result"
    }


def _open_loop(messages: Sequence[Mapping[str, object]]) -> set[int]:
    """Return the indexes of the assistant turns whose thinking must stay."""
    kept: set[int] = set()
    for index in range(len(messages) - 1, -1, -1):  # back to the last plain user turn
        message = messages[index]
        if message.get("role") == "assistant":
            kept.add(index)
        elif not any(b.get("type") == "tool_result" for b in _blocks(message)):
            break
    answered = _answered_ids(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "assistant" and any(
            b.get("type") == "tool_use" and b.get("id") in answered
            for b in _blocks(message)
        ):
            kept.add(index)
            break
    return kept


def _cleared(message: Mapping[str, object]) -> dict[str, object]:
    content = message.get("content")
    if isinstance(content, str) or not isinstance(content, Sequence):
        return dict(message)
    rest = [block for block in content if not _is_thinking(block)]
    if not rest or len(rest) == len(content):  # only thinking, or none: as it was
        return dict(message)
    return {**message, "content": rest}


def clear_old_thinking(
    messages: Sequence[Mapping[str, object]], keep_turns: int | None
) -> list[dict[str, object]]:
    """Return Anthropic ``messages`` without the thinking of older assistant turns.

    ``keep_turns`` is how many of the latest assistant turns keep their thinking
    (None: all of them, the request as given; 0: only the open tool loop's). The
    given messages are not changed; see the module docstring for what always stays.

    >>> old = {"role": "assistant", "content": [
    ...     {"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
    ...     {"type": "text", "text": "Rain."}]}
    >>> ask = {"role": "user", "content": "And tomorrow?"}
    >>> clear_old_thinking([ask, old, ask, old], 1)[1]["content"]
    [{'type': 'text', 'text': 'Rain.'}]
    >>> clear_old_thinking([ask, old, ask, old], 1)[3] == old
    True
    """
    if keep_turns is None:
        return [dict(message) for message in messages]
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    kept = _open_loop(messages)
    if keep_turns:
        kept.update(assistants[max(0, len(assistants) - keep_turns) :])
    return [
        _cleared(message)
        if message.get("role") == "assistant" and index not in kept
        else dict(message)
        for index, message in enumerate(messages)
    ]
