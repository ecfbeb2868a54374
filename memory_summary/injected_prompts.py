"""The summary text ``build_prompt`` injects, cut to budget and cached per session.

Building it never blocks on I/O: the summary model's context length comes from what
the resolver already knows (``peek``); when it must still be asked, that happens on
the summarizer-call pool, once at a time per model, while the prompt is built with
what is known. Whatever is known, the text fits its budget in the encoding of the
model the request goes to (seed: the 4096-token fallback, floor 512, while the
length is unknown): no stored count, made in another encoding or under another
budget, lets a summary skip the cut.

It also tells the texts it injected from a host's (``injected_test``): a summary
handed back in the host's own format has lost its kind, and is known by comparing
its text with the session's summaries, and with the texts this engine built for the
session (``InjectedDigests``): a copy of a summary the store no longer holds (past
``summary_versions_kept``, or cleared) is still the engine's. A copy another process
injected, of a summary the store no longer holds, is read as the host's text.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable

from memory_summary.actors.summary_model import ModelResolver
from memory_summary.actors.workers import WorkerPool
from memory_summary.adapters.tokens import token_ceiling
from memory_summary.domain import (
    SummaryConfig,
    SummaryRecord,
    injection_budget_tokens,
    injection_text,
)
from memory_summary.domain.injection import HEADERS, InjectedTest, is_injection_of

log = logging.getLogger(__name__)

PROMPT_CACHE_SIZE = 50_000
"""Sessions whose injected text is cached; the cache is dropped whole when full."""

DIGESTS_PER_SESSION = 16
"""Injected texts remembered per session (the latest), to tell a copy handed back."""

DIGEST_SESSIONS = 10_000
"""Sessions whose injected texts are remembered; the least recently used goes first."""


TextDigest = tuple[int, bytes]
"""A text's length and hash: a text of another length is told apart unhashed."""


def text_digest(text: str) -> TextDigest:
    """Return the digest of ``text`` (any ``str``, lone surrogates included)."""
    data = text.encode("utf-8", "surrogatepass")
    return len(text), hashlib.blake2b(data, digest_size=16).digest()


class InjectedDigests:
    """Remembers digests of the texts the engine injected, per session, bounded.

    The latest ``per_session`` texts of each of the ``sessions`` sessions used last.
    ``clear`` and ``forget`` leave them: a copy a host still holds of a cleared
    summary is the engine's, to be dropped, never the host's to keep.
    """

    def __init__(
        self, per_session: int = DIGESTS_PER_SESSION, sessions: int = DIGEST_SESSIONS
    ) -> None:
        self._per_session = per_session
        self._sessions = sessions
        self._seen: OrderedDict[str, dict[TextDigest, None]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, session_id: str, digest: TextDigest) -> None:
        """Remember that ``session_id``'s requests got the text of ``digest``."""
        with self._lock:
            seen = self._seen.get(session_id)
            if seen is None:
                seen = self._seen[session_id] = {}
                if len(self._seen) > self._sessions:
                    self._seen.popitem(last=False)
            else:
                self._seen.move_to_end(session_id)
            seen.pop(digest, None)
            seen[digest] = None  # the latest last
            if len(seen) > self._per_session:
                del seen[next(iter(seen))]

    def holds(self, session_id: str, text: str) -> bool:
        """Tell whether ``text`` is one the engine injected for ``session_id``."""
        with self._lock:
            seen = tuple(self._seen.get(session_id, ()))
        # a prompt holding the header many times is tried at each: no hash for
        # a candidate of no remembered length, so the tries stay linear
        if all(length != len(text) for length, _ in seen):
            return False
        return text_digest(text) in seen


