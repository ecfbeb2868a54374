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
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

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
    encoded_lineage,
    lineage_mapping,
    read_lineage,
    reads_back,
    version_json,
    with_version,
)
from memory_summary.domain.text import encodes_to_utf8

log = logging.getLogger(__name__)

ENTRIES_CHARS = 32 * 1024 * 1024
"""How many characters of version entries ``VersionEntries`` keeps, all sessions:
about 100 MB for ASCII summaries, up to four times that for emoji."""
VERSION_CHARS = 200
"""What one kept version counts for beyond its text and entry (its objects)."""
SESSION_CHARS = 500
"""What one session counts for beyond its versions (its objects)."""


class VersionEntries:
    """The JSON entries of the versions each session's lineage was last written with.

    A compression writes the whole lineage: every kept summary's text (up to
    ``summary_versions_kept + 1`` of them, 21 by default). Encoding them all again
    at each compression costs about a millisecond per 200 KB (21 summaries of 2k
    tokens), so the entry of each version written is kept here and reused while the
    stored version is still exactly that one (compared whole: a version a foreign
    writer edited or removed is encoded from what is stored). Least recently written
    sessions go first once ``max_chars`` would be exceeded (texts and entries
    counted, plus ``VERSION_CHARS`` per version and ``SESSION_CHARS`` per session);
    what a ``forget`` drops is not put back by a write that began before it.
    Each entry is kept with whether it is known to encode to UTF-8, checked once
    when it was made (``checked_entries``): a record made of checked entries holds
    no lone surrogate, and no store scans its whole text again at each commit
    (``EncodedRecord.utf8_safe``).

    With the entries it keeps the record written and the ``Lineage`` that
    ``read_lineage`` gives for it (``written``'s ``lineage``): the next compression
    of the session, reading back a record equal to it, is spared decoding every kept
    version again (``stored``). Its JSON text counts towards ``max_chars``.

    Thread-safety: every method may be called from any thread.
    """

    def __init__(self, max_chars: int = ENTRIES_CHARS) -> None:
        self._max = max_chars
        self._size = 0
        self._forgets = 0  # a write that began before a forget keeps nothing
        self._lock = threading.Lock()
        self._by_session: OrderedDict[
            str, tuple[dict[int, tuple[SummaryVersion, str, bool]], int]
        ] = OrderedDict()
        self._read: dict[str, tuple[Mapping[str, object], Lineage]] = {}

    def entries(
        self, session_id: str, versions: Sequence[SummaryVersion]
    ) -> tuple[tuple[str, ...], int]:
        """Return ``version_json`` of each of ``versions``, reusing what is kept.

        Also returns the token to pass to ``written`` with them.

        Raises:
            ValueError: a version JSON cannot express.
        """
        made, token, _ = self.checked_entries(session_id, versions)
        return made, token

    def checked_entries(
        self, session_id: str, versions: Sequence[SummaryVersion]
    ) -> tuple[tuple[str, ...], int, bool]:
        """Return ``entries``' answer and whether every entry encodes to UTF-8.

        An entry made now, or kept unchecked, is checked (``encodes_to_utf8``); one
        kept as checked is not again: a commit checks only its new version's JSON.

        Raises:
            ValueError: a version JSON cannot express.
        """
        with self._lock:
            kept, _ = self._by_session.get(session_id, ({}, 0))
            token = self._forgets
        out = []
        utf8 = True
        for version in versions:
            known = kept.get(version.version)
            if known is not None and known[0] == version:
                entry, checked = known[1], known[2]
            else:
                entry, checked = version_json(version), False
            if utf8 and not checked:
                utf8 = encodes_to_utf8(entry)
            out.append(entry)
        return tuple(out), token, utf8

    def written(
        self,
        session_id: str,
        versions: Sequence[SummaryVersion],
        entries: Sequence[str],
        token: int,
        read: tuple[Mapping[str, object], Lineage] | None = None,
        *,
        utf8: bool = False,
    ) -> None:
        """Remember the entries ``session_id``'s lineage was just written with.

        ``token``: what ``entries`` returned with them; after a ``forget`` since,
        nothing is kept. ``read``: the record written and exactly what
        ``read_lineage`` gives for it, if known (else the next read decodes).
        ``utf8``: every entry is known to encode to UTF-8 (``checked_entries``); the
        entries are kept as checked then, else as unchecked.
        """
        kept = {v.version: (v, e, utf8) for v, e in zip(versions, entries, strict=True)}
        size = SESSION_CHARS + sum(
            len(v.summary) + len(e) + VERSION_CHARS for v, e, _ in kept.values()
        )
        text = getattr(read[0], "json_text", None) if read is not None else None
        if isinstance(text, str):
            size += len(text)
        with self._lock:
            if token != self._forgets:
                return
            _, before = self._by_session.pop(session_id, ({}, 0))
            self._read.pop(session_id, None)
            self._size -= before
            if size > self._max:
                return
            self._by_session[session_id] = (kept, size)
            if read is not None:
                self._read[session_id] = read
            self._size += size
            while self._size > self._max:
                dropped_id, (_, dropped) = self._by_session.popitem(last=False)
                self._read.pop(dropped_id, None)
                self._size -= dropped

    def stored(self, session_id: str, data: object) -> Lineage | None:
        """Return ``read_lineage(data)`` if ``data`` equals the record last written.

        None when it does not (another writer's, or none kept): decode it then.
        """
        with self._lock:
            read = self._read.get(session_id)
        if read is None or data is None or data != read[0]:
            return None
        return read[1]

    def forget(self, session_id: str) -> None:
        """Drop what is kept for ``session_id``."""
        with self._lock:
            self._forgets += 1
            _, before = self._by_session.pop(session_id, ({}, 0))
            self._read.pop(session_id, None)
            self._size -= before

    def forget_all(self) -> None:
        """Drop what is kept for every session."""
        with self._lock:
            self._forgets += 1
            self._by_session.clear()
            self._read.clear()
            self._size = 0

    @property
    def chars(self) -> int:
        """How many characters are kept now."""
        with self._lock:
            return self._size


