"""Which summarizer and model a compression uses, resolved once per model and cached.

seed: ``global`` uses the host's default LLM; ``custom`` the ``summary_llm`` provider
and model; ``session`` the model the session's last turn used (on the default LLM).

Resolving may ask the endpoint for its context length and load a tokenizer, so it
happens on the engine's threads; the host's threads only ``peek`` at what is known.
"""

from __future__ import annotations

import inspect
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from memory_summary.domain import (
    Backoff,
    Message,
    NativeRequest,
    Summarizer,
    SummarizerError,
    SummarizerTimeout,
    SummaryConfig,
    SummaryReply,
    TokenUsage,
    backoff_failed,
    backoff_is_due,
)
from memory_summary.domain.capabilities import (
    SummarizerCapabilities,
    summarizer_capabilities,
)

log = logging.getLogger(__name__)

CountTokensFor = Callable[[str | None], Callable[[str], int]]
REPLY_CHARS_PER_TOKEN = 16
"""A reply longer than ``max_tokens`` x this many characters is cut off unread: no
tokenizer packs that much text into a token, so the model ignored its budget."""
MIN_REPLY_CHARS = 65_536


class CallHandle:
    """Lets the thread that waits for a summarizer call close its stream.

    The calling thread registers the stream's ``close``; the waiting thread calls
    ``close()`` when the deadline passes, which frees the HTTP connection and makes the
    blocked read fail. Either order is safe.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closer: Callable[[], object] | None = None
        self._closed = False
        self.startup_s = 0.0
        """Seconds the call spent while the summarizer started (a worker process):
        set by the calling thread, read once its answer is in."""

    def register(self, closer: Callable[[], object] | None) -> None:
        """Remember how to close the call; close at once if already abandoned."""
        with self._lock:
            self._closer = closer
            closed = self._closed
        if closed:
            _close_quietly(closer)

    @property
    def closed(self) -> bool:
        """Tell whether the waiting side gave up on the call."""
        return self._closed

    def close(self) -> None:
        """Give up on the call and close its stream if it has one."""
        with self._lock:
            self._closed = True
            closer = self._closer
        _close_quietly(closer)


def _close_quietly(closer: Callable[[], object] | None) -> None:
    if closer is None:
        return
    try:
        closer()
    except Exception:  # closing an abandoned stream must never raise into the engine
        log.debug("closing an abandoned summarizer stream failed", exc_info=True)


@attrs.frozen
class Unresolved:
    """No summarizer matches the configuration: ``reason`` says why (no retry helps)."""

    reason: str


@attrs.frozen
class ResolvedModel:
    """A summarizer ready to call: which LLM, which model, how to count its tokens."""

    llm: Summarizer = attrs.field(eq=False)
    model: str | None
    label: str
    context_length: int | None
    count_tokens: Callable[[str], int] = attrs.field(eq=False)
    streams: bool
    takes_timeout: bool = False
    reports_usage: bool = False
    compacts: bool = False
    """The summarizer folds natively (``NativeSummarizer``): ``call`` with a
    ``NativeRequest`` uses ``compact``."""
    starts: bool = False
    """The summarizer says how long it spent starting (``StartingSummarizer``):
    ``call`` puts a call's share in ``CallHandle.startup_s``."""
    usage_tokens: Callable[[str], int] | None = attrs.field(
        default=None, eq=False, kw_only=True
    )
    """How to count a call's usage when the provider reports none, if not exactly:
    an estimate (never fewer), used when no budget depends on the figure."""

    def call(
        self,
        request: Sequence[Message],
        max_tokens: int,
        temperature: float,
        deadline: float,
        handle: CallHandle,
        native: NativeRequest | None = None,
    ) -> SummaryReply:
        """Return the summarizer's whole answer; a broken stream yields nothing.

        With ``native`` (and a ``NativeSummarizer``) the range is folded by the
        provider's own compaction, never streamed.

        The reply carries the provider's usage when the summarizer reports it (a
        ``UsageReportingSummarizer``, or a stream with a ``usage`` attribute).

        Raises:
            SummarizerError: the call failed (the partial text, if any, is discarded).
            SummarizerTimeout: the stream ran past ``deadline`` (monotonic seconds).
        """
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if self.takes_timeout:
            kwargs["timeout_s"] = max(deadline - time.monotonic(), 0.001)
        cap = max(max_tokens * REPLY_CHARS_PER_TOKEN, MIN_REPLY_CHARS)
        started = self._startup_s()
        try:
            if native is not None and self.compacts:
                reply = self.llm.compact(  # type: ignore[attr-defined]
                    native,
                    model=self.model,
                    max_tokens=max_tokens,
                    timeout_s=max(deadline - time.monotonic(), 0.001),
                )
                return attrs.evolve(reply, text=reply.text[:cap])
            if not self.streams:
                if self.reports_usage:
                    reply = self.llm.complete_with_usage(  # type: ignore[attr-defined]
                        request, **kwargs
                    )
                    return SummaryReply(reply.text[:cap], _usage_of(reply))
                return SummaryReply(self.llm.complete(request, **kwargs)[:cap])
            pieces = self.llm.stream(request, **kwargs)  # type: ignore[attr-defined]
            handle.register(getattr(pieces, "close", None))
            text = _join_before(pieces, deadline, cap, handle)
            return SummaryReply(text, _usage_of(pieces))
        except SummarizerError:
            raise
        except Exception as exc:  # any provider failure is an expected outcome here
            if handle.closed:
                raise SummarizerTimeout(
                    "the summary call was closed at its deadline"
                ) from exc
            raise SummarizerError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            handle.startup_s = self._startup_s() - started

    def _startup_s(self) -> float:
        """Return the seconds this thread's calls spent starting the summarizer.

        0 when it never says, or says something that is not finite seconds: a host's
        summarizer with a ``startup_s`` of its own meaning never breaks a call.
        """
        if not self.starts:
            return 0.0
        seconds = getattr(self.llm, "startup_s", 0.0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            return 0.0
        try:
            value = float(seconds)
        except OverflowError:  # an int past any float
            return 0.0
        return value if math.isfinite(value) and value >= 0 else 0.0


def _usage_of(source: object) -> TokenUsage | None:
    """Return the provider usage ``source`` carries, if it is a well-formed one."""
    usage = getattr(source, "usage", None)
    return usage if isinstance(usage, TokenUsage) else None


def _join_before(
    pieces: Iterator[str], deadline: float, cap: int, handle: CallHandle
) -> str:
    """Join a stream's pieces until ``deadline`` (monotonic) or ``cap`` characters."""
    joined: list[str] = []
    size = 0
    for piece in pieces:
        if time.monotonic() > deadline or handle.closed:
            handle.close()
            raise SummarizerTimeout("the summary stream ran past its deadline")
        joined.append(piece)
        size += len(piece)
        if size >= cap:  # the model ignored its budget: stop reading, free the server
            handle.close()
            log.warning("summary reply cut off at %d characters", size)
            break
    return "".join(joined)[:cap]


def label_for(
    llm: Summarizer, model: str | None, can: SummarizerCapabilities | None = None
) -> str:
    """Return how a summary's origin is reported: a non-LLM's label, else the model.

    ``can``: what ``llm`` can do, as decided when wiring (None: decide now).
    """
    can = summarizer_capabilities(llm) if can is None else can
    if can.label is not None:
        return can.label
    return model or can.model or type(llm).__name__


def _takes_timeout(llm: Summarizer, streams: bool) -> bool:
    method = getattr(llm, "stream" if streams else "complete", None)
    try:
        return "timeout_s" in inspect.signature(method).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


class ModelResolver:
    """Resolves the summary model of a session, caching context lengths per model.

    ``resolve`` may block (an HTTP call, a tokenizer load): the engine calls it on its
    own threads. ``peek`` never blocks: it returns what is cached, or None.

    When ``context_length`` fails (the endpoint is down), the model resolves with an
    unknown length, and the endpoint is asked again only after a back-off
    (``domain.backoff``: 1 s, 2 s, 4 s ... at most 300 s): until then ``resolve``
    and ``peek`` answer with that fallback, and ``is_due`` says no.
    """

    def __init__(
        self,
        config: SummaryConfig,
        default: Summarizer,
        providers: Mapping[str, Summarizer],
        count_tokens_for: CountTokensFor,
        clock: Callable[[], float] = time.monotonic,
        *,
        estimate_tokens: Callable[[str], int] | None = None,
    ) -> None:
        self._config = config
        # Self-measured usage is exact only when a budget depends on it.
        self._usage_tokens = estimate_tokens if config.context_window is None else None
        self._default = default
        self._providers = dict(providers)
        # What each summarizer can do, decided once (domain.capabilities)
        self._can = {
            id(llm): summarizer_capabilities(llm)
            for llm in (default, *self._providers.values())
        }
        self._count_tokens_for = count_tokens_for
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, str | None], ResolvedModel] = {}
        self._fallbacks: dict[tuple[int, str | None], ResolvedModel] = {}
        self._backoffs: dict[tuple[int, str | None], Backoff] = {}

    def capabilities(self, llm: Summarizer) -> SummarizerCapabilities:
        """Return what ``llm`` (the default or a provider's) can do."""
        can = self._can.get(id(llm))
        return summarizer_capabilities(llm) if can is None else can

    def _target(
        self, session_model: str | None
    ) -> tuple[Summarizer, str | None] | Unresolved:
        config = self._config
        if config.summary_model_mode == "custom":
            ref = config.summary_llm
            assert ref is not None  # SummaryConfig guarantees it in custom mode
            llm = self._providers.get(ref.provider)
            if llm is None:
                known = ", ".join(sorted(self._providers)) or "none"
                return Unresolved(
                    f"summary_llm provider {ref.provider!r} is not registered "
                    f"(registered: {known})"
                )
            return llm, ref.model
        if config.summary_model_mode == "session":
            return self._default, session_model
        return self._default, None

    def peek(self, session_model: str | None) -> ResolvedModel | None:
        """Return the cached resolution (or its fallback), None when not known yet."""
        target = self._target(session_model)
        if isinstance(target, Unresolved):
            return None
        key = (id(target[0]), target[1])
        with self._lock:
            return self._cache.get(key) or self._fallbacks.get(key)

    def is_due(self, session_model: str | None) -> bool:
        """Tell whether resolving the model may do work now (never for a bad config).

        False once it resolved, while a failed lookup backs off, and when no
        summarizer matches the configuration (nothing would change on a retry).
        """
        target = self._target(session_model)
        if isinstance(target, Unresolved):
            return False
        key = (id(target[0]), target[1])
        with self._lock:
            if key in self._cache:
                return False
            backoff = self._backoffs.get(key)
            return backoff is None or backoff_is_due(backoff, self._clock())

    def resolution(self, session_model: str | None) -> ResolvedModel | Unresolved:
        """Return the resolved summarizer, or ``Unresolved`` saying why none can be."""
        target = self._target(session_model)
        if isinstance(target, Unresolved):
            return target
        return self._resolved(*target)

    def _resolved(self, llm: Summarizer, model: str | None) -> ResolvedModel:
        key = (id(llm), model)
        with self._lock:
            cached = self._cache.get(key)
            fallback = self._fallbacks.get(key)
            backoff = self._backoffs.get(key)
        if cached is not None:
            return cached
        if (
            fallback is not None
            and backoff is not None
            and not backoff_is_due(backoff, self._clock())
        ):
            return fallback
        failed = False
        try:  # may ask the endpoint once: outside the lock
            length = llm.context_length(model)
        except Exception as exc:  # noqa: BLE001 - an unknown length has a fallback (4096)
            log.warning("context_length(%s) failed, assuming unknown: %s", model, exc)
            length, failed = None, True
        can = self.capabilities(llm)
        resolved = ResolvedModel(
            llm=llm,
            model=model,
            label=label_for(llm, model, can),
            context_length=length,
            count_tokens=self._count_tokens_for(model or can.model),
            streams=can.streams,
            takes_timeout=_takes_timeout(llm, can.streams),
            reports_usage=can.reports_usage,
            compacts=can.compacts,
            starts=can.starts,
            usage_tokens=self._usage_tokens,
        )
        with self._lock:
            if failed:  # not cached: ask again once the back-off allows
                self._backoffs[key] = backoff_failed(
                    self._backoffs.get(key, Backoff()), self._clock()
                )
                self._fallbacks[key] = resolved
                return resolved
            self._backoffs.pop(key, None)
            self._fallbacks.pop(key, None)
            return self._cache.setdefault(key, resolved)
