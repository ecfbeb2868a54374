"""When a session compresses: the one trigger rule, by count and by usage.

A turn compresses when its foldable history reaches ``threshold`` (and exceeds the
kept part); a context usage ratio triggers at ``auto_compress_threshold`` (when it is
> 0), whether the host reports the ratio (``token_usage``) or the engine measures it
itself (``context_window``). The engine's turn filter, the host's ratio, the
compression's own measure and its checks all ask this module, and it names why a
compression runs (``Reason``).
"""

from __future__ import annotations

from typing import Literal

from .config import SummaryConfig

Reason = Literal["turn", "recover", "auto", "manual", "overflow"]
"""``turn``: a turn ended at or above the threshold; ``recover``: fold ranges archived
without a summary (after an outage) into it, then compress if the threshold says so;
``auto``: token usage passed the pre-compression threshold; ``manual``: the host asked.
``overflow``: the host's model call just failed on its context length: fold everything
but the newest messages that fit the token keep, at once (recovering archived ranges
waits for the next compression). ``auto``, ``manual`` and ``overflow`` ignore the
threshold. Every other compression recovers first."""

RANK: dict[Reason, int] = {
    "turn": 0,
    "recover": 1,
    "auto": 2,
    "manual": 3,
    "overflow": 4,
}


def stronger(a: Reason | None, b: Reason) -> Reason:
    """Return the reason a coalesced follow-up runs with: the more forceful one."""
    if a is None or RANK[b] > RANK[a]:
        return b
    return a


def is_forced(reason: Reason) -> bool:
    """Tell whether ``reason`` compresses regardless of the message-count threshold."""
    return reason in ("auto", "manual", "overflow")


def is_pressed(reason: Reason) -> bool:
    """Tell whether ``reason`` means the context is (nearly) full: keep tasks whole."""
    return reason in ("auto", "overflow")


def should_compress(active_count: int, config: SummaryConfig) -> bool:
    """Tell whether a turn with ``active_count`` active messages needs compressing.

    Count the foldable history only (``foldable_history``): instructions are context,
    and a session whose instructions alone reach the threshold must not compress on
    every turn. A turn compresses at ``active_count >= threshold``; a manual or
    token-usage request ignores the threshold (the compression folds whatever lies
    beyond the kept part).
    """
    return (
        active_count >= config.threshold and active_count > config.effective_keep_recent
    )


def usage_triggers(usage_ratio: float, config: SummaryConfig) -> bool:
    """Tell whether a context usage ratio asks for an ``auto`` compression.

    At or above ``auto_compress_threshold``, when it is > 0 (0 turns usage off).
    """
    threshold = config.auto_compress_threshold
    return threshold > 0 and usage_ratio >= threshold


def pressure(
    used_tokens: int, window_tokens: int, config: SummaryConfig
) -> float | None:
    """Return the usage ratio of ``used_tokens`` when it triggers, else None."""
    ratio = used_tokens / max(window_tokens, 1)
    return ratio if usage_triggers(ratio, config) else None


def trigger_tokens(window_tokens: int | None, config: SummaryConfig) -> int | None:
    """Return the tokens at which usage triggers in a window (None: never, unknown)."""
    threshold = config.auto_compress_threshold
    if window_tokens is None or threshold <= 0:
        return None
    return max(int(window_tokens * threshold), 1)


def guard_may_hold(reason: Reason, active_count: int, config: SummaryConfig) -> bool:
    """Tell whether the loop guard may hold back a compression run for ``reason``.

    Only token pressure (``auto``) is guarded, and only while the message count does
    not owe a compression: seed: reaching the count compresses. A follow-up that
    coalesced a count trigger into an ``auto`` one (the stronger reason wins) keeps
    the count's right to run, and so does every reason that outranks it.
    """
    return reason == "auto" and not should_compress(active_count, config)
