"""The ports: what the engine needs from the outside world, in domain types.

Adapters satisfy these structurally; none inherits from them.

Why about 830 lines: the ports are one contract. Every capability the engine uses is a
Protocol here, checked once when the engine is wired, and each carries the rules its
implementers must keep (the commit's, on ``CommitRequest``), so a store's author reads
one file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Literal, NoReturn, Protocol, runtime_checkable

import attrs

from .config import RecallIndex
from .model import Message
from .native import NativeArtifact, NativeRequest
from .usage import TokenUsage


@runtime_checkable
class MemoryStore(Protocol):
    """The host's chat history and metadata, as the seed's memory service offers it."""

    def save_message(self, session_id: str, message: Message) -> Message:
        """Store ``message`` and return it with its assigned ``id``."""
        ...

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        """Return the active messages, oldest first; only the most recent ``limit``."""
        ...

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        """Return active and archived messages, oldest first; the newest ``limit``."""
        ...

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        """Archive all but the newest ``keep_recent`` active messages; count them.

        The host's instructions (``is_host_instruction``) are never archived: they
        stay active, in their id order, and are not counted.
        """
        ...

    def save_metadata(
        self, namespace: str, key: str, data: Mapping[str, object]
    ) -> None:
        """Store a JSON-compatible mapping under (namespace, key), replacing any."""
        ...

    def get_metadata(self, namespace: str, key: str) -> dict[str, object] | None:
        """Return the mapping under (namespace, key), or None."""
        ...

    def list_metadata(self, namespace: str) -> list[str]:
        """Return the keys of a namespace, sorted."""
        ...

    def delete_metadata(self, namespace: str, key: str) -> bool:
        """Delete (namespace, key); return whether it existed."""
        ...

    def clear_session(self, session_id: str) -> None:
        """Delete a session's messages, active and archived."""
        ...

    def clear_all(self) -> None:
        """Delete every session's messages and all metadata."""
        ...


FenceReason = Literal["generation", "archive", "lease"]
"""Why a fenced commit applied nothing: the stored record's generation changed (a
clear, a forget or another writer), the messages to archive are no longer exactly the
active ones the compression read, or the compression lease was lost."""


class _Frozen(dict[str, object]):
    """A mapping inside an ``EncodedRecord``: it refuses changes as the record does."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type[dict[str, object]], tuple[dict[str, object]]]:
        return dict, (dict(self),)  # a copy is a plain dict (its values copied too)

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            "an EncodedRecord cannot be changed: decode its json_text, or deep-copy it"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse


class _FrozenList(list[object]):
    """An array inside an ``EncodedRecord``: equal to the list, but unchangeable."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type[list[object]], tuple[list[object]]]:
        return list, (list(self),)  # a copy is a plain list (its values copied too)

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            "an EncodedRecord cannot be changed: decode its json_text, or deep-copy it"
        )

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""JSON's scalar types, exactly: nothing in them to freeze, no ABC check needed."""


def _frozen(value: object) -> object:
    """Return ``value`` (decoded JSON) with its mappings and lists frozen.

    A value of an exact scalar type is kept before any call or ABC check: most are.
    """
    scalars = _SCALARS
    kind = type(value)
    if kind in scalars:
        return value
    if (
        (kind is list or kind is tuple)
        and isinstance(value, (list, tuple))  # (for the type checker)
        and scalars.issuperset(map(type, value))
    ):
        return _FrozenList(value)  # (a lineage's ranges: thousands, no ABC check)
    if isinstance(value, Mapping):
        return _Frozen(
            {k: v if type(v) in scalars else _frozen(v) for k, v in value.items()}
        )
    if isinstance(value, (list, tuple)):
        return _FrozenList(v if type(v) in scalars else _frozen(v) for v in value)
    return value


