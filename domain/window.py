"""Which messages a compression reads, which it summarizes, and which it keeps."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from .config import SummaryConfig
from .cut import find_safe_cut, find_token_cut
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
    history = foldable_history(window)
    instructions = tuple(m for m in window if is_host_instruction(m))
    cut = 0 if keep_recent is None else find_safe_cut(history, keep_recent)
    if keep_tokens is not None and cost is not None:
        cut = max(cut, find_token_cut(history, keep_tokens, cost))
    elif keep_recent is None:
        cut = find_safe_cut(history, 1)
    return WindowSplit(tuple(history[:cut]), tuple(history[cut:]), instructions)
