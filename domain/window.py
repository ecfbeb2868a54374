"""Which messages a compression reads, which it summarizes, and which it keeps.

Where to cut a history into "fold" and "keep" without splitting a tool-call group.

A *tool-call group* is an assistant message with tool calls plus every later tool result
answering one of its calls (matched by ``tool_call_id``). Messages of one model
response are one group too: adjacent messages whose ``metadata[MODEL_RESPONSE]`` holds
the same text (a reasoning item and the function calls the same response produced
after it, which OpenAI's Responses API only takes together), with every result of
their calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from .config import SummaryConfig
from .model import Message, is_host_instruction

SUMMARIZED_ROLES = frozenset({"user", "assistant", "tool"})


def probe_limit(config: SummaryConfig) -> int:
    """Return how many recent active messages one compression reads.

    seed: max(threshold, keepRecent + 1, 200); the floor is configurable. Reading a
    fixed 200 would never see a threshold above it fire.
    """
    return max(config.threshold, config.keep_recent + 1, config.probe_floor)


def is_summarized(message: Message) -> bool:
    """Tell whether a message goes to the summarizer (user/assistant/tool only).

    System messages and compression separators (event markers) never do.
    """
    return message.role in SUMMARIZED_ROLES and not message.is_event_marker


def foldable_history(messages: Sequence[Message]) -> list[Message]:
    """Return the messages a compression may fold: all but the host's instructions.

    Instructions (``is_host_instruction``) are context, not history: never folded,
    they stay active wherever they are.
    """
    return [m for m in messages if not is_host_instruction(m)]


@attrs.frozen
class WindowSplit:
    """A window cut into the part to fold into the summary and the part kept verbatim.

    ``fold + keep`` is the window's foldable history, in order; ``instructions`` are
    the host's instructions of the window, which stay active. ``fold`` may hold
    messages the summarizer never sees (event markers, integration items); they are
    archived with the rest.
    """

    fold: tuple[Message, ...]
    keep: tuple[Message, ...]
    instructions: tuple[Message, ...] = ()

    @property
    def stays(self) -> tuple[Message, ...]:
        """Return what stays active after the fold: the instructions and the keep."""
        return (*self.instructions, *self.keep)

    @property
    def for_summarizer(self) -> tuple[Message, ...]:
        """Return the folded messages the summarizer reads."""
        return tuple(m for m in self.fold if is_summarized(m))


def split_window(
    window: Sequence[Message],
    keep_recent: int | None,
    *,
    keep_tokens: int | None = None,
    cost: Callable[[Message], int] | None = None,
) -> WindowSplit:
    """Split a window (oldest first) at the safe cut for the keep.

    The host's instructions are set apart first: never folded, and not counted in
    the keep. The kept part holds about ``keep_recent`` messages of the rest (None:
    the count does not bound it) and at most ``keep_tokens`` tokens by ``cost``
    (None: no token bound), whichever keeps less, but never less than the newest
    tool-call group.
    """
    history: list[Message] = []
    held: list[Message] = []
    for message in window:
        (held if is_host_instruction(message) else history).append(message)
    instructions = tuple(held)
    cut = 0 if keep_recent is None else find_safe_cut(history, keep_recent)
    if keep_tokens is not None and cost is not None:
        cut = max(cut, find_token_cut(history, keep_tokens, cost))
    elif keep_recent is None:
        cut = find_safe_cut(history, 1)
    return WindowSplit(tuple(history[:cut]), tuple(history[cut:]), instructions)


MODEL_RESPONSE = "model_response"
"""Metadata key naming the model response a message came from (see the module)."""


def group_starts(history: Sequence[Message]) -> list[int]:
    """Return, for each message, the index where its group starts.

    A message outside any group starts its own; a tool result whose call is not in
    ``history`` (an orphan) starts its own too. A message of the same model response
    as the one before it starts where that one's group starts.
    """
    starts = list(range(len(history)))
    caller: dict[str, int] = {}
    previous: str | None = None
    for index, message in enumerate(history):
        # the model response it came from; most messages carry no metadata at all
        response = message.metadata.get(MODEL_RESPONSE) if message.metadata else None
        if not (isinstance(response, str) and response):
            response = None
        elif response == previous:
            starts[index] = starts[index - 1]
        previous = response
        role = message.role
        if role == "assistant":
            for call in message.tool_calls:
                caller[call.id] = index
        elif role == "tool" and message.tool_call_id in caller:
            starts[index] = starts[caller[message.tool_call_id]]
    return starts


def safe_cuts(history: Sequence[Message]) -> list[bool]:
    """Tell, for each index, whether ``history`` may be cut just before it.

    A cut is safe where no tool-call group straddles it and the part after it does
    not start with a tool result (an orphan's call may sit before ``history``, in a
    page already read). Index 0 is always safe.

    >>> from memory_summary.domain import Message, ToolCall
    >>> call = Message("assistant", "", tool_calls=(ToolCall("c1", "f", "{}"),))
    >>> safe_cuts([Message("user", "a"), call, Message("tool", "r", tool_call_id="c1")])
    [True, True, False]
    """
    starts = group_starts(history)
    safe = [True] * len(history)
    earliest = len(history)
    for index in range(len(history) - 1, 0, -1):
        earliest = min(earliest, starts[index])
        safe[index] = earliest >= index and history[index].role != "tool"
    return safe


def pending_group_start(history: Sequence[Message]) -> int:
    """Return where the open tool-call group at the end of ``history`` starts.

    A group is open while one of its calls has no result in ``history`` yet (the
    host is still running it: a ``compact_context`` call whose compression reads the
    history before its result is saved). It is at the end when nothing but tool
    results, event markers and host instructions follow its last assistant
    message. Such a group is never folded: the fold would archive the call and
    leave the result to come active without it. ``len(history)`` when there is
    none. A call followed by a user or assistant message was left unanswered; its
    group may be folded.

    >>> from memory_summary.domain import Message, ToolCall
    >>> call = Message("assistant", "", tool_calls=(ToolCall("c1", "f", "{}"),))
    >>> pending_group_start([Message("user", "a"), call])
    1
    >>> pending_group_start([Message("user", "a"), call, Message("user", "b")])
    3
    """
    return _pending_start(history, None)


def _pending_start(history: Sequence[Message], starts: list[int] | None) -> int:
    """Return ``pending_group_start``; ``starts``: its ``group_starts``, if known."""
    last = len(history) - 1
    while last >= 0 and _may_follow_a_call(history[last]):
        last -= 1
    if last < 0 or history[last].role != "assistant":
        return len(history)
    start = (group_starts(history) if starts is None else starts)[last]
    group = history[start:]
    answered = {m.tool_call_id for m in group if m.role == "tool"}
    calls = (c.id for m in group if m.role == "assistant" for c in m.tool_calls)
    if all(call in answered for call in calls):
        return len(history)
    return start


def _may_follow_a_call(message: Message) -> bool:
    """Tell whether ``message`` may sit between a call and its result (not a turn)."""
    return (
        message.role == "tool"
        or message.is_event_marker
        or is_host_instruction(message)
    )


def find_safe_cut(history: Sequence[Message], keep_recent: int) -> int:
    """Return the index where the kept tail of ``history`` starts.

    ``history[:cut]`` is summarized, ``history[cut:]`` is kept. Invariants:

    - at least ``min(max(keep_recent, 1), len(history))`` messages are kept;
    - no tool-call group straddles the cut;
    - the kept tail never starts with a tool result (``cut == 0`` or
      ``history[cut].role != "tool"``), so no kept result has lost its call;
    - an open tool-call group at the end (``pending_group_start``) is kept whole,
      so a call is never folded before its result is saved.

    The cut only ever moves towards the start, keeping more, never fewer.

    >>> from memory_summary.domain import Message
    >>> find_safe_cut([Message("user", "a"), Message("user", "b")], 1)
    1
    """
    n = len(history)
    starts = group_starts(history)
    cut = min(max(n - max(keep_recent, 1), 0), _pending_start(history, starts))
    # `earliest`: the earliest group start among messages at or after `cut`, taken
    # over `starts[cut:]` as the cut moves back (`scanned`: where it was taken from).
    earliest, scanned = n, n
    while cut > 0:
        if cut < scanned:
            earliest, scanned = min(earliest, min(starts[cut:scanned])), cut
        moved = min(earliest, cut)
        if history[moved].role == "tool" and moved > 0:
            moved -= 1
        if moved == cut:
            return cut
        cut = moved
    return cut


def _earliest_starts(history: Sequence[Message]) -> list[int]:
    """Return, for each index, the earliest group start at or after it."""
    earliest = group_starts(history)
    for index in range(len(history) - 2, -1, -1):
        earliest[index] = min(earliest[index], earliest[index + 1])
    return earliest


def find_token_cut(
    history: Sequence[Message],
    keep_tokens: int,
    cost: Callable[[Message], int],
) -> int:
    """Return where a kept tail of at most ``keep_tokens`` tokens starts.

    The tail is the longest run of whole tool-call groups at the end of ``history``
    whose ``cost`` sums to at most ``keep_tokens``, but never less than the newest
    group (which may alone be over the bound). The same invariants as
    ``find_safe_cut`` hold: no group straddles the cut and the tail never starts with
    a tool result.

    >>> from memory_summary.domain import Message
    >>> history = [Message("user", "a" * 8), Message("user", "b")]
    >>> find_token_cut(history, 4, lambda message: len(message.content))
    1
    """
    if not history:
        return 0
    earliest = _earliest_starts(history)
    cut = find_safe_cut(history, 1)
    used = sum(cost(m) for m in history[cut:])
    for index in range(cut - 1, -1, -1):
        used += cost(history[index])
        if used > keep_tokens:
            break
        if earliest[index] == index and (index == 0 or history[index].role != "tool"):
            cut = index
    return cut