@attrs.frozen
class PendingVersion:
    """A lineage with one more version, as a commit attaches it."""

    attach: AttachedRecord
    lineage: Lineage
    entries: tuple[str, ...] = ()
    """Each version's JSON, for ``VersionEntries.written`` (none: not encoded)."""
    token: int = 0
    utf8: bool = False
    """Whether every entry encodes to UTF-8 (``VersionEntries.entries``)."""
    reads_back: bool = False
    """Whether ``read_lineage`` of the record written gives ``lineage`` exactly."""


@attrs.define
class LineageWriter:
    """Appends the versions one compression writes to the session's lineage."""

    store: CompressionStore
    session_id: str
    kept: int
    new_generation: Callable[[], str]
    known: VersionEntries = attrs.field(factory=VersionEntries)
    _lineage: Lineage | None = None
    _stopped: bool = False
    _read_exactly: bool = False

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
        entries: tuple[str, ...] = ()
        token = 0
        utf8 = False
        record: Mapping[str, object]
        try:
            entries, token, utf8 = self.known.checked_entries(self.session_id, versions)
        except ValueError:  # not JSON: the store says so, as of any record
            record = lineage_mapping(versions, ranges, generation)
        else:
            record = encoded_lineage(
                versions, ranges, generation, entries, entries_utf8=utf8
            )
        return PendingVersion(
            AttachedRecord(VERSIONS_NAMESPACE, record, lineage.generation),
            Lineage(versions, ranges, generation),
            entries,
            token,
            utf8,
            # what was read is read back as it was; the new version is checked
            reads_back=self._read_exactly and reads_back(version),
        )

    def landed(self, pending: PendingVersion, *, written: bool) -> None:
        """Take note of whether the commit wrote ``pending`` (else write no more)."""
        if written:
            self._lineage = pending.lineage
            self._read_exactly = pending.reads_back
            if pending.entries:
                self.known.written(
                    self.session_id,
                    pending.lineage.versions,
                    pending.entries,
                    pending.token,
                    (pending.attach.record, pending.lineage)
                    if pending.reads_back
                    else None,
                    utf8=pending.utf8,
                )
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
            data = self.store.get_metadata(VERSIONS_NAMESPACE, self.session_id)
        except MalformedRecord:
            self.store.delete_metadata(VERSIONS_NAMESPACE, self.session_id)
            stored = Lineage()
        else:
            kept = self.known.stored(self.session_id, data)
            stored = read_lineage(data) if kept is None else kept
        self._read_exactly = True
        # A session without a summary starts a new lineage: what is stored is stale.
        return Lineage(generation=stored.generation) if fresh else stored
