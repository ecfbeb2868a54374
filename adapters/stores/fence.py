"""The fenced commit: its checks and fence order, and how each kind of store commits.

A compression commit is refused, in this order, when the compressor lost its lease,
when the summary record changed since it was read (its generation), and when the
messages it would archive are not the ones it read (their count). ``InMemoryStore``,
the SQL stores and any other store check the same arguments and apply the same
order; only how each check reads the store differs (``CommitChecks``).

The shipped stores' former commit methods (``commit_compaction``,
``commit_compaction_with``) live here once, as deprecated wrappers of ``commit``
(``DeprecatedCommits``), and so does the engine's ``commit`` for an outside store that
has only ``commit_compaction`` (``CompactingCommit``); ``store_commit`` picks, once
when the engine is wired, which way a store commits.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Callable
from typing import Any, Protocol, cast

import attrs

from memory_summary.domain import (
    CommitRequest,
    CommitResult,
    CompactingStore,
    CompressionStore,
    FenceReason,
    StoreError,
)
from memory_summary.domain.capabilities import has_capability, missing_members

from .rows import check_key, check_row_id, metadata_json

log = logging.getLogger(__name__)


def commit_prelude(request: CommitRequest) -> tuple[str, str | None]:
    """Check a commit's keys and records before anything is read; return their JSON.

    Returns:
        The record's JSON and the attached record's (None without one).

    Raises:
        TypeError: ``request`` is no ``CommitRequest``.
        ValueError: a key or id is invalid.
        StoreError: a record is no JSON object.
    """
    if not isinstance(request, CommitRequest):
        raise TypeError(f"commit takes a CommitRequest, not {type(request)!r}")
    sid, attach = request.session_id, request.attach
    check_key("session_id", sid)
    data = metadata_json(request.namespace, sid, request.record)
    check_row_id("through_id", request.through_id)
    if request.lease is not None:
        check_key("lease", request.lease)
    if attach is None:
        return data, None
    return data, metadata_json(attach.namespace, sid, attach.record)


class DeprecatedCommits:
    """A mixin: the former commit methods of the shipped stores, as ``commit``."""

    def commit_compaction(
        self: CompressionStore, session_id: str, **fields: Any
    ) -> CommitResult:
        """Apply ``CommitRequest(session_id=session_id, **fields)`` (deprecated).

        ``commit_compaction_with`` is the same method; use ``commit`` instead.
        """
        warnings.warn(
            "commit_compaction and commit_compaction_with are deprecated; "
            "use commit(CommitRequest(...))",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.commit(CommitRequest(session_id=session_id, **fields))

    commit_compaction_with = commit_compaction


def former_fields(request: CommitRequest) -> dict[str, Any]:
    """Return the keywords ``commit_compaction`` took, from ``request``.

    Named one by one: a field ``CommitRequest`` gains later never reaches a store
    written against the former signature.
    """
    return {
        "namespace": request.namespace,
        "record": request.record,
        "expect_generation": request.expect_generation,
        "through_id": request.through_id,
        "expect_archived": request.expect_archived,
        "lease": request.lease,
        "separator": request.separator,
    }


@attrs.frozen
class OverriddenCommit:
    """``commit`` through a store's own ``commit_compaction_with`` (deprecated).

    A subclass of a shipped store that overrides the former method (to audit commits,
    or to inject faults) keeps being called, with every field it took.
    """

    store: Any

    def __call__(self, request: CommitRequest) -> CommitResult:
        result: CommitResult = self.store.commit_compaction_with(
            request.session_id,
            **former_fields(request),
            attach=request.attach,
            release_lease=request.release_lease,
        )
        return result


@attrs.frozen
class CompactingCommit:
    """``commit`` for a store that has only the deprecated ``commit_compaction``.

    The attached record goes in a second fenced ``commit_compaction`` right after
    the first (the lease, then its own generation); a failure of it is logged and
    never undoes the commit. The lease is not released (``CommitResult.released``
    is false): the engine releases it in a call of its own.
    """

    store: CompactingStore

    def __call__(self, request: CommitRequest) -> CommitResult:
        sid, attach = request.session_id, request.attach
        result = self.store.commit_compaction(sid, **former_fields(request))
        if not result.committed or attach is None:
            return result
        try:
            attached = self.store.commit_compaction(
                sid,
                namespace=attach.namespace,
                record=attach.record,
                expect_generation=attach.expect_generation,
                lease=request.lease,
            )
        except StoreError as exc:
            log.warning("session %s: the attached record failed: %s", sid, exc)
            return result
        return attrs.evolve(result, attached=attached.committed)


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


def fence_reason(checks: CommitChecks, request: CommitRequest) -> FenceReason | int:
    """Return why the commit is fenced, or how many messages it archives.

    The order is the contract: lease, then generation, then the archive count.
    """
    if request.lease is not None and not checks.lease_held(request.lease):
        return "lease"
    if checks.stored_generation() != request.expect_generation:
        return "generation"
    if request.through_id is None:
        return 0
    archived = checks.archivable(request.through_id)
    return archived if archived == request.expect_archived else "archive"


def store_commit(memory: object) -> Callable[[CommitRequest], CommitResult]:
    """Check ``memory`` once against ``CompressionStore``; return how it commits.

    A store written against the former port commits through it, with a
    ``DeprecationWarning``: one with only ``commit_compaction`` (``CompactingStore``,
    or whose ``commit`` takes no ``CommitRequest``) through ``CompactingCommit``, and a
    subclass of a shipped store that overrides ``commit_compaction_with`` through its
    override.

    Raises:
        TypeError: a member of ``CompressionStore`` is missing; the message names it.
    """
    missing = missing_members(memory, CompressionStore)
    former = _former_commit(memory, missing)
    if former is not None:
        warnings.warn(
            f"memory store {type(memory).__name__} commits through "
            "commit_compaction(_with), which is deprecated; implement "
            "commit(CommitRequest): see docs/writing-a-store.md",
            DeprecationWarning,
            stacklevel=3,
        )
        return former
    if missing:
        raise TypeError(
            f"memory store {type(memory).__name__} lacks {', '.join(missing)}; the "
            "engine archives by message id, fenced and atomically with the "
            "summary, and needs a CompressionStore (InMemoryStore, SqliteStore or "
            "PostgresStore; memory_summary.testing checks your own)"
        )
    return cast(CompressionStore, memory).commit


def _former_commit(
    memory: object, missing: list[str]
) -> Callable[[CommitRequest], CommitResult] | None:
    """Return the commit through the store's former methods, when it relies on them."""
    kind = type(memory)
    overridden = getattr(kind, "commit_compaction_with", None)
    own = overridden is not DeprecatedCommits.commit_compaction_with
    if overridden is not None and own and missing in ([], ["commit"]):
        return OverriddenCommit(memory)
    if not has_capability(memory, CompactingStore):
        return None
    if missing == ["commit"] or (not missing and not _takes_a_request(memory)):
        return CompactingCommit(cast(CompactingStore, memory))
    return None


def _takes_a_request(memory: object) -> bool:
    """Tell whether the store's ``commit`` can take one ``CommitRequest``."""
    try:
        inspect.signature(getattr(memory, "commit")).bind(None)  # noqa: B009
    except (TypeError, ValueError):
        return False
    return True
