"""What a store, a summarizer and an archive can do, decided by one rule.

Every optional capability is a Protocol of ``ports``. An object has it when it has
every member the Protocol declares, its base Protocols' included: each method
callable, each attribute present. The names come from the Protocol itself and are
looked up on the object (``getattr``), so a delegating wrapper (``__getattr__``)
has what it delegates to, on every Python; ``isinstance`` against a
runtime-checkable Protocol looks members up statically from Python 3.12 and would
miss them. The engine decides once, when it is wired; its parts read the decision.
"""

from __future__ import annotations

import attrs

from .ports import (
    BatchSavingStore,
    ForgettingArchive,
    GenerationReadingStore,
    IndexPolicyStore,
    LabelledSummarizer,
    LocallyCountingStore,
    MetadataPages,
    ModelNamingSummarizer,
    NativeSummarizer,
    SearchableStore,
    SpanningStore,
    SpanRecordStore,
    StartingSummarizer,
    StoreArchive,
    StreamingSummarizer,
    UsageReportingSummarizer,
    WindowReadingStore,
)

_ABSENT = object()


def protocol_members(protocol: type) -> tuple[tuple[str, bool], ...]:
    """Return the (name, is_method) members ``protocol`` declares, bases' first.

    Methods are the functions its classes define, attributes the names they
    annotate; private and dunder names are not members.
    """
    found: dict[str, bool] = {}
    for cls in reversed(protocol.__mro__):
        if not getattr(cls, "_is_protocol", False):
            continue
        namespace = vars(cls)
        for name in namespace.get("__annotations__", {}):
            if not name.startswith("_"):
                found.setdefault(name, False)
        for name, value in namespace.items():
            if not name.startswith("_") and callable(value):
                found[name] = True
    return tuple(found.items())


def missing_members(obj: object, protocol: type) -> list[str]:
    """Return the members of ``protocol`` that ``obj`` lacks, in declaration order."""
    missing = []
    for name, is_method in protocol_members(protocol):
        value = getattr(obj, name, _ABSENT)
        if value is _ABSENT or (is_method and not callable(value)):
            missing.append(name)
    return missing


def has_capability(obj: object, protocol: type) -> bool:
    """Tell whether ``obj`` has every member of ``protocol`` (see the module)."""
    return not missing_members(obj, protocol)


@attrs.frozen
class StoreCapabilities:
    """The optional capabilities of a store, decided once (``store_capabilities``)."""

    reads_window: bool = False
    """``WindowReadingStore``: a compression's inputs in one round trip."""
    pages_metadata: bool = False
    """``MetadataPages``: a namespace is read page by page."""
    searchable: bool = False
    """``SearchableStore``: the history can be searched and read back."""
    counts_locally: bool = False
    """``LocallyCountingStore`` saying true: counts run on the host's thread."""
    spans: bool = False
    """``SpanningStore``: a ``Conversation`` reads no history it already holds."""
    reads_span_record: bool = False
    """``SpanRecordStore``: a ``Conversation`` reads the span and the record at once."""
    saves_batches: bool = False
    """``BatchSavingStore``: a batch of messages is saved at once, all or nothing."""
    sets_recall_index: bool = False
    """``IndexPolicyStore``: the engine's ``recall_index`` is applied to the store."""
    reads_generation: bool = False
    """``GenerationReadingStore``: an unchanged record is not copied out again."""


def store_capabilities(store: object) -> StoreCapabilities:
    """Return what ``store`` can do beyond ``CompressionStore``."""
    return StoreCapabilities(
        reads_window=has_capability(store, WindowReadingStore),
        pages_metadata=has_capability(store, MetadataPages),
        searchable=has_capability(store, SearchableStore),
        counts_locally=has_capability(store, LocallyCountingStore)
        and getattr(store, "counts_locally") is True,  # noqa: B009 - declared above
        spans=has_capability(store, SpanningStore),
        reads_span_record=has_capability(store, SpanRecordStore),
        saves_batches=has_capability(store, BatchSavingStore),
        sets_recall_index=has_capability(store, IndexPolicyStore),
        reads_generation=has_capability(store, GenerationReadingStore),
    )


@attrs.frozen
class ArchiveCapabilities:
    """What an engine's archive can do, decided once (``archive_capabilities``)."""

    forgets: bool = False
    """``ForgettingArchive``: ``forget`` erases the session's archive messages too."""
    shares_store: bool = False
    """``StoreArchive`` of the engine's own store: separators commit with it."""


def archive_capabilities(archive: object, store: object) -> ArchiveCapabilities:
    """Return what ``archive`` (None: no archive) can do next to ``store``."""
    if archive is None:
        return ArchiveCapabilities()
    shares = has_capability(archive, StoreArchive) and (
        getattr(archive, "store") is store  # noqa: B009 - declared above
    )
    return ArchiveCapabilities(
        forgets=has_capability(archive, ForgettingArchive), shares_store=shares
    )


@attrs.frozen
class SummarizerCapabilities:
    """What a summarizer can do, decided once (``summarizer_capabilities``)."""

    streams: bool = False
    """``StreamingSummarizer``."""
    reports_usage: bool = False
    """``UsageReportingSummarizer``."""
    label: str | None = None
    """A ``LabelledSummarizer``'s label (a summary's origin), else None."""
    model: str | None = None
    """A ``ModelNamingSummarizer``'s default model, else None."""
    compacts: bool = False
    """``NativeSummarizer``: folds with its provider's own compaction."""
    starts: bool = False
    """``StartingSummarizer``: says how long it spent starting (a worker process)."""


def _declared_text(obj: object, protocol: type, name: str) -> str | None:
    """Return ``obj``'s attribute ``name``, declared by ``protocol``, if a str."""
    value: object = getattr(obj, name) if has_capability(obj, protocol) else None
    return value if isinstance(value, str) else None


def summarizer_capabilities(llm: object) -> SummarizerCapabilities:
    """Return what ``llm`` can do beyond ``Summarizer``."""
    return SummarizerCapabilities(
        streams=has_capability(llm, StreamingSummarizer),
        reports_usage=has_capability(llm, UsageReportingSummarizer),
        label=_declared_text(llm, LabelledSummarizer, "label"),
        model=_declared_text(llm, ModelNamingSummarizer, "model"),
        compacts=has_capability(llm, NativeSummarizer),
        starts=has_capability(llm, StartingSummarizer),
    )