class InjectedPrompts:
    """Builds and caches each session's injected summary text.

    Args:
        config: the engine's configuration.
        resolver: the summary model's resolver (peeked at, resolved off-thread).
        chat_model: ``session_id -> model`` its last turn named.
        counter: ``model -> count_tokens``.
        calls: the summarizer-call pool, where a model is resolved later.
        closed: tells whether the engine stopped.
    """

    def __init__(
        self,
        config: SummaryConfig,
        resolver: ModelResolver,
        chat_model: Callable[[str], str | None],
        counter: Callable[[str | None], Callable[[str], int]],
        calls: WorkerPool,
        closed: Callable[[], bool],
        searchable: Callable[[], bool] = lambda: True,
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._chat_model = chat_model
        self._counter = counter
        self._calls = calls
        self._closed = closed
        self._searchable = searchable
        self._cache: dict[str, tuple[str, int, object, str, TextDigest]] = {}
        self._digests = InjectedDigests()
        self._resolving: set[str | None] = set()
        self._lock = threading.Lock()

    def text(self, session_id: str, model: str | None, record: SummaryRecord) -> str:
        """Return the injected text of ``record``, cut to the budget of ``model``."""
        budget, count = self._budget(session_id, model)
        cached = self._cache.get(session_id)
        if (
            cached is not None
            and cached[1] == budget
            and cached[2] is count
            and cached[0] == record.text
        ):
            self._digests.remember(session_id, cached[4])
            return cached[3]
        text = injection_text(
            record.text,
            locale=self._config.locale,
            budget_tokens=budget,
            count_tokens=count,
            recall_hint=self._config.recall_hint,
            ceiling=getattr(count, "ceiling", None),
            search=self._searchable(),
        )
        digest = text_digest(text)
        self._digests.remember(session_id, digest)
        if len(self._cache) >= PROMPT_CACHE_SIZE:
            self._cache.clear()
        self._cache[session_id] = (record.text, budget, count, text, digest)
        return text

    def injected_test(
        self,
        session_id: str,
        now: Callable[[], Collection[str]],
        summaries: Callable[[], Iterable[str]],
    ) -> InjectedTest:
        """Return a test of whether a text is a summary text the engine injected.

        A text is when it is one of ``now`` (the texts the session's requests get
        now, read on the first text that opens with the locale's header), else one
        this engine built for the session (its latest ``DIGESTS_PER_SESSION``, kept
        through ``clear`` and ``forget``), else the injected text of one of
        ``summaries`` (the session's current and kept earlier summaries, read only
        then), whole or cut to any budget: a copy made before the latest
        compression, or for another model, is one too. A host's text that merely
        holds the header is none. Each is read at most once.
        """
        header = HEADERS[self._config.locale]
        known: dict[str, Collection[str]] = {}

        def test(text: str) -> bool:
            if not text.startswith(header):
                return False
            if "now" not in known:
                known["now"] = now()
            if text in known["now"] or self._digests.holds(session_id, text):
                return True
            if "summaries" not in known:
                known["summaries"] = [s for s in summaries() if s]
            return any(
                is_injection_of(
                    text,
                    summary,
                    locale=self._config.locale,
                    recall_hint=self._config.recall_hint,
                    search=self._searchable(),
                )
                for summary in known["summaries"]
            )

        return test

    def forget(self, session_id: str) -> None:
        """Drop the session's cached text."""
        self._cache.pop(session_id, None)

    def forget_all(self) -> None:
        """Drop every cached text."""
        self._cache.clear()

    def _budget(
        self, session_id: str, model: str | None
    ) -> tuple[int, Callable[[str], int]]:
        """Return the budget and the request model's counter, without blocking on I/O.

        A summary model not resolved yet and one resolved without a context length
        are one case: the seed's fallback (4096 tokens x ratio, floor 512). The
        session's model may have changed since the summary was committed (its stored
        count is in another model's encoding, against another budget), so every
        summary is cut in the encoding of the model the request goes to.
        """
        session_model = self._chat_model(session_id)
        resolved = self._resolver.peek(session_model)
        if self._resolver.is_due(session_model):
            self._resolve_later(session_model)
        length = None if resolved is None else resolved.context_length
        budget = injection_budget_tokens(self._config, length)
        chat = model or session_model
        if chat is not None:
            return budget, self._counter(chat)
        if resolved is None:
            return budget, token_ceiling  # no tokenizer yet: never undercounts
        return budget, resolved.count_tokens

    def _resolve_later(self, model: str | None) -> None:
        """Resolve ``model`` on the summarizer-call pool, once at a time per model.

        The pool reuses its threads, and the resolver backs off after a failure, so
        an outage costs neither a thread nor an endpoint request per chat turn.
        """
        with self._lock:
            if model in self._resolving or self._closed():
                return
            self._resolving.add(model)

        def resolve() -> None:
            try:
                self._resolver.resolution(model)
            except Exception:  # the fallback stays in use; logged, never raised
                log.exception("resolving the summary model %r failed", model)
            finally:
                with self._lock:
                    self._resolving.discard(model)

        try:
            self._calls.submit(resolve)
        except RuntimeError:  # the pool is shut down: the engine is stopping
            with self._lock:
                self._resolving.discard(model)
