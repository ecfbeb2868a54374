"""``SummaryEngine``: the public face of the library and its composition root.

This is the one place that builds concrete objects: the store's collaborators, the
summarizer (the offline one by default), the thread runtime and the compression job.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import socket
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Literal

from memory_summary.actors.compression import CompressionJob
from memory_summary.actors.context import ContextPolicy
from memory_summary.actors.events import EventBus
from memory_summary.actors.messages import Compress, TurnEnded, UsageReported
from memory_summary.actors.records import RecordReader
from memory_summary.actors.runtime import ThreadRuntime
from memory_summary.actors.summary_model import (
    BreakerBox,
    ModelResolver,
    ResolvedModel,
)
from memory_summary.actors.workers import WorkerPool
from memory_summary.adapters import ExtractiveSummarizer, counter_factory
from memory_summary.domain import (
    NAMESPACE,
    NO_USAGE,
    QUARANTINE_NAMESPACE,
    Archive,
    ClearResult,
    CompactionStore,
    Event,
    Message,
    MessageError,
    OpenAIMessage,
    Outcome,
    Placement,
    Repair,
    StoreError,
    Summarizer,
    SummarizerUsage,
    SummaryConfig,
    SummaryRecord,
    assemble_messages,
    injection_budget_tokens,
    injection_text,
    messages_from_openai,
    messages_to_openai,
    repair_pairs,
    summary_message,
    total_usage,
)
from memory_summary.domain.injection import without_covered
from memory_summary.domain.lineage import VERSIONS_NAMESPACE
from memory_summary.domain.recall import HistoryEntry, SearchHit, SummaryVersion

from .history import HistoryAccess

log = logging.getLogger(__name__)

Scope = Literal["session", "all"]
_IGNORED_OUTCOMES = frozenset({"aborted", "error"})
_REASONS = ("manual", "auto", "overflow")
_PROMPT_CACHE_SIZE = 50_000
_REQUIRED = (
    "count_history",
    "get_oldest_history",
    "get_archived",
    "commit_compaction",
    "forget_session",
    "quarantine_metadata",
    "acquire_lease",
    "renew_lease",
    "release_lease",
    "lease_owner",
    "break_lease",
)


def _check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(
            f"session_id={session_id!r} is invalid; allowed: non-empty str"
        )
    if not session_id.isascii():
        try:
            session_id.encode("utf-8")
        except UnicodeEncodeError:
            raise MessageError(
                "session_id", "contains a lone surrogate; allowed: valid Unicode text"
            ) from None
    return session_id


def _check_model(model: object) -> str | None:
    if model is not None and (not isinstance(model, str) or not model):
        raise ValueError(f"model={model!r} is invalid; allowed: a model name or None")
    return model


def _utf8_bytes(text: str) -> int:
    """Count UTF-8 bytes: never fewer than tokens, a safe count before a tokenizer."""
    return len(text.encode("utf-8"))


def _pid_namespace() -> str:
    """Return this process's PID namespace ("" where it cannot be told: not Linux)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


_PID_NAMESPACE = _pid_namespace()


def _owner_id() -> str:
    """Return a lease owner: ``host:pid:pid-namespace:nonce``."""
    return (
        f"{socket.gethostname()}:{os.getpid()}:{_PID_NAMESPACE}:{uuid.uuid4().hex[:8]}"
    )


def _is_dead_owner(owner: str) -> bool:
    """Tell whether a lease owner is a process of this host that no longer runs.

    Owners are ``host:pid:pid-namespace:nonce``; only an owner of this host and PID
    namespace (containers sharing a host name have their own) is judged, and only
    where the namespace is known (Linux). A pid reused by another process reads as
    alive (the lease then simply expires); breaking a live lease is only wasteful,
    never unsafe: its holder's commits are fenced.
    """
    host, _, rest = owner.partition(":")
    pid_text, _, rest = rest.partition(":")
    namespace = rest.partition(":")[0]
    if (
        host != socket.gethostname()
        or not pid_text.isdigit()
        or not _PID_NAMESPACE
        or namespace != _PID_NAMESPACE
    ):
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but not ours to signal
        return False
    return False


_GENERATION_NONCE = uuid.uuid4().hex[:16]
_GENERATIONS = itertools.count(1)


