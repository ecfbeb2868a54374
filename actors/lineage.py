"""Writing a session's summary lineage after each compression commit.

Each new summary version (``domain.lineage``) is appended right after the commit that
wrote it, in a commit of its own, fenced the same way (the session's lease and the
lineage row's generation): a compression that lost its lease, or a session forgotten
meanwhile, writes nothing. Lineage is bookkeeping: a failure to write it is logged and
never undoes or fails the compression.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs

from memory_summary.domain import (
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


@attrs.define
class LineageWriter:
    """Appends the versions one compression writes to the session's lineage."""

    store: CompressionStore
    session_id: str
    lease: str
    kept: int
    new_generation: Callable[[], str]
    _lineage: Lineage | None = None
    _stopped: bool = False

    def written(
        self,
        before: SummaryRecord | None,
        after: SummaryRecord,
        first_id: int,
        last_id: int,
    ) -> None:
        """Record ``after`` when it is a new summary version folding the ids given."""
        previous = before.compressions if before is not None else 0
        if self._stopped or not after.text or after.compressions <= previous:
            return
        sid = self.session_id
        try:
            lineage = self._load(fresh=before is None)
            version = SummaryVersion(
                after.compressions, first_id, last_id, after.updated_at, after.text
            )
            versions, ranges = with_version(lineage, version, kept=self.kept)
            generation = self.new_generation()
            result = self.store.commit_compaction(
                sid,
                namespace=VERSIONS_NAMESPACE,
                record=lineage_mapping(versions, ranges, generation),
                expect_generation=lineage.generation,
                lease=self.lease,
            )
        except StoreError as exc:
            log.warning(
                "session %s: recording the summary version failed: %s", sid, exc
            )
            self._stopped = True
            return
        if result.fenced is not None:
            log.debug(
                "session %s: summary version not recorded (%s)", sid, result.fenced
            )
            self._stopped = True
            return
        self._lineage = Lineage(versions, ranges, generation)

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
