"""What a request may take as covered by a session's summary.

A summary record says through which message id it covers the history
(``covered_through_id``), and a request drops the stored messages at or below it. A
record that claims ids past the newest message it could cover (a foreign writer's, or
the store's ids restarted) is not trusted to hide the history: none of it is taken as
covered, and the summary goes beside the whole history until a compression replaces
it. ``Conversation.prepare`` checks against the message it just saved, ``assemble``
against the store's newest message.

A summary covers only what a compression archived: a message still active is in no
summary. A record whose covered id reaches an active message (a foreign writer's, or
a save that committed after a compression read past its id) is trusted only below
the oldest such message (``active_coverage``), so a request drops archived messages
it still holds and never an active one. Negative and non-integer ids make the whole
record unreadable (``domain.summary.read_record``): it covers nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import cast

from memory_summary.domain import Message, StoreError
from memory_summary.domain.injection import without_covered
from memory_summary.domain.model import is_host_instruction
from memory_summary.domain.ports import CompressionStore, SpanningStore

_PAGE = 16  # active messages read at a time past the host's kept instructions

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


def reaches_history(messages: Sequence[Message], covered: int | None) -> bool:
    """Tell whether ``covered`` reaches a message of an active history read.

    Such a message is archived only when a compression committed since the read
    (``active_coverage`` asks the store); the host's instructions, kept active, do
    not count. ``messages`` in id order: reads only as many as the summary covers.
    """
    if covered is None:
        return False
    for message in messages:
        if message.id is None or message.id > covered:
            return False
        if not is_host_instruction(message):
            return True
    return False


def active_coverage(
    store: CompressionStore, session_id: str, covered: int | None
) -> int | None:
    """Return ``covered`` lowered below the oldest active message it reaches.

    The host's instructions (kept active below any summary) do not count. A store
    that cannot say takes nothing as covered.
    """
    if covered is None:
        return None
    after: int | None = None
    try:
        while True:
            page = store.get_oldest_history(session_id, _PAGE, after_id=after)
            for message in page:
                if message.id is None or message.id > covered:
                    return covered
                if not is_host_instruction(message):
                    log.warning(
                        "session %r: the summary covers ids through %d, but message "
                        "%d below it is still active (in no summary): the request "
                        "keeps it and every later one",
                        session_id,
                        covered,
                        message.id,
                    )
                    return message.id - 1
            if len(page) < _PAGE:
                return covered
            after = page[-1].id
    except StoreError as exc:
        log.warning(
            "session %r: the active history is unreadable (%s): none of the history "
            "is taken as covered",
            session_id,
            exc,
        )
        return None


def stored_coverage(
    store: CompressionStore,
    session_id: str,
    messages: Sequence[Message],
    covered: int | None,
    *,
    spans: bool,
) -> int | None:
    """Return ``covered`` as ``assemble`` may trust it for ``messages``.

    Reads the store only when ``covered`` would drop one of ``messages``: a request
    with nothing to drop costs no read. A ``SpanningStore`` (``spans``) is asked its
    active span, one read: an active message past ``covered`` is the newest it
    could cover, and the oldest active ones are paged only when the span's first
    reaches ``covered`` (the host's instructions kept below it). Otherwise the
    store's newest message is read, then its oldest active ones. A store that
    cannot say takes nothing as covered (a turn sent twice beats one lost).
    """
    if covered is None or len(without_covered(messages, covered)) == len(messages):
        return covered
    if spans:
        try:
            span = cast(SpanningStore, store).active_span(session_id)
        except StoreError as exc:
            log.warning(
                "session %r: the active history is unreadable (%s): none of the "
                "history is taken as covered",
                session_id,
                exc,
            )
            return None
        # The newest message is active (archiving takes the oldest) unless all
        # but kept instructions are archived: then the newest is read below.
        if span.last_id is not None and span.last_id > covered:
            if span.first_id is None or span.first_id > covered:
                return covered  # no active message at or below it
            return active_coverage(store, session_id, covered)
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
    trusted = trusted_coverage(
        covered, 0 if newest_id is None else newest_id, session_id
    )
    return active_coverage(store, session_id, trusted)
