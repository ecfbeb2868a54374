"""One session's turn in two calls: ``prepare`` the request, ``record`` the reply.

``SummaryEngine.conversation(session_id)`` returns a ``Conversation``: a light handle
(making one does no I/O) that stores what the turn adds and builds each request with
the summary injected, so a plain chat server's turn is::

    chat = engine.conversation("alice")
    request = chat.prepare("What did we decide?", system="You are helpful.")
    reply = client.chat.completions.create(model="gpt-4o", messages=request)
    chat.record(reply)  # saves it, reads its usage, compresses in the background

A turn's work does not grow with the active history: the engine keeps each recently
prepared session's active messages and their OpenAI dicts (``Transcripts``), appends
what the handle saves, and reads the history again only when the store's
``ActiveSpan`` is not the one its own saves lead to (another writer saved or popped);
a span (with an id sum) of the newest messages it holds tells a compression that
archived the others, which are dropped unread (``Transcript.archived_to``). The
request of a session whose history is plain (no stored instruction or summary, no
masking, tool results next to their calls in the calls' order; for Anthropic, no
group of calls half answered) is built from what the transcript keeps: the OpenAI
dicts, the Anthropic turns (each closed turn built once) or the Responses items
(each message's built once); any other request goes through ``assemble``, the same
rules either way, and a property test holds the two equal.

A retried turn: ``prepare(text)`` saves ``text``; when the model call fails and the
host tries again, ``prepare()`` (no message) builds the same request without saving
the user's message twice.

(About 705 lines: the handle's three calls and the four ways a request is built.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Literal, Protocol, cast

import attrs

from memory_summary.domain import (
    NAMESPACE,
    ActiveSpan,
    AnthropicSystem,
    CompressionStore,
    EngineClosed,
    MalformedRecord,
    Message,
    PartiallySaved,
    Placement,
    Repair,
    SpanningStore,
    SpanRecordStore,
    SummaryConfig,
    SummaryRecord,
    TokenUsage,
    ToolCall,
    anthropic_pairs,
    assemble_messages,
    clear_old_thinking,
    messages_to_anthropic,
    summary_message,
    with_block_first,
)
from memory_summary.domain.capabilities import StoreCapabilities
from memory_summary.domain.injection import InjectedTest
from memory_summary.domain.measure import known_context_tokens, usage_ratio
from memory_summary.domain.native import (
    ANTHROPIC_PROVIDER,
    OPENAI_PROVIDER,
    NativeArtifact,
)
from memory_summary.domain.recall_tools import TOOL_NAMES as RECALL_TOOL_NAMES
from memory_summary.domain.replies import (
    compaction_usage,
    host_messages,
    host_system,
    read_reply,
    read_usage_tokens,
    system_message,
    unsaved,
    user_message,
)

from .batch import save_batch
from .coverage import active_coverage, reaches_history, trusted_coverage
from .recall_tools import HeldCompactions, RecallSource
from .response_items import host_items, items_of, read_response
from .transcripts import Transcript, Transcripts

log = logging.getLogger(__name__)


class TurnHost(RecallSource, Protocol):
    """What a ``Conversation`` uses of its ``SummaryEngine`` (which satisfies it)."""

    memory: CompressionStore
    config: SummaryConfig
    _transcripts: Transcripts
    _store_can: StoreCapabilities

    def _check_open(self) -> None: ...

    def _injection(
        self, session_id: str, model: str | None, provider: str | None = None
    ) -> tuple[str | None, int | None, NativeArtifact | None]: ...

    def _injection_of(
        self,
        session_id: str,
        model: str | None,
        provider: str | None,
        record: SummaryRecord | None,
    ) -> tuple[str | None, int | None, NativeArtifact | None]: ...

    def _injected_test(
        self, session_id: str, now: Callable[[], Collection[str]]
    ) -> InjectedTest: ...

    def _read_record(
        self, session_id: str, data: dict[str, object] | None
    ) -> SummaryRecord | None: ...

    def _note_request(
        self,
        session_id: str,
        system: AnthropicSystem,
        tools: Iterable[Mapping[str, object]] | None = None,
    ) -> None: ...

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
    ) -> list[Message]: ...

    def _recall(
        self, session_id: str, tool_call: object, source: RecallSource
    ) -> Message: ...

    def _turn_ended(
        self, session_id: str, model: str | None, active: int | None
    ) -> None: ...

    def token_usage(self, session_id: str, usage_ratio: float) -> None: ...

    def _account_compaction(self, session_id: str, usage: TokenUsage) -> None: ...


__all__ = ["Conversation", "Recorded", "RequestFormat", "TurnHost"]

RequestFormat = Literal["openai", "anthropic", "responses"]
_FORMATS = ("openai", "anthropic", "responses")


@attrs.frozen
class Recorded:
    """What ``Conversation.record`` stored, and what is left for the host.

    Attributes:
        reply: the model's reply as stored (with its id); of a Responses API
            ``Response``, the message of its text (or refusal), else its first
            tool call.
        answered: the recall tool results the library answered and stored, in the
            order of the reply's calls.
        pending: the reply's tool calls the host must run, then ``add`` their
            results and ``prepare`` the next request.
        output: every message the reply stored, in order: ``(reply,)``, or a
            ``Response``'s output items, one message each (reasoning, text, each
            function call).
    """

    reply: Message
    answered: tuple[Message, ...] = ()
    pending: tuple[ToolCall, ...] = ()
    output: tuple[Message, ...] = attrs.field(
        default=attrs.Factory(lambda self: (self.reply,), takes_self=True),
        kw_only=True,
    )

    @property
    def needs_model(self) -> bool:
        """Tell whether the model must be asked again before the turn ends.

        True when the reply called tools: the library's (answered here) or the
        host's (``pending``, to answer with ``add``).
        """
        return any(message.tool_calls for message in self.output)


def _check_format(format: object) -> RequestFormat:
    if format not in _FORMATS:
        raise ValueError(
            f"format={format!r} is invalid; allowed: 'openai' / 'anthropic' / "
            "'responses'"
        )
    return format  # type: ignore[return-value]


class Conversation:
    """One session of a chat server, a turn at a time (``SummaryEngine.conversation``).

    Making one does no I/O; make one per request or keep it. Each call runs on the
    caller's thread and never waits for a summarizer; ``AsyncSummaryEngine`` gives
    the same calls as awaitables, one worker-thread hop each.

    Args:
        engine: the engine that owns the session.
        session_id: the session.
        model: the chat model the session talks to: the summary is cut to its
            budget in that model's encoding, and a reply's usage becomes a context
            ratio with its window. None: the model a reply names.
        answer_recall_tools: answer the model's calls of the library's recall tools
            (``search_history``, ``read_history``, ``compact_context``) in
            ``record``; False leaves every tool call to the host.
    """

    def __init__(
        self,
        engine: TurnHost,
        session_id: str,
        *,
        model: str | None = None,
        answer_recall_tools: bool = True,
    ) -> None:
        self._engine = engine
        self.session_id = session_id
        self.model = model
        self._answer_recall = answer_recall_tools

    def __repr__(self) -> str:
        return f"Conversation({self.session_id!r}, model={self.model!r})"

    # -- the turn

    def prepare(
        self,
        user: str | Message | object | None = None,
        *,
        system: str | AnthropicSystem | None = None,
        format: RequestFormat = "openai",
    ) -> list[dict[str, object]] | dict[str, object]:
        """Save the user's message (when given) and return the request to send.

        Args:
            user: the user's new message: text, a ``Message`` or an OpenAI (or
                Anthropic) user message dict; None sends the history as it is (the
                next call of a tool loop).
            system: the host's system prompt; never stored. The summary is merged
                into it (after it, so a prompt cache keeps its prefix; one an
                earlier request merged is replaced, a text that merely holds the
                summary header is the host's and kept). A blank
                prompt (whitespace alone) is no prompt, in every format, and
                Anthropic system blocks go without their blank text blocks (which
                the API refuses).
            format: ``"openai"``: chat completion dicts ``[system with the summary,
                *history]``; ``"anthropic"``: ``{"system": ..., "messages": [...]}``
                to pass as ``client.messages.create(model=..., max_tokens=...,
                **request)``; ``"responses"``: the Responses API's input items
                (a summary made by ``OpenAICompactingLLM`` goes as its
                ``compaction`` item, after the system items, when the request goes
                to the model that made it; ``drop_native`` when the API refuses it).
                A recorded ``Response``'s ``reasoning``, ``web_search_call`` and
                other items with no chat meaning go only in ``"responses"``: the
                other formats leave them out (they stay stored).

        Nothing is saved when the message is malformed or the store fails; the
        request is built after the save, from what the store holds. The list (the
        Anthropic request's ``messages`` list) is the caller's; the history's
        dicts, Anthropic turns and Responses items in it are shared with the next
        turns' requests (building them anew would cost every turn the whole
        history): send them as they are, or deep-copy one (``copy.deepcopy``) to
        change it.

        Raises:
            MessageError: ``user`` is not a user message (an Anthropic user turn
                of tool results is several: ``add`` them), is empty, is a summary
                the engine injected, or is already stored (a retried turn calls
                ``prepare()`` without it).
            ValueError: an unknown ``format``.
            StoreError: the store failed (the message was not saved).
            EngineClosed: after ``stop()``.
        """
        engine = self._engine
        engine._check_open()
        kind = _check_format(format)
        message = (
            None if user is None else self._unsaved([user_message(user)], "user")[0]
        )
        head = system_message(system)
        if kind == "anthropic":  # a native summarizer sends the session's system
            engine._note_request(  # tools: those remembered
                self.session_id, None if head is None else host_system(system)
            )
        transcript = self._transcript()
        with transcript.lock:
            read, record = self._sync(transcript)
            provider = _PROVIDERS.get(kind)
            if not read:
                text, covered, native = engine._injection(
                    self.session_id, self.model, provider
                )
            else:
                text, covered, native = engine._injection_of(
                    self.session_id, self.model, provider, record
                )
            block = None if native is None else native.block
            earlier = engine._injected_test(self.session_id, lambda: _texts(text))
            if message is not None:
                saved = engine.memory.save_message(self.session_id, message)
                transcript.extend([saved])
                # read before the save, the summary cannot cover the saved message
                if saved.id is not None:
                    covered = trusted_coverage(covered, saved.id - 1, self.session_id)
            if reaches_history(transcript.messages, covered):  # never an active one
                covered = active_coverage(engine.memory, self.session_id, covered)
            if self._is_plain(transcript, covered):
                if kind == "openai":
                    return self._plain_request(head, text, transcript, earlier)
                if kind == "responses":
                    lead = _with_item(items_of(_lead(head, text, earlier)), native)
                    return lead + transcript.response_items()
                if transcript.settled:
                    return self._plain_anthropic(
                        _lead(head, text, earlier), transcript, block
                    )
            history = list(transcript.messages)
        return self._request(kind, head, text, earlier, covered, history, native)

    def record(self, reply: object, *, usage: object = None) -> Recorded:
        """Save the model's reply; report its usage; answer the library's tool calls.

        ``reply`` is what the host holds: an OpenAI ``ChatCompletion`` or its
        message, a Responses API ``Response``, an Anthropic ``Message``, any as a
        dict, or a ``Message``. A ``Response``'s output items are stored one message
        each, kept verbatim for ``prepare(format="responses")`` (``reasoning`` and
        other items as ``openai_agents.SummarySession`` stores them; its function
        calls are the reply's tool calls, a ``custom_tool_call`` one of type
        ``"custom"``: answer a call that is not a function's with its own output
        item, ``add({"type": "custom_tool_call_output", ...})``; ``Recorded.output``
        lists them all).
        Its usage (or ``usage``: the provider's usage object or an int of tokens;
        a ``Response``'s ``input_tokens``)
        over the model's window (``context_window``, else the well-known windows)
        is reported as ``token_usage`` does (Anthropic: the last sampling
        iteration's), and the turn as ``turn_after`` does; the tokens of a
        server-side compaction the usage lists (``usage.iterations`` entries of type
        ``compaction``) are added to the session's summarizer usage (``usage()``,
        ``usage_by_session()``; one more provider-reported call). A compression,
        when due, runs in the background. Recall tool calls are answered and their
        results saved with the reply, in one batch.

        Raises:
            MessageError: ``reply`` cannot be read, is not the assistant's, is
                empty (no text, tool call or refusal; thinking alone is empty) or
                is a ``Message`` already stored (it has an id) or the engine's
                injected summary; nothing is saved.
            StoreError: the store failed; nothing of the turn was saved. Every
                store this library ships saves the turn's messages in one
                transaction (``save_messages``).
            PartiallySaved: a ``StoreError`` of a store without ``save_messages``
                (one message at a time) that failed midway: ``saved`` lists the
                messages it stored (with their ids), ``unsaved`` the rest; do not
                record the reply again (that would store ``saved`` twice):
                ``add(*error.unsaved)`` completes the turn. The turn and its
                usage are reported as for a whole reply; a compaction a recall
                call asked for is not started: call ``compress()`` after
                ``add(*error.unsaved)``.
            EngineClosed: ``stop()`` began before the save; nothing is saved. A
                ``stop()`` that begins once the reply is saved is no failure:
                ``record`` returns what it stored, and the turn and its usage go
                unreported (logged at INFO; nothing compresses after ``stop()``),
                so a host never stores a reply twice by retrying.
        """
        engine = self._engine
        engine._check_open()
        read = read_response(reply) or read_reply(reply)
        tokens = read.context_tokens if usage is None else read_usage_tokens(usage)
        output = self._unsaved(list(read.output), "reply")
        model = self.model or read.model
        calls = [call for message in output for call in message.tool_calls]
        ours, pending = self._split_calls(calls)
        source = HeldCompactions(engine)
        answers = [engine._recall(self.session_id, call, source) for call in ours]
        engine._check_open()  # a stop() that began meanwhile: nothing is saved
        compaction = read.compaction if usage is None else compaction_usage(usage)
        try:
            saved, active = self._save([*output, *answers])
        except PartiallySaved:  # part of the turn is stored: its usage counts; the
            # held compactions are not asked for (the batch is not whole)
            try:
                self._reported(model, None, tokens, compaction)
            except Exception:  # the host must still learn what was saved
                log.warning(
                    "session %s: the partly saved turn was not reported",
                    self.session_id,
                    exc_info=True,
                    extra={"session_id": self.session_id},
                )
            raise
        self._reported(model, active, tokens, compaction, source)
        main = next(i for i, message in enumerate(output) if message is read.message)
        return Recorded(
            saved[main],
            tuple(saved[len(output) :]),
            tuple(pending),
            output=tuple(saved[: len(output)]),
        )

    def _reported(
        self,
        model: str | None,
        active: int | None,
        tokens: int | None,
        compaction: TokenUsage | None,
        source: HeldCompactions | None = None,
    ) -> None:
        """Account a stored reply: the server's compaction, held calls, the turn."""
        engine = self._engine
        if compaction is not None:  # the server summarized: the summarizer's tokens
            # before a compression may start (held calls, the turn), not to fence it
            engine._account_compaction(self.session_id, compaction)
        if source is not None:
            source.release()
        try:
            self._report_turn(model, active, tokens)
        except EngineClosed:  # the reply is stored: a host that retried would store
            # it twice; nothing compresses after stop(), so nothing is lost either
            log.info(
                "session %s: the engine stopped once the reply was saved; "
                "the turn was not reported",
                self.session_id,
                extra={"session_id": self.session_id},
            )

    def _report_turn(
        self, model: str | None, active: int | None, tokens: int | None
    ) -> None:
        """Report the saved turn and its usage (``turn_after``, ``token_usage``).

        Raises:
            EngineClosed: ``stop()`` began since the save.
        """
        engine = self._engine
        engine._turn_ended(self.session_id, model, active)
        window = engine.config.window_for(model) or (
            known_context_tokens(model) if model else None
        )
        if tokens is not None and window:
            engine.token_usage(self.session_id, usage_ratio(tokens, window))

    def add(self, *messages: object) -> list[Message]:
        """Save messages the host produced (tool results, any other); return them.

        Each is a ``Message``, an OpenAI chat message, an Anthropic message dict
        (a user turn of ``tool_result`` blocks becomes one tool message each) or a
        Responses API item (``{"type": "custom_tool_call_output", "call_id": ...,
        "output": ...}``: the answer of a call that is not a function's, which
        ``prepare(format="responses")`` sends as given; a ``{"role": "tool"}``
        answer goes as a ``function_call_output``). All are checked before any is
        saved, and saved in one batch.

        Raises:
            MessageError: a message is malformed, is a summary the engine
                injected (also merged into the host's system prompt, as
                ``prepare(system=...)`` returns it; told by its text, the current
                summary or a kept earlier one, whole or cut, so a host's note
                that merely holds the header is stored) or is already stored (it
                has an id); nothing is saved.
            StoreError: the store failed; nothing is saved.
            PartiallySaved: a store without ``save_messages`` failed midway; the
                error lists the messages saved and the rest (``record``).
        """
        self._engine._check_open()
        given = host_messages(host_items(messages))
        return self._save(self._unsaved(given, "messages"))[0]

    # -- the parts

    def _unsaved(self, messages: list[Message], where: str) -> list[Message]:
        """``unsaved``, telling the summary the engine injected by its exact text.

        The texts compared are the ones this handle's requests get now, in each
        format (a native summary's Anthropic and Responses text is its pinned facts
        alone), and the session's summaries (``summary_history``), whole or cut:
        read only for a system message holding the header.
        """
        if not any(message.is_instruction for message in messages):
            return unsaved(messages, where)  # only a system text is ever tested
        engine, sid = self._engine, self.session_id

        def now() -> tuple[str, ...]:
            texts = (engine._injection(sid, self.model, p)[0] for p in _ALL_PROVIDERS)
            return tuple(dict.fromkeys(text for text in texts if text is not None))

        return unsaved(messages, where, engine._injected_test(sid, now))

    def _split_calls(
        self, calls: Sequence[ToolCall]
    ) -> tuple[list[ToolCall], list[ToolCall]]:
        if not self._answer_recall:
            return [], list(calls)
        ours = [call for call in calls if call.name in RECALL_TOOL_NAMES]
        return ours, [call for call in calls if call.name not in RECALL_TOOL_NAMES]

    def _save(self, messages: list[Message]) -> tuple[list[Message], int | None]:
        """Save ``messages`` in one batch; return them and the active count if known."""
        if not messages:
            return [], None
        engine, sid = self._engine, self.session_id
        at_once = engine._store_can.saves_batches
        transcript = engine._transcripts.get(sid)
        if transcript is None:
            return save_batch(engine.memory, sid, messages, at_once=at_once), None
        with transcript.lock:
            try:
                saved = save_batch(engine.memory, sid, messages, at_once=at_once)
            except PartiallySaved as exc:
                transcript.extend(exc.saved)  # stored: the next request holds them
                raise
            transcript.extend(saved)
            return saved, transcript.span.count

    def _transcript(self) -> Transcript:
        transcripts = self._engine._transcripts
        found = transcripts.get(self.session_id)
        if found is None:
            found = Transcript.of(self._engine.memory.get_history(self.session_id))
            transcripts.put(self.session_id, found)
        return found

    def _sync(self, transcript: Transcript) -> tuple[bool, SummaryRecord | None]:
        """Read the history again unless the store holds what the saves led to.

        A span that is what remains of the transcript once a compression archived
        its oldest messages (``Transcript.archived_to``) needs no read either: the
        archived ones are dropped.

        Return True and the summary record when it was read with the span (one
        statement, ``SpanRecordStore``) and the transcript is current: both as they
        were at one moment. Else False: the record is to be read after the history,
        so that a compression committed in between is seen in the record (the
        request leaves out what it covers), never in the history alone.
        """
        engine, sid = self._engine, self.session_id
        store, can = engine.memory, engine._store_can
        if can.reads_span_record:
            try:
                span, data = cast(SpanRecordStore, store).span_and_metadata(
                    sid, NAMESPACE
                )
            except MalformedRecord:  # read apart: the record reads as none, logged
                pass
            else:
                if self._current(transcript, span) or transcript.archived_to(span):
                    return True, engine._read_record(sid, data)
                transcript.replace(Transcript.of(store.get_history(sid)))
                return _UNREAD
        if can.spans:
            span = cast(SpanningStore, store).active_span(sid)
            if self._current(transcript, span) or transcript.archived_to(span):
                return _UNREAD
        transcript.replace(Transcript.of(store.get_history(sid)))
        return _UNREAD

    def _current(self, transcript: Transcript, span: ActiveSpan) -> bool:
        """Tell whether the store's ``span`` says ``transcript`` is still current.

        A span without an id sum is proven by the few messages the handle saved
        since it was last seen (``Transcript.unproven``): one short read.
        """
        if not span.matches(transcript.span):
            return False
        if transcript.unproven(span):
            after = self._engine.memory.get_oldest_history(
                self.session_id,
                len(transcript.saved_since) + 1,
                after_id=transcript.read_last,
            )
            return transcript.proven(after)
        transcript.seen()
        return True

    def _is_plain(self, transcript: Transcript, covered: int | None) -> bool:
        if not transcript.plain or self._engine.config.mask_tool_results_after:
            return False
        first = transcript.messages[0].id if transcript.messages else None
        return covered is None or first is None or first > covered

    def _plain_request(
        self,
        head: Message | None,
        text: str | None,
        transcript: Transcript,
        earlier: InjectedTest,
    ) -> list[dict[str, object]]:
        key = (None if head is None else head.content, text)
        if not (key[0] is None or isinstance(key[0], str)):  # blocks: built each time
            lead = _lead(head, text, earlier)
            return [m.to_openai() for m in lead] + transcript.dicts
        if transcript.lead is None or transcript.lead[0] != key:
            made = [m.to_openai() for m in _lead(head, text, earlier)]
            transcript.lead = (key, made)
        lead_dicts = [dict(made) for made in transcript.lead[1]]  # the caller's
        return lead_dicts + transcript.dicts  # a new list

    def _plain_anthropic(
        self,
        lead: list[Message],
        transcript: Transcript,
        block: Mapping[str, object] | None,
    ) -> dict[str, object]:
        system, _ = messages_to_anthropic(lead)
        keep = self._engine.config.anthropic_keep_thinking_turns
        turns = transcript.anthropic_turns()  # a new list of the shared turns
        if keep is not None:  # None keeps every turn's thinking: nothing to clear
            turns = clear_old_thinking(turns, keep)  # (or to copy, turn by turn)
        return _anthropic_request(system, turns, block)

    def _request(
        self,
        kind: RequestFormat,
        head: Message | None,
        text: str | None,
        earlier: InjectedTest,
        covered: int | None,
        history: list[Message],
        native: NativeArtifact | None = None,
    ) -> list[dict[str, object]] | dict[str, object]:
        given = history if head is None else [head, *history]
        engine = self._engine
        block = None if native is None else native.block
        if kind == "anthropic":
            assembled = engine._assembled(
                given, text, covered, False, "merge", earlier, chat=True
            )
            system, messages = messages_to_anthropic(
                anthropic_pairs(assembled, True), alternate=True
            )
            keep = engine.config.anthropic_keep_thinking_turns
            return _anthropic_request(system, clear_old_thinking(messages, keep), block)
        chat = kind != "responses"  # only the Responses API reads its own items
        assembled = engine._assembled(
            given, text, covered, True, "merge", earlier, chat=chat
        )
        if not chat:
            return _with_item(items_of(assembled), native)
        return [message.to_openai() for message in assembled]


def _texts(text: str | None) -> tuple[str, ...]:
    """Return the injected ``text`` a request gets, as ``_injected_test`` takes it."""
    return () if text is None else (text,)


def _lead(
    head: Message | None, text: str | None, earlier: InjectedTest
) -> list[Message]:
    """Return the host's system prompt with the summary merged into it.

    A summary an earlier request merged into it (the host passed that prompt back)
    is replaced; a host's text that merely holds the header is kept.
    """
    return assemble_messages(
        [] if head is None else [head],
        None if text is None else summary_message(text),
        "merge",
        earlier,
    )


_UNREAD: tuple[bool, None] = (False, None)
"""``Conversation._sync`` read no summary record: ``_injection`` reads it."""

_PROVIDERS: Mapping[str, str] = {
    "anthropic": ANTHROPIC_PROVIDER,
    "responses": OPENAI_PROVIDER,
}
_ALL_PROVIDERS = (None, ANTHROPIC_PROVIDER, OPENAI_PROVIDER)


def _with_item(
    items: list[dict[str, object]], native: NativeArtifact | None
) -> list[dict[str, object]]:
    """Return Responses ``items`` with OpenAI's compaction output after the lead.

    The output (the user messages OpenAI returned, then the compaction item) takes
    the place of the summary text (the system or developer items first keep what
    the text adds: its pinned facts), before the history.
    """
    if native is None:
        return items
    lead = 0
    while lead < len(items) and items[lead].get("role") in ("system", "developer"):
        lead += 1
    return [*items[:lead], *native.items, *items[lead:]]


def _anthropic_request(
    system: AnthropicSystem,
    turns: list[dict[str, object]],
    block: Mapping[str, object] | None,
) -> dict[str, object]:
    """Return ``{"system", "messages"}``; a native summary's block goes first."""
    request: dict[str, object] = {
        "messages": turns if block is None else with_block_first(block, turns)
    }
    if system is not None:
        request["system"] = system
    return request
