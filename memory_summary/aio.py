"""An asyncio face for hosts built on asyncio.

Awaiting never blocks the event loop: pykka's own ``Future.__await__`` calls the
blocking ``get()``, so the engine hands out ``concurrent.futures.Future`` objects and
this module awaits them with ``asyncio.wrap_future``. Calls that never wait run
directly on the loop (no thread hop): triggers always, and ``build_prompt``/``assemble``
on a local store (in memory or SQLite: a cached, millisecond-free read); on a networked
store (PostgreSQL) those reads run in a worker thread.

Why about 410 lines: it mirrors each public method of ``SummaryEngine`` that may wait,
one awaitable with its docstring each; what they do lives in the engine.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from memory_summary.domain import (
    AnthropicSystem,
    ClearResult,
    EngineStats,
    Event,
    Health,
    HistoryEntry,
    Message,
    OpenAIMessage,
    Outcome,
    Placement,
    Repair,
    SearchHit,
    SummarizerCheck,
    SummarizerUsage,
    SummaryRecord,
    SummaryVersion,
)

from .aio_store import AsyncStore
from .conversation import Conversation, Recorded, RequestFormat
from .engine import Scope, SummaryEngine

NOT_AWAITABLE = frozenset(
    {"conversation", "live_actors", "queue_depth", "recall_tools", "subscribe"}
    | {"token_usage", "turn_after"}
)
"""``SummaryEngine`` methods whose twins here are plain calls: they never wait (a
trigger, a definition, a handle, a counter), so they run on the loop directly."""
SYNC_ONLY = frozenset({"__enter__", "__exit__"})
"""``SummaryEngine`` names without a twin: ``async with`` replaces ``with``."""


def _deprecated(name: str, instead: str) -> None:
    warnings.warn(
        f"AsyncSummaryEngine.{name} is deprecated; use {instead}",
        DeprecationWarning,
        stacklevel=3,
    )


class AsyncSummaryEngine:
    """Wraps a ``SummaryEngine`` with awaitable methods.

    Example:
        >>> import asyncio
        >>> from memory_summary import SummaryEngine
        >>> from memory_summary.adapters import InMemoryStore
        >>> async def main():
        ...     async with AsyncSummaryEngine(SummaryEngine(InMemoryStore())) as engine:
        ...         engine.turn_after("s1")
        ...         return (await engine.compress("s1")).kind
        >>> asyncio.run(main())
        'skipped'
    """

    def __init__(self, engine: SummaryEngine) -> None:
        self.engine = engine
        self._local = engine._store_can.counts_locally  # decided when wired
        self.memory = AsyncStore(engine.memory)
        """The engine's store: each call awaitable, off the loop (``AsyncStore``)."""

    async def __aenter__(self) -> AsyncSummaryEngine:
        return await self.start()

    async def start(self) -> AsyncSummaryEngine:
        """Load the tokenizer and start the engine, in a worker thread.

        Nothing runs on the loop's thread. One step still stops the loop, the
        first time in a process: tiktoken builds its encoder in one Rust call that
        holds the interpreter lock (about 0.25 s for ``o200k_base``). Call the
        synchronous ``SummaryEngine.start()`` before the loop serves (it is
        idempotent) and this start stalls the loop no more than an idle loop
        stalls; see docs/asyncio.md.
        """
        await asyncio.to_thread(self.engine.start)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def save_message(self, session_id: str, message: Message) -> Message:
        """Deprecated: ``conversation(session_id).add`` or ``memory.save_message``."""
        _deprecated("save_message()", "conversation(sid).add() / memory.save_message")
        return await self.memory.save_message(session_id, message)

    async def get_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        """Deprecated: ``memory.get_history`` (the store's own call, off the loop)."""
        _deprecated("get_history()", "memory.get_history()")
        return await self.memory.get_history(session_id, limit)

    async def pop_message(self, session_id: str) -> Message | None:
        """Deprecated: ``memory.pop_message`` (the store's own call, off the loop)."""
        _deprecated("pop_message()", "memory.pop_message()")
        return await self.memory.pop_message(session_id)

    async def summary(self, session_id: str) -> SummaryRecord | None:
        """Return the session's summary record (``SummaryEngine.summary``)."""
        return await asyncio.to_thread(self.engine.summary, session_id)

    async def health(self, session_id: str | None = None) -> Health:
        """Return breakers, failures and gaps (``SummaryEngine.health``)."""
        return await asyncio.to_thread(self.engine.health, session_id)

    async def check_summarizer(self, timeout: float = 30.0) -> SummarizerCheck:
        """Ask the summary model for a one-word reply (``check_summarizer``)."""
        return await asyncio.to_thread(self.engine.check_summarizer, timeout)

    async def stats(self, session_id: str = "") -> EngineStats:
        """Return the summarizer, queue and actors (``SummaryEngine.stats``).

        In a worker thread: resolving a model for the first time may ask its
        endpoint.
        """
        return await asyncio.to_thread(self.engine.stats, session_id)

    async def usage_by_session(self) -> dict[str, SummarizerUsage]:
        """Return every session's summarizer usage (one scan of the store)."""
        return await asyncio.to_thread(self.engine.usage_by_session)

    async def summarizer_label(self, session_id: str = "") -> str:
        """Deprecated: ``(await stats(session_id)).summarizer``."""
        _deprecated("summarizer_label()", "stats(session_id).summarizer")
        return (await self.stats(session_id)).summarizer

    def queue_depth(self) -> int:
        """Deprecated: ``engine.stats().queue_depth``."""
        _deprecated("queue_depth()", "stats().queue_depth")
        return self.engine._core.pending()

    def live_actors(self) -> int:
        """Deprecated: ``engine.stats().live_actors``."""
        _deprecated("live_actors()", "stats().live_actors")
        return self.engine._core.live_actors()

    def conversation(
        self,
        session_id: str,
        *,
        model: str | None = None,
        answer_recall_tools: bool = True,
    ) -> AsyncConversation:
        """Return the awaitable handle of one session's turns (no I/O to make one).

        See ``SummaryEngine.conversation``: ``prepare``, ``record`` and ``add``
        each run in one worker-thread hop.
        """
        return AsyncConversation(
            self.engine.conversation(
                session_id, model=model, answer_recall_tools=answer_recall_tools
            )
        )

    def turn_after(
        self, session_id: str, outcome: str = "replied", model: str | None = None
    ) -> None:
        """Report a finished turn; returns at once (``SummaryEngine.turn_after``)."""
        self.engine.turn_after(session_id, outcome, model)

    def token_usage(self, session_id: str, usage_ratio: float) -> None:
        """Report context usage; returns at once (see ``SummaryEngine.token_usage``)."""
        self.engine.token_usage(session_id, usage_ratio)

    async def compress(
        self,
        session_id: str,
        reason: str = "manual",
        *,
        instructions: str | None = None,
    ) -> Outcome:
        """Compress now and return the outcome, without blocking the loop.

        ``instructions``: the host's words for this compression (see
        ``SummaryEngine.compress``).
        """
        return await asyncio.wrap_future(
            self.engine.compress(session_id, reason, instructions=instructions)
        )

    async def build_prompt(
        self, session_id: str, model: str | None = None
    ) -> str | None:
        """Return the injected system text (see ``SummaryEngine.build_prompt``).

        With ``model`` named, the call runs in a worker thread: the first use of an
        encoding loads its vocabulary, which must not stall the loop.
        """
        if self._local and model is None:
            return self.engine.build_prompt(session_id)
        return await asyncio.to_thread(self.engine.build_prompt, session_id, model)

    async def assemble(
        self,
        messages: Iterable[Message],
        session_id: str,
        *,
        repair: Repair = True,
        placement: Placement = "separate",
        model: str | None = None,
    ) -> list[Message]:
        """Return ``messages`` ready for the provider (``SummaryEngine.assemble``)."""
        if self._local and model is None:
            return self.engine.assemble(
                messages, session_id, repair=repair, placement=placement
            )
        return await asyncio.to_thread(
            self.engine.assemble,
            list(messages),
            session_id,
            repair=repair,
            placement=placement,
            model=model,
        )

    async def resummarize(self, session_id: str) -> Outcome:
        """Fold ranges archived without a summary into it (``SummaryEngine``)."""
        return await asyncio.wrap_future(self.engine.resummarize(session_id))

    async def drop_native(self, session_id: str, reason: str = "") -> bool:
        """Drop a refused native artifact (``SummaryEngine.drop_native``)."""
        return await asyncio.to_thread(self.engine.drop_native, session_id, reason)

    async def forget(self, session_id: str) -> int:
        """Erase everything of a session (see ``SummaryEngine.forget``)."""
        return await asyncio.to_thread(self.engine.forget, session_id)

    async def usage(self, session_id: str | None = None) -> SummarizerUsage:
        """Return summarizer usage of a session or all (``SummaryEngine.usage``)."""
        return await asyncio.to_thread(self.engine.usage, session_id)

    async def search_history(
        self,
        session_id: str,
        query: str,
        *,
        limit: int = 10,
        archived_only: bool = False,
    ) -> list[SearchHit]:
        """Search the session's whole history (``SummaryEngine.search_history``).

        Runs in a worker thread: a search reads the store's index.
        """
        return await asyncio.to_thread(
            self.engine.search_history,
            session_id,
            query,
            limit=limit,
            archived_only=archived_only,
        )

    async def read_history(
        self, session_id: str, around_id: int, *, before: int = 3, after: int = 3
    ) -> list[HistoryEntry]:
        """Return a message and its neighbours (``SummaryEngine.read_history``)."""
        return await asyncio.to_thread(
            self.engine.read_history,
            session_id,
            around_id,
            before=before,
            after=after,
        )

    async def read_history_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int = 50
    ) -> list[HistoryEntry]:
        """Return an id range of messages (``SummaryEngine.read_history_range``)."""
        return await asyncio.to_thread(
            self.engine.read_history_range,
            session_id,
            first_id,
            last_id,
            limit=limit,
        )

    async def summary_history(self, session_id: str) -> list[SummaryVersion]:
        """Return the session's summaries (``SummaryEngine.summary_history``)."""
        return await asyncio.to_thread(self.engine.summary_history, session_id)

    async def assemble_openai(
        self, messages: Iterable[OpenAIMessage], session_id: str, **options: Any
    ) -> list[dict[str, object]]:
        """Return OpenAI-format messages with the summary injected, as dicts.

        See ``SummaryEngine.assemble_openai``; ``options`` go to ``assemble``.
        """
        if self._local:
            return self.engine.assemble_openai(messages, session_id, **options)
        return await asyncio.to_thread(
            self.engine.assemble_openai, list(messages), session_id, **options
        )

    def recall_tools(self, *, compaction: bool = True) -> list[dict[str, object]]:
        """Return the recall tools' definitions (``SummaryEngine.recall_tools``)."""
        return self.engine.recall_tools(compaction=compaction)

    async def call_recall_tool(self, session_id: str, tool_call: object) -> Message:
        """Run one recall tool call in a worker thread; return the tool message.

        See ``SummaryEngine.call_recall_tool``: a search reads the store and counts
        tokens, so it never runs on the event loop.
        """
        return await asyncio.to_thread(
            self.engine.call_recall_tool, session_id, tool_call
        )

    async def clear(
        self,
        scope: Scope = "session",
        session_id: str | None = None,
        types: Collection[str] | None = None,
    ) -> list[ClearResult]:
        """Clear summaries (see ``SummaryEngine.clear``)."""
        return await asyncio.to_thread(self.engine.clear, scope, session_id, types)

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no compression runs or is queued, without blocking the loop."""
        return await asyncio.to_thread(self.engine.wait_idle, timeout)

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Register an event callback (it runs on the engine's threads)."""
        return self.engine.subscribe(callback)

    async def stop(self, timeout: float = 10.0) -> bool:
        """Stop the engine without blocking the loop."""
        return await asyncio.to_thread(self.engine.stop, timeout)

    # -- Anthropic's Messages format ---------------------------------------------------

    async def assemble_anthropic(
        self,
        system: AnthropicSystem,
        messages: Iterable[Mapping[str, object] | object],
        session_id: str,
        **options: Any,
    ) -> tuple[AnthropicSystem, list[dict[str, object]]]:
        """Return ``(system, messages)`` with the summary merged into ``system``.

        See ``SummaryEngine.assemble_anthropic``; ``options`` go to ``assemble``.
        """
        if self._local and options.get("model") is None:
            return self.engine.assemble_anthropic(
                system, messages, session_id, **options
            )
        return await asyncio.to_thread(
            self.engine.assemble_anthropic,
            system,
            list(messages),
            session_id,
            **options,
        )


class AsyncConversation:
    """``Conversation`` with awaitable calls, each one worker-thread hop.

    ``prepare`` saves, reads and assembles in that one hop; ``record`` saves the
    reply, answers recall tools and reports the turn in it; ``add`` saves in it.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.session_id = conversation.session_id
        self.model = conversation.model

    def __repr__(self) -> str:
        return f"Async{self.conversation!r}"

    async def prepare(
        self,
        user: str | Message | object | None = None,
        *,
        system: str | AnthropicSystem = None,
        format: RequestFormat = "openai",
    ) -> list[dict[str, object]] | dict[str, object]:
        """Save the user's message and return the request (``Conversation.prepare``)."""
        return await asyncio.to_thread(
            self.conversation.prepare, user, system=system, format=format
        )

    async def record(self, reply: object, *, usage: object = None) -> Recorded:
        """Save the reply, report the turn (``Conversation.record``)."""
        return await asyncio.to_thread(self.conversation.record, reply, usage=usage)

    async def add(self, *messages: object) -> list[Message]:
        """Save messages the host produced (``Conversation.add``)."""
        return await asyncio.to_thread(self.conversation.add, *messages)
