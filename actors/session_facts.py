"""What the engine remembers of each session between its actors' lives.

A session actor is reaped when idle, but three facts of its session must outlive it:
the chat model its last turn named (``summary_model_mode="session"``, and counting in
the chat model's encoding), whether the host reports usage ratios for it (its ratio
then wins over the engine's own measure), and the loop guard a pressed compression
left. They live here, in one bounded LRU map: ``MAX_SESSION_FACTS`` (50,000) sessions,
the least recently touched forgotten first. A forgotten session reads as "no model
named, host reports nothing, no guard" until its next turn, so a long-running server
holds a bounded number of entries.

Writers: the host's thread (the model on ``turn_after``, the flag on ``token_usage``)
and the session's actor (the guard, when a compression finishes). The actor reads a
frozen ``SessionFacts`` when it starts a compression and hands it on as a snapshot.

The host's Anthropic ``system`` and ``tools`` (a native summarizer sends them) are
kept as copies of their JSON, the system without a summary merged into it earlier
(``host_system``), so a host that changes its dicts afterwards changes nothing a
compaction sends; a pair over ``MAX_REQUEST_BYTES`` is not kept (none is then).
Sessions sending the same system prompt or tools share one copy, and the distinct
copies kept hold at most ``MAX_REQUESTS_CHARS`` characters of JSON, all sessions: past
it, the least recently touched sessions' copies are dropped (a compaction of theirs
sends neither until their next request names them again), so 50,000 sessions with
prompts of their own cannot hold 50,000 times ``MAX_REQUEST_BYTES``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import attrs

from memory_summary.domain import AnthropicSystem, LoopGuard, MessageError
from memory_summary.domain.native import host_system

log = logging.getLogger(__name__)

MAX_SESSION_FACTS = 50_000
"""Sessions whose facts are remembered; the least recently touched go first."""
MAX_REQUEST_BYTES = 256 * 1024
"""The largest ``system`` and ``tools`` (their JSON, together) kept for a session."""
MAX_REQUESTS_CHARS = 32 * 1024 * 1024
"""The distinct systems' and tools' JSON kept, all sessions (their parsed copies
take a few times that in memory)."""


@attrs.frozen
class SessionFacts:
    """One session's remembered facts."""

    model: str | None = None
    host_reports: bool = False
    guard: LoopGuard | None = None
    system: AnthropicSystem = attrs.field(default=None, hash=False)
    """The host's system prompt of the session's last Anthropic request."""
    tools: tuple[Mapping[str, object], ...] = attrs.field(default=(), hash=False)
    """The host's tools of the session's last Anthropic request that named them."""
    system_key: int | None = None
    """The fingerprint of the ``system`` given, before its copy was cleaned."""
    tools_key: int | None = None
    """The fingerprint of the ``tools`` given."""
    system_json: str | None = attrs.field(default=None, eq=False, repr=False)
    """The JSON ``system`` was copied from: its key among the shared copies."""
    tools_json: str | None = attrs.field(default=None, eq=False, repr=False)
    """The JSON ``tools`` were copied from: its key among the shared copies."""


NO_FACTS = SessionFacts()