def _new_generation() -> str:
    """Return a fresh generation: unique per process (nonce) and commit (counter)."""
    return f"{_GENERATION_NONCE}{next(_GENERATIONS):x}"


class SummaryEngine:
    """Keeps every session of a chat server inside its model's context window.

    After each turn (``turn_after``) and on each usage report (``token_usage``) the
    engine decides, off the caller's thread, whether the session needs compressing; if
    so its session actor folds the older messages into the summary and archives them.
    ``assemble`` (or ``build_prompt``) injects the summary before the next LLM call.

    Args:
        memory: the store that holds the history and the summaries; it must offer the
            ``CompactionStore`` methods (every store this library ships does).
        llm: the default summarizer; None uses the offline ``ExtractiveSummarizer``.
        config: the configuration; None uses the defaults.
        archive: an optional archive; it gets one separator message per compression.
        llms: summarizers by provider name, for ``summary_model_mode="custom"``.
        count_tokens_for: ``model -> count_tokens``; default: tiktoken, offline.

    Example:
        >>> from memory_summary import SummaryEngine, Message
        >>> from memory_summary.adapters import InMemoryStore
        >>> store = InMemoryStore()
        >>> with SummaryEngine(store) as engine:
        ...     for i in range(30):
        ...         _ = store.save_message("s1", Message("user", f"fact {i}."))
        ...     engine.turn_after("s1")
        ...     engine.wait_idle(timeout=10)
        ...     len(store.get_history("s1"))
        True
        20
    """

    def __init__(
        self,
        memory: CompactionStore,
        llm: Summarizer | None = None,
        *,
        config: SummaryConfig | None = None,
        archive: Archive | None = None,
        llms: Mapping[str, Summarizer] | None = None,
        count_tokens_for: Callable[[str | None], Callable[[str], int]] | None = None,
    ) -> None:
        missing = [n for n in _REQUIRED if not callable(getattr(memory, n, None))]
        if missing:
            raise TypeError(
                f"memory store {type(memory).__name__} lacks {', '.join(missing)}; the "
                "engine archives by message id, fenced and atomically with the "
                "summary, and needs a CompactionStore (InMemoryStore, SqliteStore or "
                "PostgresStore; memory_summary.testing checks your own)"
            )
        self.config = config or SummaryConfig()
        counter = count_tokens_for or counter_factory(
            margin=self.config.token_safety_margin
        )
        self._counter = counter
        self.memory = memory
        # The tokenizer loads on the first summary, on a worker thread, not here.
        self.llm = llm or ExtractiveSummarizer(lambda text: counter(None)(text))
        self.archive = archive
        self._counts_locally = bool(getattr(memory, "counts_locally", False))
        self._session_models: dict[str, str] = {}
        self._resolver = ModelResolver(self.config, self.llm, llms or {}, counter)
        self._records = RecordReader(memory)
        self._history = HistoryAccess(memory, self.config)
        self._prompts: dict[str, tuple[str, int, object, str]] = {}
        self._resolving: set[str | None] = set()
        self._resolving_lock = threading.Lock()
        events = EventBus()
        calls = WorkerPool(
            "memory-summary-llm", self.config.max_concurrent_summaries, grow=True
        )
        stopping = threading.Event()
        self._context = ContextPolicy(self.config, counter, self._session_models.get)
        job = CompressionJob(
            store=memory,
            config=self.config,
            emit=events.emit,
            calls=calls,
            is_cancelled=stopping.is_set,
            resolve=self._resolve,
            breakers=BreakerBox(self.config),
            records=self._records,
            owner=_owner_id(),
            new_generation=_new_generation,
            is_dead_owner=_is_dead_owner,
            counted_by_host=self._counts_locally,
            context=self._context,
            archive=archive,
        )
        self._core = ThreadRuntime(
            self.config, job.run, events=events, calls=calls, stopping=stopping
        )
        self._core.on_start(self._warm_up)

    def _resolve(self, session_id: str) -> ResolvedModel | str:
        return self._resolver.resolve(self._session_models.get(session_id))

    def _warm_up(self) -> None:
        """Resolve the default summary model (context length, tokenizer) off-thread."""
        self._resolve("")

    def start(self) -> SummaryEngine:
        """Load the tokenizer and start the engine's threads (a first send also starts).

        The default summarizer's tokenizer loads here, on the caller's thread, once:
        parsing a vocabulary holds the interpreter for a few hundred milliseconds,
        which would otherwise stall the first turns. The summary model's context
        length (possibly an HTTP call) resolves in the background; until it is known,
        ``build_prompt`` uses the documented fallback (a 512-token budget, counted in
        UTF-8 bytes, which never undercount). ``AsyncSummaryEngine`` runs this off the
        event loop.
        """
        if not self._core.closed:
            model = getattr(self.llm, "model", None)
            self._counter(model if isinstance(model, str) else None)
        self._core.start()
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Finish or cancel in-flight work within ``timeout`` seconds; stop all threads.

        Returns True when everything ended in time. Nothing is committed after stop()
        begins; later calls raise ``EngineClosed``. Every engine thread is a daemon, so
        a summarizer that never answers cannot keep the host process alive.
        """
        return self._core.stop(timeout)

    def __enter__(self) -> SummaryEngine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def turn_after(
        self, session_id: str, outcome: str = "replied", model: str | None = None
    ) -> None:
        """Report that a turn ended; compress in the background if the count says so.

        Turns whose ``outcome`` is ``"aborted"`` or ``"error"`` are ignored (seed 1).
        ``model`` is the model the turn used, for ``summary_model_mode="session"``.
        On a local store (in memory, SQLite) a turn below the threshold is answered on
        the caller's thread with one count; it never waits for a summarizer.

        Raises:
            EngineClosed: after ``stop()``.
        """
        self._core.check_open()
        _check_session_id(session_id)
        if outcome in _IGNORED_OUTCOMES:
            return
        if _check_model(model) is not None:
            self._session_models[session_id] = model  # type: ignore[assignment]
        if self._counts_locally and not self._context.measures_session(session_id):
            try:
                if self.memory.count_history(session_id) < self.config.threshold:
                    return
            except StoreError:  # the job will meet the failure and report it
                log.debug("session %s: count_history failed", session_id)
        self._core.send(session_id, TurnEnded())

    def token_usage(self, session_id: str, usage_ratio: float) -> None:
        """Report the context usage ratio of the session's current LLM call.

        Once the host reports a ratio for a session, it wins over the engine's own
        measure (``context_window``) for that session.
        At or above ``auto_compress_threshold`` (when it is > 0) the engine emits
        ``CompressRequested(reason="auto")`` and compresses in the background; the
        current turn keeps its context, the result serves the next one.

        Raises:
            EngineClosed: after ``stop()``.
        """
        self._core.check_open()
        _check_session_id(session_id)
        if (
            isinstance(usage_ratio, bool)
            or not isinstance(usage_ratio, (int, float))
            or not math.isfinite(usage_ratio)
            or usage_ratio < 0
        ):
            raise ValueError(
                f"usage_ratio={usage_ratio!r} is invalid; allowed: float >= 0"
            )
        self._context.host_reports(session_id)  # the host's ratio wins from now on
        threshold = self.config.auto_compress_threshold
        if threshold > 0 and usage_ratio >= threshold:
            self._core.send(session_id, UsageReported(float(usage_ratio)))

    def compress(self, session_id: str, reason: str = "manual") -> Future[Outcome]:
        """Compress now, ignoring the threshold; return a future of the ``Outcome``.

        A request that arrives while the session compresses runs right after it.
        ``reason="overflow"`` is for a host whose model call just failed on its
        context length: it folds everything but the newest messages that fit the
        token keep (``keep_recent_tokens``, else a share of ``context_window``, else
        the newest tool-call group alone), ignoring ``keep_recent``, and leaves
        recovering ranges archived during an outage to the next compression. It
        never blocks: wait on the future (with a timeout) before retrying the call.
        """
        _check_session_id(session_id)
        if reason not in _REASONS:
            raise ValueError(
                f"reason={reason!r} is invalid; allowed: 'manual' / 'auto' / 'overflow'"
            )
        reply: Future[Outcome] = Future()
        self._core.send(session_id, Compress(reason, reply))  # type: ignore[arg-type]
        return reply

    def resummarize(self, session_id: str) -> Future[Outcome]:
        """Fold ranges archived without a summary (during an outage) into it now.

        Every compression does this first, oldest range first, once the summarizer
        answers again; this asks for it without waiting for the next trigger. The
        outcome's ``recovered`` counts the messages folded back in.
        """
        _check_session_id(session_id)
        reply: Future[Outcome] = Future()
        self._core.send(session_id, Compress("recover", reply))
        return reply

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no compression runs or is queued; False if ``timeout`` ran out."""
        return self._core.wait_idle(timeout)

    def summary(self, session_id: str) -> SummaryRecord | None:
        """Return the session's stored summary record, or None.

        A record the engine cannot read (foreign or corrupt) reads as None, logged once;
        the next compression moves it aside. The original plugin's records
        (``{summary, coveredUpTo, messageCount}``) read as a previous summary.
        """
        _check_session_id(session_id)
        return self._records.read(session_id)

    def search_history(
        self,
        session_id: str,
        query: str,
        *,
        limit: int = 10,
        archived_only: bool = False,
    ) -> list[SearchHit]:
        """Search every stored message of the session, active and archived.

        ``query`` is untrusted text (from a user or a model): it is parsed into words
        (``domain.recall``: stemmed English, CJK bigrams, no operators), OR'ed and
        ranked by BM25, best first. Each hit carries the message (with its id, for
        ``read_history``), its score, whether it is archived, and the summary version
        that folded it (``summary_history``). Only this session's messages are found.

        Raises:
            QueryError: the query holds no word to search for, or is no text.
            ValueError: ``limit`` is not in 1..1000.
            RecallUnsupported: the store cannot search (no ``SearchableStore``).
        """
        _check_session_id(session_id)
        return self._history.search(
            session_id, query, limit=limit, archived_only=archived_only
        )

    def read_history(
        self, session_id: str, around_id: int, *, before: int = 3, after: int = 3
    ) -> list[HistoryEntry]:
        """Return message ``around_id`` and its neighbours, in order, archived or not.

        Raises:
            HistoryNotFound: the session has no message ``around_id``.
            ValueError: ``before`` or ``after`` is not in 0..1000.
            RecallUnsupported: the store cannot read its history.
        """
        _check_session_id(session_id)
        return self._history.read(session_id, around_id, before=before, after=after)

    def read_history_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int = 50
    ) -> list[HistoryEntry]:
        """Return the session's messages with ``first_id <= id <= last_id``, in order.

        At most ``limit`` (1..1000), from ``first_id`` on; say, the range a summary
        version folded (``summary_history``).

        Raises:
            HistoryNotFound: the session has no message in the range.
            RecallUnsupported: the store cannot read its history.
        """
        _check_session_id(session_id)
        return self._history.read_range(session_id, first_id, last_id, limit=limit)

    def summary_history(self, session_id: str) -> list[SummaryVersion]:
        """Return the session's summaries, oldest first, the current one last.

        Each names the message ids its compression folded and when it was written;
        up to ``summary_versions_kept`` earlier ones are kept. ``clear`` and
        ``forget`` erase them with the summary.
        """
        _check_session_id(session_id)
        return self._history.versions(session_id, self.summary(session_id))

    def usage(self, session_id: str | None = None) -> SummarizerUsage:
        """Return the summarizer's tokens and time for a session, or for all of them.

        Totals live in each session's summary record, so they survive restarts, are
        shared by every process on the store, and go with the record on ``clear`` or
        ``forget``. ``source`` tells provider-reported from counted figures.

        Example:
            >>> from memory_summary.adapters import InMemoryStore
            >>> SummaryEngine(InMemoryStore()).usage("alice").calls
            0
        """
        if session_id is None:
            return total_usage(self.usage_by_session().values())
        record = self.summary(session_id)
        return NO_USAGE if record is None else record.usage

    def usage_by_session(self) -> dict[str, SummarizerUsage]:
        """Return every session's summarizer usage, by session id."""
        return {sid: record.usage for sid, record in self._records.scan()}

    def build_prompt(self, session_id: str, model: str | None = None) -> str | None:
        """Return the system text to inject for the session, or None without a summary.

        The text is the locale's header plus the summary, cut to the token budget
        (summary model's context length x ``summary_token_ratio``, floor 512),
        counted in the encoding of the model it is sent to: ``model``, else the
        model the session's last ``turn_after`` named, else the summary model's. It
        is cached per session, summary and encoding, so a call that finds the same
        summary does no tokenizer work; it never does network I/O.
        """
        return self._injected(session_id, model)[0]

    def _injected(
        self, session_id: str, model: str | None
    ) -> tuple[str | None, int | None]:
        """Return ``build_prompt``'s text and the id its summary covers through."""
        self._core.check_open()
        _check_model(model)
        try:
            record = self.summary(session_id)
        except StoreError as exc:
            log.warning("session %s: summary unreadable, ignored: %s", session_id, exc)
            return None, None
        if record is None or not record.text:
            return None, None
        budget, count = self._injection_budget(session_id, model)
        cached = self._prompts.get(session_id)
        if (
            cached is not None
            and cached[1] == budget
            and cached[2] is count
            and cached[0] == record.text
        ):
            return cached[3], record.covered_through_id
        text = injection_text(
            record.text,
            locale=self.config.locale,
            budget_tokens=budget,
            count_tokens=count,
        )
        if len(self._prompts) >= _PROMPT_CACHE_SIZE:
            self._prompts.clear()
        self._prompts[session_id] = (record.text, budget, count, text)
        return text, record.covered_through_id

    def _injection_budget(
        self, session_id: str, model: str | None
    ) -> tuple[int, Callable[[str], int]]:
        """Return the budget and the chat model's counter, without blocking on I/O."""
        session_model = self._session_models.get(session_id)
        resolved = self._resolver.peek(session_model)
        if resolved is None:
            self._resolve_later(session_model)
        budget = injection_budget_tokens(
            self.config, None if resolved is None else resolved.context_length
        )
        chat = model or session_model
        if chat is not None:
            return budget, self._counter(chat)
        if resolved is None:
            return budget, _utf8_bytes
        return budget, resolved.count_tokens

    def _resolve_later(self, model: str | None) -> None:
        with self._resolving_lock:
            if model in self._resolving or self._core.closed:
                return
            self._resolving.add(model)

        def resolve() -> None:
            try:
                self._resolver.resolve(model)
            except Exception:  # the fallback stays in use; logged, never raised
                log.exception("resolving the summary model %r failed", model)
            finally:
                with self._resolving_lock:
                    self._resolving.discard(model)

        threading.Thread(
            target=resolve, name="memory-summary-resolve", daemon=True
        ).start()

    def assemble(
        self,
        messages: Iterable[Message],
        session_id: str,
        *,
        repair: Repair = True,
        placement: Placement = "separate",
        model: str | None = None,
    ) -> list[Message]:
        """Return ``messages`` ready for the provider, with the summary injected.

        Args:
            messages: the request as the host built it (system prompt, history).
            session_id: whose summary to inject.
            repair: pair tool calls and results as providers require
                (``domain.repair``): ``True`` drops a result whose call is not before
                it, ``"placeholder"`` synthesizes its call instead, ``False`` leaves
                the list alone. A call without a result gets a synthetic "result
                unavailable" unless it is in the trailing group (still executing).
            placement: ``"separate"`` puts the summary in its own system message at
                the end of the leading system block; ``"merge"`` appends it to the
                first system message (one system block: Anthropic, Gemini).
            model: the model the request goes to; the summary is cut to its budget
                in that model's encoding (default: the session's last model).

        Idempotent: a summary already present (separate or merged, even one that
        lost its ``kind`` in the host's own format) is replaced, never doubled.
        A stored message the injected summary covers (its ``id`` at or below the
        summary's ``covered_through_id``: a history read before a compression
        committed) is dropped, so nothing reaches the model twice; messages without
        an ``id`` and the host's instructions (system/developer) are always kept.
        """
        text, covered = self._injected(session_id, model)
        return assemble_messages(
            repair_pairs(without_covered(messages, covered), repair),
            None if text is None else summary_message(text),
            placement,
        )

    def clear(
        self,
        scope: Scope = "session",
        session_id: str | None = None,
        types: Collection[str] | None = None,
    ) -> list[ClearResult]:
        """Clear summaries as part of the host's unified memory clear.

        Skips (returns ``[]``) when ``types`` is given without ``"summary"``.
        ``scope="session"`` clears ``session_id``'s summary, ``"all"`` every summary.
        A compression running meanwhile is fenced: it commits nothing more, so a
        cleared summary never comes back. The history itself is the host's
        (``store.clear_session``); ``forget`` erases a session entirely.
        """
        if isinstance(types, str):
            types = (types,)
        if types is not None and "summary" not in types:
            return []
        if scope == "session":
            sid = _check_session_id(session_id)
            try:
                existed = self.memory.delete_metadata(NAMESPACE, sid)
                self.memory.delete_metadata(VERSIONS_NAMESPACE, sid)
            except StoreError as exc:
                return [ClearResult("summary", False, f"clearing {sid} failed: {exc}")]
            self._prompts.pop(sid, None)
            said = "cleared the summary" if existed else "no summary"
            return [ClearResult("summary", True, f"{said} of session {sid}")]
        if scope == "all":
            try:
                keys = self.memory.list_metadata(NAMESPACE)
                for key in keys:
                    self.memory.delete_metadata(NAMESPACE, key)
                for key in self.memory.list_metadata(VERSIONS_NAMESPACE):
                    self.memory.delete_metadata(VERSIONS_NAMESPACE, key)
            except StoreError as exc:
                return [
                    ClearResult(
                        "summary", False, f"clearing all summaries failed: {exc}"
                    )
                ]
            self._prompts.clear()
            return [ClearResult("summary", True, f"cleared {len(keys)} summaries")]
        raise ValueError(f"scope={scope!r} is invalid; allowed: 'session' / 'all'")

    def forget(self, session_id: str) -> int:
        """Erase everything of a session in one transaction; return messages deleted.

        Active and archived messages, archive rows in the store, the summary (and a
        quarantined one), the compaction lease and the engine's own state: a host's
        "delete my data" in one call. A compression running meanwhile is fenced and
        commits nothing, so nothing forgotten comes back.
        """
        self._core.check_open()
        _check_session_id(session_id)
        deleted = self.memory.forget_session(
            session_id,
            namespaces=(NAMESPACE, QUARANTINE_NAMESPACE, VERSIONS_NAMESPACE),
        )
        forget_archive = getattr(self.archive, "forget_session", None)
        if callable(forget_archive) and getattr(self.archive, "store", None) is not (
            self.memory
        ):
            forget_archive(session_id)
        self._prompts.pop(session_id, None)
        self._session_models.pop(session_id, None)
        self._context.forget(session_id)
        log.info("session %s: forgotten (%d messages)", session_id, deleted)
        return deleted

    def assemble_openai(
        self,
        messages: Iterable[OpenAIMessage],
        session_id: str,
        **options: Any,
    ) -> list[dict[str, object]]:
        """Return OpenAI-format ``messages`` with the summary injected, as dicts.

        The same as ``assemble`` (``options`` go to it unchanged), on what the openai
        SDK takes and returns: dicts or pydantic messages in, plain dicts out, so a
        host that speaks OpenAI format never touches ``Message``. Idempotent: as in
        ``assemble``, a system message of the leading block that starts with the
        summary header is taken for a summary injected earlier and replaced; the
        same text later in the conversation is the host's and is kept.

        Raises:
            MessageError: a message is malformed; the field names its index.

        >>> engine.assemble_openai(  # doctest: +SKIP
        ...     [{"role": "system", "content": "Be brief."},
        ...      {"role": "user", "content": "Where were we?"}], "s1")
        [{'role': 'system', 'content': 'Be brief.'},
         {'role': 'system', 'content': 'Summary of the earlier conversation ...'},
         {'role': 'user', 'content': 'Where were we?'}]
        """
        converted = messages_from_openai(messages)
        return messages_to_openai(self.assemble(converted, session_id, **options))

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback`` with every event the engine emits.

        Events: ``CompressRequested``, ``Compressing`` (its ``outcome`` on done and
        error) and ``Skipped``. Callbacks run on the engine's threads and must be
        quick; one that raises is logged and never breaks the engine. Returns a
        function that unsubscribes.
        """
        return self._core.events.subscribe(callback)

    def summarizer_label(self, session_id: str = "") -> str:
        """Return how summaries' origin is reported (model, or a non-LLM's label)."""
        resolved = self._resolver.resolve(self._session_models.get(session_id))
        return resolved if isinstance(resolved, str) else resolved.label

    def queue_depth(self) -> int:
        """Return the compression work queued or running (what ``wait_idle`` awaits).

        Triggers sent but not yet handled by their session actor, plus sessions that
        are compressing: how far behind the engine is.
        """
        return self._core.pending()

    def live_actors(self) -> int:
        """Return how many session actors are alive (idle ones are reaped)."""
        return self._core.live_actors()
