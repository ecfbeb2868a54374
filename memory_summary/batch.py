"""Saving a batch of messages all or nothing, on any store.

A store with ``save_messages`` (``BatchSavingStore``: every store this library ships)
saves the batch in one transaction. Any other store gets every message checked first,
as the shipped stores check them (JSON-compatible metadata and content, a finite
timestamp), and then saved one by one while this process's other batches wait, so a
message the store refuses for those reasons leaves nothing of its batch behind. Such a
store failing once some are saved cannot undo them: ``PartiallySaved`` says which
were saved (with their ids) and which were not, whatever the store raised (its error
is the ``__cause__``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import cast

from memory_summary.adapters.stores.rows import message_values
from memory_summary.domain import (
    BatchSavingStore,
    MemoryStore,
    Message,
    PartiallySaved,
)
from memory_summary.domain.capabilities import has_capability

__all__ = ["save_batch"]

_ONE_AT_A_TIME = threading.Lock()  # batches on stores without save_messages


def save_batch(
    store: MemoryStore,
    session_id: str,
    messages: Sequence[Message],
    *,
    at_once: bool | None = None,
) -> list[Message]:
    """Save ``messages`` to ``session_id`` in order; return them as stored.

    ``at_once`` is whether ``store`` is a ``BatchSavingStore``, as decided when
    wiring (None: decide now, ``domain.capabilities``).

    Raises:
        StoreError: a message is refused; nothing of the batch was saved.
        PartiallySaved: a store without ``save_messages`` failed once it had saved
            the first messages (a ``StoreError``; it lists the saved and the rest),
            with any ``Exception``: its own error is the ``__cause__``.
    """
    if at_once is None:
        at_once = has_capability(store, BatchSavingStore)
    if at_once:
        return cast(BatchSavingStore, store).save_messages(session_id, messages)
    for message in messages:
        message_values(message)  # refuses what a shipped store would, before any save
    saved: list[Message] = []
    with _ONE_AT_A_TIME:
        try:
            for message in messages:  # `saved` holds what is stored when one fails
                saved.append(store.save_message(session_id, message))  # noqa: PERF401
        except Exception as exc:  # a custom store's OSError as much as a StoreError
            if not saved:
                raise
            raise PartiallySaved(session_id, saved, messages[len(saved) :]) from exc
    return saved