class EncodedRecord(_Frozen):
    """A JSON-compatible record that carries its own JSON text, ``json_text``.

    ``json_text`` is what ``json.dumps(record, ensure_ascii=False, allow_nan=False)``
    gives, made by whoever built the record (the lineage reuses the JSON of the
    versions it wrote before), so a store may keep it instead of encoding the record
    again. To a store that does not know it, it is a mapping like any other, equal
    to ``json.loads(json_text)``. It cannot be changed, nor can the mappings and
    lists in it, since its JSON would no longer say what it holds; ``copy.copy``,
    ``copy.deepcopy`` and pickle give plain dicts and lists, free to edit.

    ``utf8_safe``: its maker checked that ``json_text`` encodes to UTF-8 (holds no
    lone surrogate), so a store need not scan it again. The lineage checks each
    version's JSON once, when it is made, not the whole text at every commit.
    """

    __slots__ = ("json_text", "utf8_safe")

    def __init__(
        self, record: Mapping[str, object], json_text: str, *, utf8_safe: bool = False
    ) -> None:
        scalars = _SCALARS
        super().__init__(
            {k: v if type(v) in scalars else _frozen(v) for k, v in record.items()}
        )
        self.json_text = json_text
        self.utf8_safe = utf8_safe

    def __reduce__(self) -> tuple[type[dict[str, object]], tuple[dict[str, object]]]:
        return dict, (json.loads(self.json_text),)


@attrs.frozen
class AttachedRecord:
    """A second record to write with a compression's commit, fenced on its own.

    ``record`` replaces the one stored under (``namespace``, session id) only if that
    one carries ``expect_generation`` (the same rule as the commit's own record). It
    may be an ``EncodedRecord``: its JSON is made already.
    """

    namespace: str
    record: Mapping[str, object]
    expect_generation: str | None


@attrs.frozen(kw_only=True)
class CommitRequest:
    """One fenced compression commit, as ``CompressionStore.commit`` applies it.

    In one transaction, all or nothing:

    1. with ``lease``, the session's lease must still carry that token, unexpired;
    2. the stored record under (``namespace``, ``session_id``) must carry
       ``expect_generation`` in its ``"generation"`` field (None: no record; ``""``:
       a record without a text generation);
    3. with ``through_id``, exactly ``expect_archived`` active messages with
       ``id <= through_id`` are archived (any other number applies nothing); the
       host's instructions among them (``is_host_instruction``) are neither counted
       nor archived: they stay active;
    4. ``record`` (a JSON-compatible mapping carrying its new ``"generation"``)
       replaces the stored one;
    5. ``separator``, given the number archived, returns the separator message
       written to the store's own archive; only stores with an archive accept it;
    6. ``attach`` replaces its stored record when that one carries its
       ``expect_generation``; otherwise (or when the stored one cannot be decoded)
       the attached record is left as it is, and the commit still applies:
       ``CommitResult.attached`` says which;
    7. with ``release_lease``, the lease ``lease`` is dropped
       (``CommitResult.released``).

    A failed check (1 to 3) returns ``CommitResult(fenced=...)`` and changes
    nothing: a fenced commit writes no attached record and leaves the lease as it is.

    Raises:
        ValueError: ``expect_archived`` without ``through_id``, ``release_lease``
            without ``lease``, or ``attach`` in the commit's own namespace.
        TypeError: ``attach`` is no ``AttachedRecord``.
    """

    session_id: str
    namespace: str
    record: Mapping[str, object] = attrs.field(hash=False)
    expect_generation: str | None
    through_id: int | None = None
    expect_archived: int = 0
    lease: str | None = None
    separator: Callable[[int], Message | None] | None = None
    attach: AttachedRecord | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(
            attrs.validators.instance_of(AttachedRecord)
        ),
    )
    release_lease: bool = False

    def __attrs_post_init__(self) -> None:
        if self.through_id is None and self.expect_archived:
            raise ValueError("expect_archived needs a through_id")
        if self.release_lease and self.lease is None:
            raise ValueError("release_lease needs the lease to release")
        if self.attach is not None and self.attach.namespace == self.namespace:
            raise ValueError("the attached record needs a namespace of its own")


@attrs.frozen
class CommitResult:
    """What ``commit`` did: ``archived`` messages, or nothing, ``fenced``."""

    archived: int = 0
    fenced: FenceReason | None = None
    attached: bool = False
    """The commit wrote its ``attach`` record with it."""
    released: bool = False
    """The commit dropped its lease (``release_lease``); else the lease is held."""

    @property
    def committed(self) -> bool:
        """Tell whether the commit was applied."""
        return self.fenced is None


