"""Writing a session's summary lineage with each compression commit.

Each new summary version (``domain.lineage``) is appended by the commit that wrote it
(``prepare`` gives the record the commit attaches, ``landed`` takes the commit's word;
a store with only the deprecated ``commit_compaction`` writes it in a commit of its
own right after). Either way it is fenced like the summary (the session's lease)
and by the lineage row's own generation: a compression that lost its lease, or a
session forgotten meanwhile, writes nothing. Lineage is bookkeeping: a failure to
write it is logged and never undoes or fails the compression.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from memory_summary.domain import (
    AttachedRecord,
    CompressionStore,
    MalformedRecord,
    StoreError,
    SummaryRecord,
    SummaryVersion,
)
from memory_summary.domain.lineage import (
    VERSIONS_NAMESPACE,
    Lineage,
    lineage_mapping,
    read_lineage,
    with_version,
)

log = logging.getLogger(__name__)


@attrs.frozen
class PendingVersion:
    """A lineage with one more version, as a commit attaches it."""

    attach: AttachedRecord
    lineage: Lineage


@attrs.define
class LineageWriter:
    """Appends the versions one compression writes to the session's lineage."""

    store: CompressionStore
    session_id: str
    kept: int
    new_generation: Callable[[], str]
    _lineage: Lineage | None = None
    _stopped: bool = False

    def prepare(
        self,
        before: SummaryRecord | None,
        after: SummaryRecord,
        first_id: int,
        last_id: int,
    ) -> PendingVersion | None:
        """Return the lineage record to commit with ``after``, if a new version.

        None when ``after`` is no new version, or once a write failed or was fenced
        (this compression records no more). Reads the stored lineage once.
        """
        previous = before.compressions if before is not None else 0
        if self._stopped or not after.text or after.compressions <= previous:
            return None
        try:
            lineage = self._load(fresh=before is None)
        except StoreError as exc:
            self._failed(exc)
            return None
        version = SummaryVersion(
            after.compressions, first_id, last_id, after.updated_at, after.text
        )
        versions, ranges = with_version(lineage, version, kept=self.kept)
        generation = self.new_generation()
        return PendingVersion(
            AttachedRecord(
                VERSIONS_NAMESPACE,
                lineage_mapping(versions, ranges, generation),
                lineage.generation,
            ),
            Lineage(versions, ranges, generation),
        )

    def landed(self, pending: PendingVersion, *, written: bool) -> None:
        """Take note of whether the commit wrote ``pending`` (else write no more)."""
        if written:
            self._lineage = pending.lineage
            return
        log.debug(
            "session %s: summary version not recorded (its lineage changed)",
            self.session_id,
        )
        self._stopped = True

    def _failed(self, exc: StoreError) -> None:
        log.warning(
            "session %s: recording the summary version failed: %s",
            self.session_id,
            exc,
        )
        self._stopped = True

    def _load(self, *, fresh: bool) -> Lineage:
        if self._lineage is not None:
            return self._lineage
        try:
            stored = read_lineage(
                self.store.get_metadata(VERSIONS_NAMESPACE, self.session_id)
            )
        except MalformedRecord:
            self.store.delete_metadata(VERSIONS_NAMESPACE, self.session_id)
            stored = Lineage()
        # A session without a summary starts a new lineage: what is stored is stale.
        return Lineage(generation=stored.generation) if fresh else stored
