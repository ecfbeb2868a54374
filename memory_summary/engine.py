"""``SummaryEngine``: the public face of the library and its composition root.

This is the one place that builds concrete objects: the store's collaborators, the
summarizer (the offline one by default), the thread runtime and the compressor.
It runs about 1320 lines because it is the whole public API, one method per call, each
with the docstring the reference is generated from; what the methods do lives in
the modules they wire (``actors``, ``injected_prompts``, ``process_identity``,
``history``, ``recall_tools``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, Literal, cast

import attrs

from memory_summary.actors.breakers import BreakerBox
from memory_summary.actors.compression import Compressor
from memory_summary.actors.context import ContextPolicy
from memory_summary.actors.count_failures import CountFailures
from memory_summary.actors.events import EventBus
from memory_summary.actors.messages import Compress, TurnEnded, UsageReported
from memory_summary.actors.records import RecordReader
from memory_summary.actors.runtime import ThreadRuntime
from memory_summary.actors.session_facts import SessionMemory
from memory_summary.actors.summary_model import (
    CallHandle,
    ModelResolver,
    ResolvedModel,
)
from memory_summary.actors.workers import WorkerPool
from memory_summary.adapters import ExtractiveSummarizer, counter_factory
from memory_summary.adapters.stores.fence import store_commit
from memory_summary.adapters.stores.rows import is_store_key
from memory_summary.adapters.tokens import ModelCounter, estimate_tokens
from memory_summary.domain import (
    NAMESPACE,
    NO_USAGE,
    QUARANTINE_NAMESPACE,
    AnthropicSystem,
    Archive,
    ClearResult,
    CommitRequest,
    Compressing,
    CompressionStore,
    ConfigError,
    EngineStats,
    Event,
    ForgettingArchive,
    Health,
    IndexPolicyStore,
    LastFailure,
    Message,
    MessageError,
    OpenAIMessage,
    Outcome,
    Placement,
    Repair,
    StoreError,
    Summarizer,
    SummarizerCheck,
    SummarizerUsage,
    SummaryConfig,
    SummaryRecord,
    TokenUsage,
    anthropic_pairs,
    assemble_messages,
    clear_old_thinking,
    mask_tool_results,
    messages_from_anthropic,
    messages_from_openai,
    messages_to_anthropic,
    messages_to_openai,
    repair_pairs,
    should_compress,
    summary_message,
    total_usage,
    with_block_first,
)
from memory_summary.domain.capabilities import (
    archive_capabilities,
    store_capabilities,
)
from memory_summary.domain.clear import SUMMARY_TYPE, clears_summary, near_misses
from memory_summary.domain.injection import InjectedTest, without_covered
from memory_summary.domain.lineage import VERSIONS_NAMESPACE
from memory_summary.domain.native import (
    ANTHROPIC_PROVIDER,
    NativeArtifact,
    strip_leading_blocks,
)
from memory_summary.domain.pins import pins_line
from memory_summary.domain.prompt import checked_instructions
from memory_summary.domain.provider_items import chat_messages
from memory_summary.domain.recall import HistoryEntry, SearchHit, SummaryVersion
from memory_summary.domain.recall_tools import SEARCH_TOOL, tool_definitions
from memory_summary.domain.trigger import usage_triggers

from .conversation import Conversation
from .coverage import stored_coverage
from .history import HistoryAccess
from .injected_prompts import InjectedPrompts
from .process_identity import is_dead_owner, new_generation, owner_id
from .recall_tools import RecallSource, recall_tool_message
from .transcripts import Transcripts

log = logging.getLogger(__name__)

Scope = Literal["session", "all"]
_IGNORED_OUTCOMES = frozenset({"aborted", "error"})
_REASONS = ("manual", "auto", "overflow")
START_RESOLVE_S = 0.5
"""How long start() waits for the summary model to resolve (bounded: see start)."""


def _deprecated(name: str, instead: str) -> None:
    warnings.warn(
        f"SummaryEngine.{name} is deprecated; use {instead}",
        DeprecationWarning,
        stacklevel=3,
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


def _texts(text: str | None) -> tuple[str, ...]:
    """Return the injected ``text`` a request got, as ``InjectedPrompts`` takes it."""
    return () if text is None else (text,)


def _check_model(model: object) -> str | None:
    if model is not None and (not isinstance(model, str) or not model):
        raise ValueError(f"model={model!r} is invalid; allowed: a model name or None")
    return model


class SummaryEngine:
    """Keeps every session of a chat server inside its model's context window.

    After each turn (``turn_after``) and on each usage report (``token_usage``) the
    engine decides, off the caller's thread, whether the session needs compressing; if
    so its session actor folds the older messages into the summary and archives them.
    ``assemble`` (or ``build_prompt``) injects the summary before the next LLM call.

    Args:
        memory: the store that holds the history and the summaries; it must offer the
            ``CompressionStore`` methods (every store this library ships does).
        llm: the default summarizer; None uses the offline ``ExtractiveSummarizer``,
            folding where ``config.offline_fold`` says (the engine ends its worker
            process at ``stop()``).
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
        memory: CompressionStore,
        llm: Summarizer | None = None,
        *,
        config: SummaryConfig | None = None,
        archive: Archive | None = None,
        llms: Mapping[str, Summarizer] | None = None,
        count_tokens_for: Callable[[str | None], Callable[[str], int]] | None = None,
    ) -> None:
        commit = store_commit(memory)
        self._commit = commit
        self.config = config or SummaryConfig()
        counter = count_tokens_for or counter_factory(
            margin=self.config.token_safety_margin
        )
        self._counter = counter
        self.memory = memory
        # The tokenizer loads on the first summary, on a worker thread, not here.
        self._own_llm = None if llm else self._offline(counter, count_tokens_for)
        self.llm: Summarizer = llm or cast(Summarizer, self._own_llm)
        self.archive = archive
        # What the store and the archive can do, decided once (domain.capabilities)
        self._store_can = store_capabilities(memory)
        self._archive_can = archive_capabilities(archive, memory)
        self._counts_locally = self._store_can.counts_locally
        policy = self.config.recall_index
        if policy is not None and self._store_can.sets_recall_index:  # once
            cast(IndexPolicyStore, memory).set_recall_index(policy)
        self._facts = SessionMemory()  # bounded: least recent go first
        self._resolver = ModelResolver(
            self.config,
            self.llm,
            llms or {},
            counter,
            estimate_tokens=None if count_tokens_for else estimate_tokens,
        )
        self._native_summarizer = any(
            self._resolver.capabilities(one).compacts
            for one in (self.llm, *(llms or {}).values())
        )
        self._records = RecordReader(memory, self._store_can)
        self._count_failures = CountFailures()  # turn counts the store failed
        self._history = HistoryAccess(memory, self.config, self._store_can)
        events = EventBus()
        self._breakers = BreakerBox(self.config)
        self._last_failure: LastFailure | None = None
        self._native_dropped = 0
        self._native_lock = threading.Lock()
        events.subscribe(self._note_failure)
        calls = WorkerPool(
            "memory-summary-llm", self.config.max_concurrent_summaries, grow=True
        )
        self._calls = calls
        stopping = threading.Event()
        self._context = ContextPolicy(
            self.config,
            counter,
            estimate=None if count_tokens_for else estimate_tokens,
        )
        compressor = Compressor(
            store=memory,
            config=self.config,
            emit=events.emit,
            calls=calls,
            is_cancelled=stopping.is_set,
            resolver=self._resolver,
            breakers=self._breakers,
            records=self._records,
            owner=owner_id(),
            new_generation=new_generation,
            context=self._context,
            is_dead_owner=is_dead_owner,
            archive=archive,
            commit=commit,
            archive_shares_store=self._archive_can.shares_store,
        )
        self._versions = compressor.lineage_entries  # dropped with what they kept
        self._core = ThreadRuntime(
            self.config,
            compressor.run,
            events=events,
            calls=calls,
            stopping=stopping,
            facts=self._facts,
        )
        self._core.gate_turns(self._turn_gate)
        self._prompts = InjectedPrompts(
            self.config,
            self._resolver,
            self._facts.model,
            counter,
            calls,
            lambda: self._core.closed,
            self._searchable,
        )
        self._transcripts = Transcripts()
        self._warmed = threading.Event()
        self._core.on_start(self._warm_up)

    def _check_open(self) -> None:
        self._core.check_open()

    def _warm_up(self) -> None:
        """Resolve the default summary model (context length, tokenizer) off-thread."""
        try:
            self._resolver.resolution(None)
        finally:
            self._warmed.set()

    def start(self) -> SummaryEngine:
        """Load the tokenizer, resolve the summary model, start the engine's threads.

        The default summarizer's tokenizer loads here, on the caller's thread, once:
        parsing a vocabulary holds the interpreter for a few hundred milliseconds,
        which would otherwise stall the first turns. The summary model's context
        length resolves on an engine thread; start() waits for it at most
        ``START_RESOLVE_S`` (0.5 s), so a local summarizer or a configured length is
        known when it returns, and an endpoint that must be asked never delays it
        longer. Until the length is known, ``build_prompt`` cuts the summary to the
        512-token floor, in the encoding of the model the request goes to.
        ``AsyncSummaryEngine`` runs this off the event loop. A first send also starts
        the engine (without the wait).
        """
        if not self._core.closed:
            self._counter(self._resolver.capabilities(self.llm).model)
        self._core.start()
        self._warmed.wait(START_RESOLVE_S)
        return self

    def _offline(
        self,
        counter: Callable[[str | None], Callable[[str], int]],
        count_tokens_for: object,
    ) -> ExtractiveSummarizer:
        """The engine's own offline summarizer, folding where the config says."""
        if self.config.offline_fold == "thread":
            return ExtractiveSummarizer(lambda text: counter(None)(text))
        if count_tokens_for is not None:
            raise ConfigError(
                "offline_fold",
                "process",
                "'thread' with count_tokens_for (the worker cannot take its"
                " counters: pass llm=ExtractiveSummarizer(<picklable counter>,"
                " worker='process'))",
            )
        margin = self.config.token_safety_margin
        return ExtractiveSummarizer(ModelCounter(None, margin=margin), worker="process")

    def stop(self, timeout: float = 10.0) -> bool:
        """Finish or cancel in-flight work within ``timeout`` seconds; stop all threads.

        Returns True when everything ended in time. Nothing is committed after stop()
        begins; later calls raise ``EngineClosed``. Every engine thread is a daemon, so
        a summarizer that never answers cannot keep the host process alive. The
        offline summarizer's worker process, when the engine made one, ends too.
        """
        try:
            return self._core.stop(timeout)
        finally:
            if self._own_llm is not None:
                self._own_llm.close()  # kills its worker process: never waits

    def __enter__(self) -> SummaryEngine:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def conversation(
        self,
        session_id: str,
        *,
        model: str | None = None,
        answer_recall_tools: bool = True,
    ) -> Conversation:
        """Return the handle of one session's turns: ``prepare``, ``record``, ``add``.

        A plain chat server's turn is two calls::

            chat = engine.conversation("alice", model="gpt-4o")
            request = chat.prepare("Where were we?", system="Be brief.")
            chat.record(client.chat.completions.create(model="gpt-4o",
                                                       messages=request))

        ``prepare`` saves the user's message and returns the request with the
        summary injected (OpenAI dicts, Anthropic's ``system``/``messages`` or the
        Responses API's items); ``record`` saves the reply, reports its usage and
        the turn (compressing in the background when due) and answers the model's
        recall tool calls; ``add`` saves tool results. Making a handle does no
        I/O. See ``memory_summary.conversation``.

        Raises:
            ValueError: an invalid ``session_id`` or ``model``.
        """
        _check_session_id(session_id)
        _check_model(model)
        return Conversation(
            self, session_id, model=model, answer_recall_tools=answer_recall_tools
        )

    def turn_after(
        self, session_id: str, outcome: str = "replied", model: str | None = None
    ) -> None:
        """Report that a turn ended; compress in the background if the count says so.

        Turns whose ``outcome`` is ``"aborted"`` or ``"error"`` are ignored (seed 1).
        ``model`` is the model the turn used, for ``summary_model_mode="session"``
        and for counting in the chat model's encoding; the engine remembers it for
        the ``MAX_SESSION_FACTS`` (50,000) most recently reported sessions (an LRU,
        so memory stays bounded on a long-running server).
        On ``InMemoryStore`` a turn below the threshold is answered on the caller's
        thread with one count; on a database (SQLite, PostgreSQL) the count runs on
        one of the engine's two gate threads. Either way a session below the
        threshold gets no actor thread, and the call never waits for a summarizer.
        A turn whose session already has a turn trigger on its way, or a follow-up
        compression waiting, is neither counted nor sent: that trigger is heard
        after this turn's saves and reads them (``actors/turn_cover.py``).

        Raises:
            EngineClosed: after ``stop()``.
        """
        self._core.check_open()
        _check_session_id(session_id)
        if outcome in _IGNORED_OUTCOMES:
            return
        self._turn_ended(session_id, model, None)

    def _turn_ended(
        self, session_id: str, model: str | None, active: int | None
    ) -> None:
        """Trigger as ``turn_after`` does; ``active``: the count, when the caller knows.

        A ``Conversation`` knows the count its sync and its own saves lead to, so its
        turn needs no count of the store's and no hop to a gate thread (a write beside
        it is seen at its next ``prepare``).
        """
        if _check_model(model) is not None:
            self._facts.set_model(session_id, model)  # type: ignore[arg-type]
        core = self._core
        if core.turns.covered(session_id):
            return  # a trigger it hears later reads this turn too: no count, no hop
        turn = TurnEnded(core.turn_mark())  # before the count it carries
        if self._context.measures and not self._facts.get(session_id).host_reports:
            core.send_turn(session_id, turn)  # the job measures the tokens
        elif active is not None:
            if should_compress(active, self.config):
                core.send_turn(session_id, turn)
        elif self._counts_locally:
            if self._reaches_threshold(session_id):
                core.send_turn(session_id, turn)
        else:  # a remote store: counted on the engine's gate threads, not here
            core.send_turn(
                session_id, turn, lambda: self._reaches_threshold(session_id)
            )

    def _turn_gate(self, session_id: str) -> Callable[[], bool] | None:
        """Return the gate check of a follow-up turn; None when the job measures it."""
        if self._context.measures and not self._facts.get(session_id).host_reports:
            return None
        return lambda: self._reaches_threshold(session_id)

    def _reaches_threshold(self, session_id: str) -> bool:
        """Tell whether the turn may need its actor (seed 2).

        The same rule ``step`` decides by (``should_compress``), on the active count:
        an upper bound of the foldable count, so it only filters.
        """
        try:
            active = self.memory.count_history(session_id)
            return should_compress(active, self.config)
        except StoreError as exc:  # the job will meet the failure and report it
            self._count_failures.note(session_id, exc)  # counted, warned sparingly
            return True

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
        self._facts.host_reports(session_id)  # the host's ratio wins from now on
        if usage_triggers(usage_ratio, self.config):
            self._core.send(session_id, UsageReported(float(usage_ratio)))

    def compress(
        self,
        session_id: str,
        reason: str = "manual",
        *,
        instructions: str | None = None,
    ) -> Future[Outcome]:
        """Compress now, ignoring the threshold; return a future of the ``Outcome``.

        A request that arrives while the session compresses runs right after it.
        ``reason="overflow"`` is for a host whose model call just failed on its
        context length: it folds everything but the newest messages that fit the
        token keep (``keep_recent_tokens``, else a share of ``context_window``, else
        the newest tool-call group alone), ignoring ``keep_recent``, and leaves
        recovering ranges archived during an outage to the next compression. It
        never blocks: wait on the future (with a timeout) before retrying the call.

        ``instructions``: the host's words for this compression ("keep every order
        number"), added after ``summary_instructions`` and sent to the summarizer in
        their own fenced section (``domain.prompt``); the offline summarizer ranks
        lines naming their terms higher. They go to the session's next compression
        run: this one, or the follow-up of one already running.

        Raises:
            ValueError: an unknown ``reason``, or ``instructions`` longer than
                ``MAX_INSTRUCTIONS_CHARS``.
            TypeError: ``instructions`` that are not text.
        """
        _check_session_id(session_id)
        if reason not in _REASONS:
            raise ValueError(
                f"reason={reason!r} is invalid; allowed: 'manual' / 'auto' / 'overflow'"
            )
        given = "" if instructions is None else checked_instructions(instructions)
        reply: Future[Outcome] = Future()
        message = Compress(reason, reply, given.strip())  # type: ignore[arg-type]
        self._core.send(session_id, message)
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
        ranked by BM25 (``domain.ranking``: with the context of the neighbouring
        messages, and a message by a speaker the query names, its ``name``, or said in
        a period it names, "on October 13, 2023", its ``timestamp``, scoring half as
        much again), best first. Each hit carries the message (with its id, for
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
        model the session's last ``turn_after`` named, else the summary model's.
        While that length is not known, the budget is the seed's fallback (4096 x
        ratio, floor 512), whatever count the summary was committed with. It is
        cached per session, summary and encoding, so a call that finds the same
        summary does no tokenizer work; it never does network I/O.
        """
        return self._injected(session_id, model)[0]

    def _injected(
        self, session_id: str, model: str | None
    ) -> tuple[str | None, int | None]:
        """Return ``build_prompt``'s text and the id its summary covers through."""
        return self._injection(session_id, model)[:2]

    def _injection(
        self, session_id: str, model: str | None, provider: str | None = None
    ) -> tuple[str | None, int | None, NativeArtifact | None]:
        """Return the summary to inject: text or native artifact, and what it covers.

        A request to ``provider`` whose model the record's native artifact serves
        (``model``, else the session's last) gets the block, and as text only what
        the record's text adds to it (its pinned facts: ``NativeArtifact.beside``,
        else the text's pinned section).
        """
        self._core.check_open()
        _check_model(model)
        try:
            record = self.summary(session_id)
        except StoreError as exc:
            log.warning("session %s: summary unreadable, ignored: %s", session_id, exc)
            return None, None, None
        return self._injection_of(session_id, model, provider, record)

    def _injection_of(
        self,
        session_id: str,
        model: str | None,
        provider: str | None,
        record: SummaryRecord | None,
    ) -> tuple[str | None, int | None, NativeArtifact | None]:
        """``_injection`` of the ``record`` the caller read (``_read_record``)."""
        self._core.check_open()
        _check_model(model)
        if record is None or not record.text:
            return None, None, None
        native, block = record.native, None
        if (
            provider is not None
            and native is not None
            and native.serves(provider, model or self._facts.model(session_id))
        ):
            block = native
            # what the text adds to the block (pinned facts) goes with it, as text;
            # an artifact stored without it: the pinned section of the text
            extra = native.beside
            if extra is None:
                extra = pins_line(record.text, self.config.locale)
            if not extra.strip():
                return None, record.covered_through_id, block
            record = attrs.evolve(record, text=extra.strip())
        text = self._prompts.text(session_id, model, record)
        return text, record.covered_through_id, block

    def _injected_test(
        self, session_id: str, now: Callable[[], Collection[str]]
    ) -> InjectedTest:
        """Return the test of the session's injected texts (``InjectedPrompts``).

        ``now``: the texts its requests get now; the summaries compared beyond them
        are ``summary_history``'s (read only for a text they do not hold).
        """

        def summaries() -> list[str]:
            try:
                return [version.summary for version in self.summary_history(session_id)]
            except StoreError as exc:
                log.warning(
                    "session %s: summary history unreadable, injected copies "
                    "compared with the current texts only: %s",
                    session_id,
                    exc,
                )
                return []

        return self._prompts.injected_test(session_id, now, summaries)

    def _read_record(
        self, session_id: str, data: dict[str, object] | None
    ) -> SummaryRecord | None:
        """Return the summary record ``data`` the store returned, as ``summary``."""
        return self._records.decode(session_id, data)

    def _note_request(
        self,
        session_id: str,
        system: AnthropicSystem,
        tools: Iterable[Mapping[str, object]] | None = None,
    ) -> None:
        """Remember the host's system and tools when a native summarizer sends them.

        ``tools`` None (a request that does not name them) keeps those remembered.
        """
        if self._native_summarizer:
            self._facts.set_request(
                session_id, system, None if tools is None else list(tools)
            )

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
        Without its ``kind`` it is known by its text, in the leading system block
        only: the session's current summary or one of its ``summary_versions_kept``
        earlier ones, whole or cut to any budget, or one of the last texts this
        engine injected for the session (remembered through ``clear`` and
        ``forget``; a copy another process injected of a summary the store no
        longer holds is the host's); a host's text that merely holds the summary
        header is kept. A
        message read from the store (it has an ``id``) is sent as stored, even one
        that looks like a summary (its ``kind``, the header's text): only the
        library's own injection is replaced.
        A stored message the injected summary covers (its ``id`` at or below the
        summary's ``covered_through_id``: a history read before a compression
        committed) is dropped, so nothing reaches the model twice; messages without
        an ``id`` and the host's instructions (system/developer) are always kept. A
        summary claiming ids past the store's newest message (a foreign record, the
        store's ids restarted) drops nothing, one claiming an active message drops
        nothing from it on, and a WARNING says so (``coverage``).

        With ``mask_tool_results_after`` set, tool results older than that many
        user turns are replaced by a one-line stub (``domain.masking``), their age
        read from ``messages`` as given (before pair repair moves a result next to
        its call); the stored messages are untouched. So are the Responses API
        items with no chat meaning (``reasoning``, ``web_search_call``: messages of
        kind ``ITEM_KIND``), which the request leaves out.
        """
        text, covered = self._injected(session_id, model)
        given = list(messages)
        covered = stored_coverage(
            self.memory, session_id, given, covered, spans=self._store_can.spans
        )
        earlier = self._injected_test(session_id, lambda: _texts(text))
        return self._assembled(
            given, text, covered, repair, placement, earlier, chat=True
        )

    def _assembled(
        self,
        messages: Iterable[Message],
        text: str | None,
        covered: int | None,
        repair: Repair,
        placement: Placement,
        earlier: InjectedTest,
        *,
        chat: bool,
    ) -> list[Message]:
        """Return ``assemble``'s request for a summary text already read.

        ``chat``: for a chat-completions or Anthropic request, which leaves out the
        items only the Responses API reads (``domain.provider_items``); False keeps
        them, for a Responses request.
        """
        given = chat_messages(messages) if chat else messages
        masked = mask_tool_results(  # a result's age: as the host gave the history
            without_covered(given, covered),
            self.config.mask_tool_results_after,
            locale=self.config.locale,
        )
        return assemble_messages(
            repair_pairs(masked, repair),
            None if text is None else summary_message(text),
            placement,
            earlier,
        )

    def clear(
        self,
        scope: Scope = "session",
        session_id: str | None = None,
        types: Collection[str] | None = None,
    ) -> list[ClearResult]:
        """Clear summaries as part of the host's unified memory clear.

        Skips (returns ``[]``) when ``types`` is given without ``"summary"``: the
        host's other memory types (SPEC 7). A name that can only be a misspelling
        of ``"summary"`` (``"summry"``, ``"Summary"``, ``"summaries"``) skips too,
        with a WARNING naming it (the command line refuses it instead).
        ``scope="session"`` clears ``session_id``'s summary, ``"all"`` every summary.
        A compression running meanwhile is fenced: it commits nothing more, so a
        cleared summary never comes back. The history itself is the host's
        (``store.clear_session``); ``forget`` erases a session entirely.

        Raises:
            EngineClosed: after ``stop()``, as every call that writes.
        """
        self._core.check_open()
        if isinstance(types, str):
            types = (types,)
        elif types is not None:
            types = tuple(types)  # read once: a generator is a collection only once
        if not clears_summary(types):  # another source's types only (SPEC 7)
            if missed := near_misses(types or ()):
                log.warning(
                    "clear skipped the summaries: types %r do not name %r (did you "
                    "mean it instead of %s?)",
                    types,
                    SUMMARY_TYPE,
                    ", ".join(map(repr, missed)),
                )
            return []
        if scope == "session":
            sid = _check_session_id(session_id)
            try:
                existed = self.memory.delete_metadata(NAMESPACE, sid)
                self.memory.delete_metadata(VERSIONS_NAMESPACE, sid)
            except StoreError as exc:
                return [ClearResult("summary", False, f"clearing {sid} failed: {exc}")]
            self._prompts.forget(sid)
            self._versions.forget(sid)
            said = "cleared the summary" if existed else "no summary"
            return [ClearResult("summary", True, f"{said} of session {sid}")]
        if scope == "all":
            return [self._clear_all()]
        raise ValueError(f"scope={scope!r} is invalid; allowed: 'session' / 'all'")

    def _clear_all(self) -> ClearResult:
        """Delete every summary and its versions; leave and name foreign keys.

        Both namespaces are listed before anything is deleted, so a store that cannot
        list them changes nothing. A key no session id can be (a foreign writer's
        blob, a NUL) is no session's summary: it is left and named, never raised.
        """
        try:
            listed = [
                (namespace, self.memory.list_metadata(namespace))
                for namespace in (NAMESPACE, VERSIONS_NAMESPACE)
            ]
        except StoreError as exc:
            return ClearResult(
                "summary", False, f"nothing was cleared: listing them failed: {exc}"
            )
        foreign = [key for _, keys in listed for key in keys if not is_store_key(key)]
        try:
            for namespace, keys in listed:
                for key in filter(is_store_key, keys):
                    self.memory.delete_metadata(namespace, key)
        except StoreError as exc:
            return ClearResult(
                "summary", False, f"clearing all summaries failed: {exc}"
            )
        finally:
            self._prompts.forget_all()
            self._versions.forget_all()
        said = f"cleared {sum(map(is_store_key, listed[0][1]))} summaries"
        if foreign:
            log.warning("clear: left %d record(s) of a foreign key", len(foreign))
            named = ", ".join(repr(key) for key in foreign[:5])
            said += (
                f"; left {len(foreign)} record{'s' * (len(foreign) > 1)} whose key "
                f"no session id can be: {named}{', ...' * (len(foreign) > 5)}"
            )
        return ClearResult("summary", True, said)

    def forget(self, session_id: str) -> int:
        """Erase everything of a session in one transaction; return messages deleted.

        Active and archived messages, archive rows in the store, the summary (and a
        quarantined one), the compaction lease and the engine's own state: a host's
        "delete my data" in one call. A compression running meanwhile is fenced and
        commits nothing, so nothing forgotten comes back. Digests of the summary
        texts it injected stay in memory (bounded), so a copy the host still sends
        is dropped from its requests, never stored.
        """
        self._core.check_open()
        _check_session_id(session_id)
        deleted = self.memory.forget_session(
            session_id,
            namespaces=(NAMESPACE, QUARANTINE_NAMESPACE, VERSIONS_NAMESPACE),
        )
        if self._archive_can.forgets and not self._archive_can.shares_store:
            cast(ForgettingArchive, self.archive).forget_session(session_id)
        self._prompts.forget(session_id)
        self._versions.forget(session_id)
        self._transcripts.drop(session_id)
        self._facts.pop(session_id)
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
        ``assemble``, a system message of the leading block whose text is a summary
        the engine injected (the current one or a kept earlier one, whole or cut) is
        replaced; the same text later in the conversation, or a host's text that
        merely holds the summary header, is the host's and is kept.

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

    def recall_tools(self, *, compaction: bool = True) -> list[dict[str, object]]:
        """Return the recall tools as OpenAI function-tool definitions (JSON schema).

        ``search_history`` searches the whole stored history, archived turns
        included; ``read_history`` reads the turns around one message;
        ``compact_context`` lets the model ask for a compression now (before a long
        task), with an optional ``focus`` the summarizer reads as the host's
        ``instructions``. Pass them to the chat model with the host's own tools and
        answer their calls with ``call_recall_tool``; set ``recall_hint`` so the
        summary tells the model. ``compaction=False`` leaves ``compact_context``
        out, for a host that does not let the model trigger compressions (its calls
        are still answered if a model sends one). Under ``recall_index="off"`` (the
        config's or the store's own) ``search_history`` is left out: every call
        would be refused.

        >>> [t["function"]["name"] for t in engine.recall_tools()]  # doctest: +SKIP
        ['search_history', 'read_history', 'compact_context']
        """
        tools = tool_definitions(compaction=compaction)
        if not self._searchable():
            return [t for t in tools if t["function"]["name"] != SEARCH_TOOL]  # type: ignore[index]
        return tools

    def _searchable(self) -> bool:
        """Tell whether search is kept: no ``recall_index="off"``, config or store."""
        policy = self.config.recall_index
        if policy is None and self._store_can.sets_recall_index:
            policy = cast(IndexPolicyStore, self.memory).recall_index
        return policy != "off"

    def call_recall_tool(self, session_id: str, tool_call: object) -> Message:
        """Run one recall tool call for ``session_id``; return the message to append.

        ``tool_call`` is a ``ToolCall``, an OpenAI tool-call dict or the SDK's
        pydantic tool call. The result is a ``tool`` message answering it
        (``tool_call_id`` set), at most ``recall_result_max_tokens`` tokens in the
        session's chat encoding. Bad JSON, wrong types, an unknown tool or an id of
        another session give a tool message saying what was wrong, never an
        exception; only a call without an id raises ``MessageError``.

        ``compact_context`` asks for ``compress(session_id, "manual",
        instructions=focus)`` and returns at once (the compression runs in the
        background); its result says the compaction was requested.
        """
        return self._recall(session_id, tool_call, self)

    def _recall(
        self, session_id: str, tool_call: object, source: RecallSource
    ) -> Message:
        """``call_recall_tool`` reading and compressing through ``source``."""
        self._core.check_open()
        _check_session_id(session_id)
        count = self._counter(self._facts.model(session_id))
        return recall_tool_message(source, session_id, tool_call, count)

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback`` with every event the engine emits.

        Events: ``CompressRequested``, ``Compressing`` (its ``outcome`` on done and
        error) and ``Skipped``. Callbacks run on the engine's threads and must be
        quick; one that raises is logged and never breaks the engine. Returns a
        function that unsubscribes.
        """
        return self._core.events.subscribe(callback)

    def health(self, session_id: str | None = None) -> Health:
        """Return what an operator needs to see degrades, without any logging set up.

        Each summarizer's circuit breaker (closed, open, half-open), the last
        compression that failed or degraded to trim-only since start, the
        sessions holding ranges archived without a summary (``resummarize`` folds
        them back in), and the turns whose threshold count the store failed
        (``count_failures``: each went on to its session's actor; a WARNING says
        so, at most once a minute). ``health().degraded`` is True while a breaker
        is not closed or a session lacks part of its summary. Without
        ``session_id`` it reads every summary record (one scan of the store); with
        one, that record only.

        Raises:
            StoreError: the store cannot be read.

        Example:
            >>> from memory_summary.adapters import InMemoryStore
            >>> SummaryEngine(InMemoryStore()).health().degraded
            False
        """
        if session_id is None:
            records = list(self._records.scan())
        else:
            record = self.summary(session_id)
            records = [] if record is None else [(session_id, record)]
        return Health(
            summarizers=tuple(self._breakers.report()),
            last_failure=self._last_failure,
            unsummarized={
                sid: record.unsummarized
                for sid, record in records
                if record.unsummarized
            },
            native_dropped=self._native_dropped,
            count_failures=self._count_failures.total,
        )

    def drop_native(self, session_id: str, reason: str = "") -> bool:
        """Drop the session's native artifact: its provider refused it.

        Call it when a request carrying the provider's compaction block failed
        because of the block (a 400 that names it, a model or account switch): the
        record keeps its plain summary, and the next request (``assemble_anthropic``,
        ``conversation().prepare``) carries that text instead. Logged with
        ``reason`` and counted in ``health().native_dropped``. A compression
        running meanwhile is fenced and commits nothing; the next one writes anew.
        Returns whether an artifact was dropped.

        Raises:
            StoreError: the store failed (nothing was dropped).
            EngineClosed: after ``stop()`` (nothing commits after it).
        """
        sid = _check_session_id(session_id)
        for _ in range(3):  # a commit landed between the read and the write: again
            self._core.check_open()
            record = self._records.read(sid)
            if record is None or record.native is None:
                return False
            kept = attrs.evolve(record, native=None, generation=new_generation())
            result = self._commit(
                CommitRequest(
                    session_id=sid,
                    namespace=NAMESPACE,
                    record=kept.to_mapping(),
                    expect_generation=record.generation or "",
                )
            )
            if result.committed:
                with self._native_lock:
                    self._native_dropped += 1
                log.warning(
                    "session %s: native artifact dropped (%s); the text goes instead",
                    sid,
                    reason or "refused by its provider",
                    extra={"session_id": sid},
                )
                return True
        return False

    def _account_compaction(self, session_id: str, usage: TokenUsage) -> None:
        """Add a server-side compaction's tokens to the session's summarizer usage.

        One provider-reported call, committed fenced as ``drop_native`` commits, but
        only once no compression of the session runs in this process (at once when
        none does; else right after the last one ends, before the next may start),
        so it fences none of them. A store failure or three lost races are logged,
        never raised: the host's turn is saved.
        """
        self._core.after_compressions(
            session_id, lambda: self._commit_compaction_usage(session_id, usage)
        )

    def _commit_compaction_usage(self, session_id: str, usage: TokenUsage) -> None:
        call = NO_USAGE.with_call(usage, counted=False, seconds=0.0)
        try:
            for _ in range(3):
                record = self._records.read(session_id)
                base = record or SummaryRecord(
                    text="", covered_through_id=None, tokens=0
                )
                kept = attrs.evolve(
                    base, usage=base.usage.plus(call), generation=new_generation()
                )
                result = self._commit(
                    CommitRequest(
                        session_id=session_id,
                        namespace=NAMESPACE,
                        record=kept.to_mapping(),
                        expect_generation=(
                            None if record is None else record.generation or ""
                        ),
                    )
                )
                if result.committed:
                    return
        except StoreError as exc:
            log.warning("session %s: compaction usage not kept: %s", session_id, exc)
            return
        log.warning("session %s: compaction usage not kept (raced)", session_id)

    def check_summarizer(self, timeout: float = 30.0) -> SummarizerCheck:
        """Ask the summary model for a one-word reply; say whether it answered.

        An opt-in start-up check (one small request to the endpoint) for hosts that
        want a wrong or dead summarizer to show at start, not as quiet trims later.
        Never raises and leaves the circuit breaker alone.

        Example:
            >>> from memory_summary.adapters import InMemoryStore
            >>> with SummaryEngine(InMemoryStore()) as engine:
            ...     engine.check_summarizer(timeout=10).ok
            True
        """
        began = time.monotonic()
        resolved = self._resolver.resolution(self._facts.model(""))
        if not isinstance(resolved, ResolvedModel):
            return SummarizerCheck(False, "unresolved", resolved.reason, 0.0)
        request = (
            Message("system", "Reply with the single word OK."),
            Message("user", "Are you there?"),
        )
        handle = CallHandle()
        try:
            future = self._calls.submit(
                resolved.call, request, 16, 0.0, began + timeout, handle
            )
            text = future.result(timeout=timeout).text
        except FuturesTimeout:
            handle.close()  # frees a stream's connection
            detail = f"no answer within {timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            detail = f"{type(exc).__name__}: {exc}"
        else:
            detail = "" if text.strip() else "an empty answer"
        seconds = time.monotonic() - began
        return SummarizerCheck(not detail, resolved.label, detail, seconds)

    def _note_failure(self, event: Event) -> None:
        """Remember the last compression that failed or degraded (for ``health``)."""
        if not isinstance(event, Compressing) or event.status != "error":
            return
        outcome = event.outcome
        if outcome is None or outcome.code == "engine_stopped":
            return
        self._last_failure = LastFailure(
            event.session_id,
            outcome.kind,
            outcome.code or "",
            outcome.detail,
            time.time(),
        )

    def stats(self, session_id: str = "") -> EngineStats:
        """Return what the engine is doing now: its summarizer, queue and actors.

        ``summarizer`` is the label of the summary model ``session_id`` resolves to
        (the default one for ``""``); resolving a model for the first time may ask
        its endpoint for its context length. Nothing else reads the store: see
        ``health()`` for breakers and failures, ``usage()`` for tokens.

        Example:
            >>> from memory_summary.adapters import InMemoryStore
            >>> SummaryEngine(InMemoryStore()).stats().queue_depth
            0
        """
        resolved = self._resolver.resolution(self._facts.model(session_id))
        label = (
            resolved.label if isinstance(resolved, ResolvedModel) else resolved.reason
        )
        return EngineStats(
            summarizer=label,
            queue_depth=self._core.pending(),
            live_actors=self._core.live_actors(),
            transcripts=len(self._transcripts),
        )

    def summarizer_label(self, session_id: str = "") -> str:
        """Deprecated: ``stats(session_id).summarizer``."""
        _deprecated("summarizer_label()", "stats(session_id).summarizer")
        return self.stats(session_id).summarizer

    def queue_depth(self) -> int:
        """Deprecated: ``stats().queue_depth``."""
        _deprecated("queue_depth()", "stats().queue_depth")
        return self._core.pending()

    def live_actors(self) -> int:
        """Deprecated: ``stats().live_actors``."""
        _deprecated("live_actors()", "stats().live_actors")
        return self._core.live_actors()

    # -- Anthropic's Messages format ---------------------------------------------------

    def assemble_anthropic(
        self,
        system: AnthropicSystem,
        messages: Iterable[Mapping[str, object] | object],
        session_id: str,
        **options: Any,
    ) -> tuple[AnthropicSystem, list[dict[str, object]]]:
        """Return a Messages-API request ``(system, messages)`` with the summary in it.

        Anthropic has no system role inside ``messages``: the summary is appended to
        ``system`` (after the static prompt, so a ``cache_control`` prefix keeps its
        cache; a text block of its own when ``system`` is a list of blocks; the
        whole ``system`` when there was none). Tool use is paired by Anthropic's
        rules (``domain.anthropic_pairing``): every ``tool_use`` answered at the
        start of the next user turn, roles alternating, a user turn first.
        ``options`` are ``assemble``'s (``repair``, ``model``; ``placement`` can only
        be ``"merge"``) and ``tools``, the request's tool definitions, which a
        native summarizer sends with the session's ``system``. When the summary was
        made by Anthropic's own compaction (``AnthropicCompactingLLM``) and the
        request goes to the model that made it (``model``, else the session's
        last), its compaction block comes first in ``messages``, verbatim, in
        place of the summary text (``drop_native`` when the API refuses it).
        Idempotent: a summary merged earlier is replaced (known as ``assemble``
        knows it: its text, not the header alone), and so are the
        ``compaction`` blocks that open the first message while the session has a
        summary (taken as the library's own, sent by an earlier call: the current
        block, or the text, goes in their place; a block anywhere else is the
        host's and kept). With
        ``anthropic_keep_thinking_turns`` set, thinking blocks older than that many
        assistant turns are dropped (``domain.thinking``; the open tool loop's stay).

        Raises:
            MessageError: a message or block is malformed; the field names where.

        >>> system, messages = engine.assemble_anthropic(  # doctest: +SKIP
        ...     "Be brief.", [{"role": "user", "content": "Where were we?"}], "s1")
        >>> system.startswith("Be brief.")  # doctest: +SKIP
        True
        """
        placement = options.pop("placement", "merge")
        if placement != "merge":
            raise ValueError(
                f"placement={placement!r} is invalid for Anthropic; allowed: 'merge' "
                "(the Messages API has no system role inside messages)"
            )
        repair: Repair = options.pop("repair", True)
        tools = options.pop("tools", None)
        model = options.pop("model", None)
        if options:
            raise TypeError(f"unexpected options: {sorted(options)}")
        text, covered, native = self._injection(session_id, model, ANTHROPIC_PROVIDER)
        block = None if native is None else native.block
        turns_in = list(messages)
        if text is not None or block is not None:  # the library's own block: replaced
            turns_in = strip_leading_blocks(turns_in)
        given = messages_from_anthropic(system, turns_in)
        self._note_request(session_id, system, tools)
        covered = stored_coverage(
            self.memory, session_id, given, covered, spans=self._store_can.spans
        )
        earlier = self._injected_test(session_id, lambda: _texts(text))
        assembled = self._assembled(
            given, text, covered, False, "merge", earlier, chat=True
        )
        system_out, turns = messages_to_anthropic(
            anthropic_pairs(assembled, repair), alternate=repair is not False
        )
        turns = clear_old_thinking(turns, self.config.anthropic_keep_thinking_turns)
        return system_out, turns if block is None else with_block_first(block, turns)
