"""Why a compression runs."""

from __future__ import annotations

from typing import Literal

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
