"""The events and results the engine reports to its host (public contract names)."""

from __future__ import annotations

from typing import Literal

import attrs

from .folding import Outcome, SkipReason
from .trigger import Reason

Status = Literal["start", "done", "error"]


@attrs.frozen
class CompressRequested:
    """Token usage passed the pre-compression threshold (seed: ``session:compress``)."""

    session_id: str
    reason: Reason = "auto"
    usage_ratio: float | None = None


@attrs.frozen
class Compressing:
    """A compression's progress (seed: ``session:compressing``).

    ``start``, then ``done`` (a summary was written, or nothing needed compressing) or
    ``error`` (the model could not be resolved, the store failed, or the engine degraded
    to trim-only); ``detail`` says which. ``done`` and ``error`` carry the ``outcome``
    (kind, ``code``, messages folded and archived, active-context tokens before and
    after, summarizer usage, duration); ``start`` carries none.
    """

    session_id: str
    status: Status
    reason: Reason
    detail: str = ""
    outcome: Outcome | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class Skipped:
    """A trigger decided not to compress, for the reason ``code`` names.

    A turn below the threshold is no event (most turns are). ``reason`` is the trigger
    (``turn``, ``auto``...). A forced request (``auto``, ``manual``) that skips reports
    its ``Compressing`` start and done first, then this event.
    """

    session_id: str
    reason: Reason
    code: SkipReason
    detail: str = ""


@attrs.frozen
class ClearResult:
    """The summary's part in the host's unified memory clear."""

    source: str
    success: bool
    message: str


Event = CompressRequested | Compressing | Skipped