class SessionMemory:
    """A bounded LRU map ``session id -> SessionFacts``, safe to share between threads.

    >>> memory = SessionMemory(capacity=2)
    >>> memory.set_model("a", "gpt-4o"); memory.set_model("b", "gpt-4o")
    >>> memory.set_model("c", "o3")
    >>> memory.get("a").model is None, memory.get("c").model, len(memory)
    (True, 'o3', 2)
    """

    def __init__(
        self,
        capacity: int = MAX_SESSION_FACTS,
        max_requests_chars: int = MAX_REQUESTS_CHARS,
    ) -> None:
        self._capacity = max(capacity, 1)
        self._max_chars = max_requests_chars
        self._facts: OrderedDict[str, SessionFacts] = OrderedDict()
        # ("system" or "tools", JSON) -> [copy, sessions using it]
        self._copies: dict[tuple[str, str], list[object]] = {}
        self._chars = 0  # the JSON of ``_copies``, counted once each
        self._holders: OrderedDict[str, None] = OrderedDict()  # holding copies, LRU
        self._lock = threading.Lock()

    def get(self, session_id: str) -> SessionFacts:
        """Return the session's facts (defaults when none are remembered)."""
        return self._facts.get(session_id, NO_FACTS)

    def model(self, session_id: str) -> str | None:
        """Return the chat model the session's last turn named, if remembered."""
        return self.get(session_id).model

    def set_model(self, session_id: str, model: str) -> None:
        """Remember the chat model of the session's last turn."""
        facts = self._facts.get(session_id)
        if facts is not None and facts.model == model:  # the hot path: no lock
            return
        self._update(session_id, model=model)

    def host_reports(self, session_id: str) -> None:
        """Remember that the host reports usage for the session: its ratio wins."""
        facts = self._facts.get(session_id)
        if facts is not None and facts.host_reports:  # the hot path: no lock
            return
        self._update(session_id, host_reports=True)

    def set_request(
        self,
        session_id: str,
        system: AnthropicSystem,
        tools: Sequence[Mapping[str, object]] | None = None,
    ) -> None:
        """Remember the host's system prompt and tools (a native summary sends them).

        ``tools`` None keeps the tools remembered. Copies are kept (see the module).
        """
        facts = self._facts.get(session_id, NO_FACTS)
        if (  # the hot path: the copies kept are equal to what is given, no lock
            facts.system_key is not None
            and facts.system == system
            and (tools is None or facts.tools == tuple(tools))
        ):
            return
        system_text, system_key = _fingerprint(system)
        tools_text, tools_key = (None, None) if tools is None else _fingerprint(tools)
        if facts.system_key == system_key and tools_key in (None, facts.tools_key):
            return  # nothing changed (a system with a summary in it, one not kept)
        changes: dict[str, object] = {"system_key": system_key}
        if tools_key is not None:
            changes["tools_key"] = tools_key
        size = len(system_text or "") + len(
            tools_text or json.dumps(list(facts.tools), ensure_ascii=False)
        )
        if system_text is None or size > MAX_REQUEST_BYTES or tools_key == 0:
            log.debug(
                "session %s: the Anthropic system and tools (%d characters of JSON, "
                "or not JSON) are not remembered: a compaction sends neither",
                session_id,
                size,
            )
            self._update(
                session_id,
                system=None,
                tools=(),
                system_json=None,
                tools_json=None,
                **changes,
            )
            return
        changes["system"] = self._copy("system", system_text, _system_of)
        changes["system_json"] = system_text
        if tools_text is not None:
            changes["tools"] = self._copy("tools", tools_text, _tools_of)
            changes["tools_json"] = tools_text
        self._update(session_id, **changes)

    def _copy(self, kind: str, text: str, parse: Callable[[str], object]) -> Any:
        """Return the shared copy of the ``kind`` JSON ``text``, or a new one."""
        shared = self._copies.get((kind, text))
        return parse(text) if shared is None else shared[0]

    def set_guard(self, session_id: str, guard: LoopGuard | None) -> None:
        """Remember (or lift) the session's loop guard."""
        self._update(session_id, guard=guard)

    def pop(self, session_id: str) -> None:
        """Forget the session."""
        with self._lock:
            self._release(self._facts.pop(session_id, NO_FACTS))
            self._holders.pop(session_id, None)

    @property
    def requests_chars(self) -> int:
        """Characters of the kept systems' and tools' JSON, each distinct one once."""
        return self._chars

    def _update(self, session_id: str, **changes: object) -> None:
        with self._lock:
            old = self._facts.get(session_id, NO_FACTS)
            facts = attrs.evolve(old, **changes)  # type: ignore[arg-type]
            if "system_json" in changes or "tools_json" in changes:
                self._hold(facts)
                self._release(old)
            self._facts[session_id] = facts
            self._facts.move_to_end(session_id)
            if facts.system_json is not None or facts.tools_json is not None:
                self._holders[session_id] = None
                self._holders.move_to_end(session_id)
            else:
                self._holders.pop(session_id, None)
            while len(self._facts) > self._capacity:
                gone, oldest = self._facts.popitem(last=False)
                self._release(oldest)
                self._holders.pop(gone, None)
            if self._chars > self._max_chars:
                self._drop_requests(keep=session_id)

    def _hold(self, facts: SessionFacts) -> None:
        for kind, text, copy in (
            ("system", facts.system_json, facts.system),
            ("tools", facts.tools_json, facts.tools),
        ):
            if text is None:
                continue
            shared = self._copies.get((kind, text))
            if shared is None:
                self._copies[kind, text] = [copy, 1]
                self._chars += len(text)
            else:
                shared[1] = cast(int, shared[1]) + 1

    def _release(self, facts: SessionFacts) -> None:
        for kind, text in (("system", facts.system_json), ("tools", facts.tools_json)):
            shared = None if text is None else self._copies.get((kind, text))
            if text is None or shared is None:
                continue
            shared[1] = cast(int, shared[1]) - 1
            if shared[1] == 0:
                del self._copies[kind, text]
                self._chars -= len(text)

    def _drop_requests(self, keep: str) -> None:
        """Drop the least recently touched sessions' copies until within the cap."""
        while self._chars > self._max_chars:
            session_id = next((s for s in self._holders if s != keep), None)
            if session_id is None:
                return
            del self._holders[session_id]
            facts = self._facts[session_id]
            self._release(facts)
            self._facts[session_id] = attrs.evolve(
                facts,
                system=None,
                tools=(),
                system_key=None,
                tools_key=None,
                system_json=None,
                tools_json=None,
            )
            log.debug(
                "session %s: its Anthropic system and tools are no longer "
                "remembered (the sessions' copies reached %d characters)",
                session_id,
                self._max_chars,
            )

    def __len__(self) -> int:
        return len(self._facts)


def _system_of(text: str) -> AnthropicSystem:
    try:
        return host_system(json.loads(text))
    except MessageError:
        return None


def _tools_of(text: str) -> tuple[Mapping[str, object], ...]:
    return tuple(json.loads(text))


def _fingerprint(value: object) -> tuple[str | None, int]:
    """Return ``value``'s JSON and its hash; ``(None, 0)`` when it is not JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None, 0
    return text, hash(text) or 1
