"""Why a compression runs."""

from __future__ import annotations

from typing import Literal

Reason = Literal["turn", "auto", "manual"]
"""``turn``: a turn ended at or above the threshold; ``auto``: token usage passed the
pre-compression threshold; ``manual``: the host asked. ``auto`` and ``manual`` ignore
the threshold."""

RANK: dict[Reason, int] = {"turn": 0, "auto": 1, "manual": 2}


def stronger(a: Reason | None, b: Reason) -> Reason:
    """Return the reason a coalesced follow-up runs with: the more forceful one."""
    if a is None or RANK[b] > RANK[a]:
        return b
    return a