@runtime_checkable
class CompressionStore(MemoryStore, Protocol):
    """A store the engine can compress safely: fenced, by id, atomic with the summary.

    Every store this library ships implements it; ``tests/contract`` is its suite.
    """

    def count_history(self, session_id: str) -> int:
        """Return the number of active messages."""
        ...

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        """Return the oldest ``limit`` active messages with ``id > after_id``."""
        ...

    def get_archived(
        self, session_id: str, *, after_id: int | None, through_id: int, limit: int
    ) -> list[Message]:
        """Return archived messages with ``after_id < id <= through_id``, oldest first.

        At most ``limit`` of them; ``after_id=None`` starts at the first.
        """
        ...

    def commit(self, request: CommitRequest) -> CommitResult:
        """Apply ``request``, fenced, all or nothing (see ``CommitRequest``)."""
        ...

    def forget_session(self, session_id: str, *, namespaces: Sequence[str]) -> int:
        """Erase a session in one transaction; return how many messages it deleted.

        Deletes its messages (active and archived), its archive rows, its lease, and
        the metadata key ``session_id`` in each of ``namespaces``.
        """
        ...

    def quarantine_metadata(self, namespace: str, key: str, to_namespace: str) -> bool:
        """Move the raw row (namespace, key) to (to_namespace, key), replacing any.

        Works on rows ``get_metadata`` cannot decode; returns whether a row moved.
        """
        ...

    def acquire_lease(self, session_id: str, *, owner: str, ttl_s: float) -> str | None:
        """Take the session's compression lease for ``ttl_s``; return its token or None.

        None means another owner holds an unexpired lease. Leases live in the store,
        so they bind every process that shares it and outlive a server restart.
        The shipped stores refuse ``ttl_s`` over a day (``ValueError``) and take a
        stored lease expiring further ahead, or at no finite time, as expired.
        """
        ...

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        """Extend the lease to ``ttl_s`` from now; False if it is no longer ours."""
        ...

    def release_lease(self, session_id: str, token: str) -> None:
        """Drop the lease if it still carries ``token``."""
        ...

    def lease_owner(self, session_id: str) -> str | None:
        """Return the owner of the session's unexpired lease, or None."""
        ...

    def break_lease(self, session_id: str, owner: str) -> bool:
        """Drop the session's lease if ``owner`` holds it (a holder known to be dead).

        Breaking a live holder's lease is safe, only wasteful: its commit is fenced.
        """
        ...


CompactionStore = CompressionStore
"""The former name of ``CompressionStore`` (deprecated)."""
AttachingStore = CompressionStore
"""Deprecated: every ``CompressionStore`` commits an attached record and the lease's
release with ``commit`` (``commit_compaction_with`` was this protocol's method)."""


@runtime_checkable
class CompactingStore(Protocol):
    """A store written before ``commit``: it has the deprecated ``commit_compaction``.

    Its ``commit_compaction(session_id, **fields)`` takes the fields of a
    ``CommitRequest`` except ``attach`` and ``release_lease``. The engine still runs on
    such a store (with a ``DeprecationWarning`` when it is wired): it writes the
    attached record in a second fenced ``commit_compaction`` right after the first,
    and releases the lease in a call of its own.
    """

    def commit_compaction(self, session_id: str, **fields: object) -> CommitResult:
        """Apply ``CommitRequest(session_id=session_id, **fields)``, fenced."""
        ...


@runtime_checkable
class LocallyCountingStore(Protocol):
    """A store that says whether ``count_history`` is a cheap local read.

    ``counts_locally`` true (``InMemoryStore``): the engine counts a turn below the
    threshold on the host's thread; false or absent: on its own gate threads.
    """

    counts_locally: bool


@runtime_checkable
class PoppingStore(MemoryStore, Protocol):
    """A store that can also take back its newest active message.

    An optional capability (the Agents SDK session's ``pop_item`` needs it); every
    store this library ships has it.
    """

    def pop_message(self, session_id: str) -> Message | None:
        """Delete the newest active message and return it; None when none is active.

        Archived messages are never touched, and nothing else changes: a compression
        that read the popped message is fenced (``"archive"``) when it commits. A
        deleted row that is no message (a foreign writer's) raises
        ``MalformedRecord`` saying it was deleted.
        """
        ...


