"""What a request may take as covered by a session's summary.

A summary record says through which message id it covers the history
(``covered_through_id``), and a request drops the stored messages at or below it. A
record that claims ids past the newest message it could cover (a foreign writer's, or
the store's ids restarted) is not trusted to hide the history: none of it is taken as
covered, and the summary goes beside the whole history until a compression replaces
it. ``Conversation.prepare`` checks against the message it just saved, ``assemble``
against the store's newest message.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from memory_summary.domain import Message, StoreError
from memory_summary.domain.injection import without_covered
from memory_summary.domain.ports import MemoryStore

log = logging.getLogger(__name__)


def trusted_coverage(
    covered: int | None, newest_id: int | None, session_id: str
) -> int | None:
    """Return ``covered``, or None when it claims ids past ``newest_id``.

    ``newest_id`` is the newest id the summary could cover (None: unknown, trusted).
    """
    if covered is None or newest_id is None or covered <= newest_id:
        return covered
    log.warning(
        "session %r: the summary covers ids through %d, past the newest message it "
        "could cover (%d): none of the history is taken as covered",
        session_id,
        covered,
        newest_id,
    )
    return None


def stored_coverage(
    store: MemoryStore,
    session_id: str,
    messages: Sequence[Message],
    covered: int | None,
) -> int | None:
    """Return ``covered`` as ``assemble`` may trust it for ``messages``.

    Reads the store's newest message only when ``covered`` would drop one of
    ``messages``: a request with nothing to drop costs no read. A store that
    cannot say takes nothing as covered (a turn sent twice beats one lost).
    """
    if covered is None or len(without_covered(messages, covered)) == len(messages):
        return covered
    try:
        newest = store.get_full_history(session_id, limit=1)
    except StoreError as exc:
        log.warning(
            "session %r: the newest message is unreadable (%s): none of the history "
            "is taken as covered",
            session_id,
            exc,
        )
        return None
    newest_id = newest[-1].id if newest else None
    return trusted_coverage(covered, 0 if newest_id is None else newest_id, session_id)
