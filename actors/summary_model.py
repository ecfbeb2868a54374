"""Which summarizer and model a compression uses, resolved once per model and cached.

seed: ``global`` uses the host's default LLM; ``custom`` the ``summary_llm`` provider
and model; ``session`` the model the session's last turn used (on the default LLM).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs

from memory_summary.domain import (
    Message,
    StreamingSummarizer,
    Summarizer,
    SummarizerError,
    SummarizerTimeout,
    SummaryConfig,
)

log = logging.getLogger(__name__)

CountTokensFor = Callable[[str | None], Callable[[str], int]]


@attrs.frozen
class ResolvedModel:
    """A summarizer ready to call: which LLM, which model, how to count its tokens."""

    llm: Summarizer = attrs.field(eq=False)
    model: str | None
    label: str
    context_length: int | None
    count_tokens: Callable[[str], int] = attrs.field(eq=False)
    streams: bool

    def call(
        self,
        request: Sequence[Message],
        max_tokens: int,
        temperature: float,
        deadline: float,
    ) -> str:
        """Return the summarizer's whole answer; a broken stream yields nothing.

        Raises:
            SummarizerError: the call failed (the partial text, if any, is discarded).
            SummarizerTimeout: the stream ran past ``deadline`` (monotonic seconds).
        """
        kwargs = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        try:
            if not self.streams:
                return self.llm.complete(request, **kwargs)  # type: ignore[arg-type]
            return _join_before(self.llm.stream(request, **kwargs), deadline)  # type: ignore[attr-defined]
        except SummarizerError:
            raise
        except Exception as exc:  # any provider failure is an expected outcome here
            raise SummarizerError(f"{type(exc).__name__}: {exc}") from exc


def _join_before(pieces: Iterator[str], deadline: float) -> str:
    """Join a stream's pieces, giving up once the monotonic ``deadline`` has passed."""
    joined: list[str] = []
    for piece in pieces:
        if time.monotonic() > deadline:
            raise SummarizerTimeout("the summary stream ran past its deadline")
        joined.append(piece)
    return "".join(joined)


def label_for(llm: Summarizer, model: str | None) -> str:
    """Return how a summary's origin is reported: a non-LLM's label, else the model."""
    label = getattr(llm, "label", None)
    if isinstance(label, str):
        return label
    return model or str(getattr(llm, "model", None) or type(llm).__name__)


class ModelResolver:
    """Resolves the summary model of a session, caching context lengths per model."""

    def __init__(
        self,
        config: SummaryConfig,
        default: Summarizer,
        providers: Mapping[str, Summarizer],
        count_tokens_for: CountTokensFor,
    ) -> None:
        self._config = config
        self._default = default
        self._providers = dict(providers)
        self._count_tokens_for = count_tokens_for
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, str | None], ResolvedModel] = {}

    def fallback_counter(self) -> Callable[[str], int]:
        """Return the token counter used when no model could be resolved."""
        return self._count_tokens_for(None)

    def resolve(self, session_model: str | None) -> ResolvedModel | str:
        """Return the resolved summarizer, or a message saying why none could be."""
        config = self._config
        if config.summary_model_mode == "custom":
            ref = config.summary_llm
            assert ref is not None  # SummaryConfig guarantees it in custom mode
            llm = self._providers.get(ref.provider)
            if llm is None:
                known = ", ".join(sorted(self._providers)) or "none"
                return (
                    f"summary_llm provider {ref.provider!r} is not registered "
                    f"(registered: {known})"
                )
            return self._resolved(llm, ref.model)
        if config.summary_model_mode == "session":
            return self._resolved(self._default, session_model)
        return self._resolved(self._default, None)

    def _resolved(self, llm: Summarizer, model: str | None) -> ResolvedModel:
        key: tuple[int, str | None] | None = (id(llm), model)
        with self._lock:
            cached = self._cache.get(key)  # type: ignore[arg-type]
        if cached is not None:
            return cached
        try:  # may ask the endpoint once: outside the lock
            length = llm.context_length(model)
        except Exception as exc:  # noqa: BLE001 - an unknown length has a fallback (4096)
            log.warning("context_length(%s) failed, assuming unknown: %s", model, exc)
            length, key = None, None
        token_model = model or getattr(llm, "model", None)
        resolved = ResolvedModel(
            llm=llm,
            model=model,
            label=label_for(llm, model),
            context_length=length,
            count_tokens=self._count_tokens_for(
                token_model if isinstance(token_model, str) else None
            ),
            streams=isinstance(llm, StreamingSummarizer),
        )
        if key is None:  # not cached: ask again next time
            return resolved
        with self._lock:
            return self._cache.setdefault(key, resolved)