@attrs.frozen
class StoredHit:
    """A stored message a history search or read found, as a store returns it.

    ``score`` is the BM25 score of a search (0.0 for a read).
    """

    message: Message
    archived: bool
    score: float = 0.0


@runtime_checkable
class SearchableStore(Protocol):
    """A store that indexes every message it holds and can search and read them back.

    The index covers active and archived messages. A search finds a message
    exactly while it is stored: the store indexes it when it is saved, or (an
    ``IndexPolicyStore`` under ``lazy``) when its session is next searched, and a
    delete (``pop_message``, ``clear_session``, ``forget_session``, ``clear_all``)
    unindexes it in its own transaction. A store returns only ``session_id``'s
    messages.
    ``memory_summary.testing.SearchContract`` is its suite.
    """

    def search_messages(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        archived_only: bool = False,
    ) -> list[StoredHit]:
        """Return up to ``limit`` messages holding any of ``terms``, best first.

        ``terms`` come from ``domain.recall.query_terms`` (letters and digits only);
        ranked by BM25 (``domain.ranking``), ties newest first.
        """
        ...

    def read_messages(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[StoredHit]:
        """Return the message ``around_id`` with ``before`` and ``after`` neighbours.

        In id order, active and archived alike; ``[]`` when the session has no
        message ``around_id``.
        """
        ...

    def read_message_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int
    ) -> list[StoredHit]:
        """Return the session's messages with ``first_id <= id <= last_id``, in order.

        At most ``limit``, the oldest first.
        """
        ...


@runtime_checkable
class IndexPolicyStore(SearchableStore, Protocol):
    """A searchable store that indexes by the policy the engine gives it.

    ``lazy``: a save does no index work; a search first indexes the session's
    stored messages not indexed yet (active and archived), then searches.
    ``eager``: every message is indexed as it is stored. ``off``: no index work;
    ``search_messages`` raises ``RecallUnsupported``. Whatever the policy, a search
    finds exactly what eager's would, and deletes keep the index right. The engine
    calls ``set_recall_index`` once, when it is wired, with
    ``SummaryConfig.recall_index``.
    """

    recall_index: RecallIndex

    def set_recall_index(self, policy: RecallIndex) -> None:
        """Index by ``policy`` from now on (``ConfigError`` for an unknown one)."""
        ...


@runtime_checkable
class WindowReadingStore(MemoryStore, Protocol):
    """A store that reads a compression's inputs in one round trip.

    An optional capability (every store this library ships has it); for any other
    store ``actors.records.read_window`` makes the two calls it replaces.
    """

    def read_window(
        self, session_id: str, *, limit: int, namespace: str
    ) -> tuple[list[Message], dict[str, object] | None]:
        """Return the newest ``limit`` active messages and the stored record.

        What ``get_history`` and ``get_metadata`` return, read together (one
        statement or one lock).

        Raises:
            MalformedRecord: as ``get_metadata`` does.
        """
        ...


@runtime_checkable
class GenerationReadingStore(MemoryStore, Protocol):
    """A store that tells a record it wrote is still stored, without copying it out.

    An optional capability (the SQL stores): the summary record is read before every
    model call and is mostly the one read before, which the engine already holds
    decoded under its ``generation``.
    """

    def get_metadata_unless(
        self, namespace: str, key: str, generation: str
    ) -> tuple[bool, dict[str, object] | None]:
        """Return ``(True, None)`` when the key's record is the one of ``generation``.

        Only when the store knows the very text it last wrote at the key, whose
        ``"generation"`` is ``generation``, and the stored row holds that text,
        compared whole in the read: a writer that changed any of it (another
        process, a raw statement) is read in full. Otherwise ``(False, data)``:
        what ``get_metadata`` returns.

        Raises:
            MalformedRecord: as ``get_metadata`` does.
        """
        ...


