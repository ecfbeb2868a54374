"""The fenced commit's argument checks and fence order, once for every store.

A compression commit is refused, in this order, when the compressor lost its lease,
when the summary record changed since it was read (its generation), and when the
messages it would archive are not the ones it read (their count). ``InMemoryStore``,
the SQL stores and any other store check the same arguments and apply the same
order; only how each check reads the store differs (``CommitChecks``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from memory_summary.domain import (
    AttachedRecord,
    AttachingStore,
    CommitResult,
    FenceReason,
    Message,
)

from .rows import check_key, check_row_id, metadata_json


def commit_prelude(
    session_id: str,
    *,
    namespace: str,
    record: Mapping[str, object],
    through_id: int | None,
    expect_archived: int,
    lease: str | None,
) -> str:
    """Check a commit's arguments before anything is read; return the record's JSON.

    Raises:
        ValueError: a key, id or count is invalid, or the record is no JSON object.
    """
    check_key("session_id", session_id)
    data = metadata_json(namespace, session_id, record)
    check_row_id("through_id", through_id)
    if through_id is None and expect_archived:
        raise ValueError("expect_archived needs a through_id")
    if lease is not None:
        check_key("lease", lease)
    return data


def attach_prelude(
    session_id: str,
    attach: AttachedRecord | None,
    *,
    namespace: str,
    lease: str | None,
    release_lease: bool,
) -> str | None:
    """Check ``commit_compaction_with``'s own arguments; return the attached JSON.

    Raises:
        ValueError: the attached record is no JSON object or shares the commit's
            namespace, or ``release_lease`` comes without a ``lease``.
    """
    if release_lease and lease is None:
        raise ValueError("release_lease needs the lease to release")
    if attach is None:
        return None
    if not isinstance(attach, AttachedRecord):
        raise TypeError(f"attach must be an AttachedRecord, not {type(attach)!r}")
    if attach.namespace == namespace:
        raise ValueError("the attached record needs a namespace of its own")
    return metadata_json(attach.namespace, session_id, attach.record)


class CommitsWithMore:
    """A mixin: ``commit_compaction`` as the store's ``commit_compaction_with``.

    A store that commits with more (``AttachingStore``) needs one implementation of
    the fenced commit: the plain commit is the same without an attached record or a
    release.
    """

    def commit_compaction(
        self: AttachingStore,
        session_id: str,
        *,
        namespace: str,
        record: Mapping[str, object],
        expect_generation: str | None,
        through_id: int | None = None,
        expect_archived: int = 0,
        lease: str | None = None,
        separator: Callable[[int], Message | None] | None = None,
    ) -> CommitResult:
        """Archive and replace the summary record, fenced; see ``CompressionStore``."""
        return self.commit_compaction_with(
            session_id,
            namespace=namespace,
            record=record,
            expect_generation=expect_generation,
            through_id=through_id,
            expect_archived=expect_archived,
            lease=lease,
            separator=separator,
        )


class CommitChecks(Protocol):
    """How one store reads what the fences compare, inside its commit's lock."""

    def lease_held(self, lease: str) -> bool:
        """Tell whether ``lease`` is the session's live lease."""
        ...

    def stored_generation(self) -> str | None:
        """Return the generation of the stored record (None: no record).

        Raises:
            Exception: the store's own signal that the record is unreadable, which
                fences the commit as ``"generation"`` (the caller maps it).
        """
        ...

    def archivable(self, through_id: int) -> int:
        """Return how many messages archiving through ``through_id`` moves.

        A store may archive them here (inside a transaction it rolls back on a
        fence) or only count them and archive after ``fence_reason`` passes.
        """
        ...


def fence_reason(
    checks: CommitChecks,
    *,
    expect_generation: str | None,
    through_id: int | None,
    expect_archived: int,
    lease: str | None,
) -> FenceReason | int:
    """Return why the commit is fenced, or how many messages it archives.

    The order is the contract: lease, then generation, then the archive count.
    """
    if lease is not None and not checks.lease_held(lease):
        return "lease"
    if checks.stored_generation() != expect_generation:
        return "generation"
    if through_id is None:
        return 0
    archived = checks.archivable(through_id)
    return archived if archived == expect_archived else "archive"