@attrs.frozen
class ActiveSpan:
    """What tells a session's active messages apart cheaply, without reading them.

    Message ids only grow, so a set of active messages that changed (a save, a pop, a
    compression's archive, a clear, another process's write) changes its span: the
    engine keeps a session's prepared request and reads the history again only when
    the span is not the one its own saves lead to (``Conversation``).

    Attributes:
        count: how many messages are active.
        first_id: the oldest active id (None when none is).
        last_id: the newest active id (None when none is).
        id_sum: the sum of the active ids (0 when none is), or None from a store
            whose writes are atomic scripts, whose ids never land out of order (a
            sum only tells apart a late insert that meets an archive of as many).
            Without it, the count and the ends miss a change the engine's own
            saves then cover (another writer pops the newest message and saves
            one, a ``Conversation`` saves next): the handle reads the few messages
            it saved since the span was last seen to tell.
    """

    count: int
    first_id: int | None
    last_id: int | None
    id_sum: int | None

    def matches(self, expected: ActiveSpan) -> bool:
        """Tell whether this span read from the store is the ``expected`` one.

        >>> ActiveSpan(2, 4, 5, None).matches(ActiveSpan(2, 4, 5, 9))
        True
        """
        return (
            self.count == expected.count
            and self.first_id == expected.first_id
            and self.last_id == expected.last_id
            and (
                self.id_sum is None
                or expected.id_sum is None
                or self.id_sum == expected.id_sum
            )
        )

    def after_saving(self, ids: Sequence[int]) -> ActiveSpan:
        """Return the span once messages with ``ids`` (all newer) are saved.

        >>> ActiveSpan(2, 4, 5, 9).after_saving([7, 8])
        ActiveSpan(count=4, first_id=4, last_id=8, id_sum=24)
        """
        if not ids:
            return self
        return ActiveSpan(
            self.count + len(ids),
            ids[0] if self.first_id is None else self.first_id,
            ids[-1],
            None if self.id_sum is None else self.id_sum + sum(ids),
        )


NO_SPAN = ActiveSpan(0, None, None, 0)
"""The span of a session with no active message."""


@runtime_checkable
class SpanningStore(MemoryStore, Protocol):
    """A store that tells a session's ``ActiveSpan`` in one cheap read.

    An optional capability (every store this library ships has it): without it a
    ``Conversation`` reads the session's active history on every ``prepare``.
    """

    def active_span(self, session_id: str) -> ActiveSpan:
        """Return the count, first and last id and id sum of the active messages.

        The messages ``get_history`` returns, read in one statement or one lock.
        """
        ...


@runtime_checkable
class SpanRecordStore(SpanningStore, Protocol):
    """A store that reads a session's ``ActiveSpan`` and a record together.

    An optional capability (every store this library ships has it): a
    ``Conversation``'s turn then asks the store once whether its transcript is
    still current and what the summary record is, instead of twice. Without it the
    two reads are made one after the other.
    """

    def span_and_metadata(
        self, session_id: str, namespace: str
    ) -> tuple[ActiveSpan, dict[str, object] | None]:
        """Return ``active_span`` and ``get_metadata(namespace, session_id)``.

        Read together (one statement or one lock): both as they were at one moment,
        so a compression another process commits is seen in both or in neither.

        Raises:
            MalformedRecord: as ``get_metadata`` does (the span is not returned).
        """
        ...


@runtime_checkable
class BatchSavingStore(MemoryStore, Protocol):
    """A store that saves several messages of a session at once, all or nothing.

    An optional capability (every store this library ships has it): integrations
    that store a batch of items (the Agents SDK's ``add_items``) need it to be
    atomic, and a store without it gets each message checked first, then saved one
    by one (``memory_summary.batch.save_batch``).
    """

    def save_messages(
        self, session_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        """Store ``messages`` in order; return them with their assigned ids.

        All or nothing: a message the store refuses raises ``StoreError`` and none
        of the batch is saved. No other message of the session lands between them,
        even when several batches are saved at once.
        """
        ...


@runtime_checkable
class Summarizer(Protocol):
    """An LLM that writes summaries."""

    def context_length(self, model: str | None = None) -> int | None:
        """Return the model's context window in tokens, or None when unknown."""
        ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> str:
        """Return the model's answer to ``messages``."""
        ...


@runtime_checkable
class StreamingSummarizer(Summarizer, Protocol):
    """A summarizer that can also stream its answer."""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> Iterator[str]:
        """Yield the answer in pieces; raise if the stream breaks."""
        ...


@runtime_checkable
class LabelledSummarizer(Summarizer, Protocol):
    """A summarizer that is not an LLM model and names itself (``"extractive"``).

    A summary's origin is reported as ``label``; for others, the model's name.
    """

    label: str


@runtime_checkable
class StartingSummarizer(Summarizer, Protocol):
    """A summarizer that starts something once before it folds (a worker process).

    ``startup_s`` is the wall-clock seconds the calling thread has spent starting it,
    summed since it was made (per thread, so a call is charged only the start it ran);
    the engine leaves what a call spent on it out of the call's time. A value that is
    not a finite number of seconds is read as 0.
    """

    startup_s: float


@runtime_checkable
class ModelNamingSummarizer(Summarizer, Protocol):
    """A summarizer that names its default model (for its tokenizer and reports)."""

    model: str | None


@attrs.frozen
class SummaryReply:
    """A summarizer's answer and, when its provider reported it, the call's usage.

    ``native``: the provider's own compaction block the text came from (a
    ``NativeSummarizer``'s), kept with the record.
    """

    text: str
    usage: TokenUsage | None = None
    native: NativeArtifact | None = None


@runtime_checkable
class UsageReportingSummarizer(Summarizer, Protocol):
    """A summarizer whose answers carry the tokens its provider billed.

    Its streams (``stream()``) may also expose ``usage: TokenUsage | None``, known once
    the stream is read to its end. Without either, the engine counts the tokens.
    """

    def complete_with_usage(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float,
    ) -> SummaryReply:
        """Return the model's answer to ``messages`` with the provider's usage."""
        ...


@runtime_checkable
class NativeSummarizer(Summarizer, Protocol):
    """A summarizer that folds a range with its provider's own compaction.

    ``compact`` sends the range itself (``NativeRequest``) and answers with the
    block's readable text and the block (``SummaryReply.native``). It never fails
    where the text path would not: a failed or refused compaction falls back to
    ``complete`` on ``request.prompt`` (a reply without ``native``).
    """

    def compact(
        self,
        request: NativeRequest,
        *,
        model: str | None = None,
        max_tokens: int,
        timeout_s: float | None = None,
    ) -> SummaryReply:
        """Return the summary of ``request.history`` and, natively made, its block."""
        ...


@runtime_checkable
class MetadataPages(Protocol):
    """A store that can read a metadata namespace page by page (every shipped one)."""

    def metadata_page(
        self, namespace: str, *, after_key: str | None = None, limit: int = 500
    ) -> list[tuple[str, dict[str, object] | None]]:
        """Return up to ``limit`` (key, data) pairs with key > ``after_key``.

        Keys in code-point order; ``data`` is None for a row that is not a JSON
        object (a foreign writer or corruption): a scan never stops at one.
        """
        ...


@runtime_checkable
class SessionCountingStore(Protocol):
    """A store that lists its sessions with their counts (every shipped one).

    The command line's ``sessions`` and ``stats`` read a store through it.
    """

    def session_counts(
        self, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, int, int]]:
        """Return up to ``limit`` (session id, active, archived) with id > ``after``.

        Sessions that hold messages, in code-point order of their ids: page through
        them by passing the last id seen as ``after``.
        """
        ...


@runtime_checkable
class Archive(Protocol):
    """The host's message archive (the seed's optional ``message-archive`` service)."""

    def save_message(self, session_id: str, message: Message) -> object:
        """Store one archive message (the compression separator)."""
        ...


@runtime_checkable
class ForgettingArchive(Archive, Protocol):
    """An archive that can erase a session's messages (``SummaryEngine.forget``)."""

    def forget_session(self, session_id: str) -> int:
        """Delete the session's archive messages; return how many."""
        ...


@runtime_checkable
class StoreArchive(Archive, Protocol):
    """An archive kept in a store's own database (``SqliteArchive``, ...).

    When ``store`` is the engine's store, a compression's separator commits in the
    compression's last transaction, and ``forget_session`` of the store erases it.
    """

    store: object
