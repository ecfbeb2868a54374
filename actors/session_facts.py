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
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import attrs

from memory_summary.domain import AnthropicSystem, LoopGuard, MessageError
from memory_summary.domain.native import host_system

log = logging.getLogger(__name__)

MAX_SESSION_FACTS = 50_000
"""Sessions whose facts are remembered; the least recently touched go first."""
MAX_REQUEST_BYTES = 256 * 1024
"""The largest ``system`` and ``tools`` (their JSON, together) kept for a session."""


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


NO_FACTS = SessionFacts()


class SessionMemory:
    """A bounded LRU map ``session id -> SessionFacts``, safe to share between threads.

    >>> memory = SessionMemory(capacity=2)
    >>> memory.set_model("a", "gpt-4o"); memory.set_model("b", "gpt-4o")
    >>> memory.set_model("c", "o3")
    >>> memory.get("a").model is None, memory.get("c").model, len(memory)
    (True, 'o3', 2)
    """

    def __init__(self, capacity: int = MAX_SESSION_FACTS) -> None:
        self._capacity = max(capacity, 1)
        self._facts: OrderedDict[str, SessionFacts] = OrderedDict()
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
            self._update(session_id, system=None, tools=(), **changes)
            return
        try:
            changes["system"] = host_system(json.loads(system_text))
        except MessageError:
            changes["system"] = None
        if tools_text is not None:
            changes["tools"] = tuple(json.loads(tools_text))
        self._update(session_id, **changes)

    def set_guard(self, session_id: str, guard: LoopGuard | None) -> None:
        """Remember (or lift) the session's loop guard."""
        self._update(session_id, guard=guard)

    def pop(self, session_id: str) -> None:
        """Forget the session."""
        with self._lock:
            self._facts.pop(session_id, None)

    def _update(self, session_id: str, **changes: object) -> None:
        with self._lock:
            facts = self._facts.get(session_id, NO_FACTS)
            self._facts[session_id] = attrs.evolve(facts, **changes)  # type: ignore[arg-type]
            self._facts.move_to_end(session_id)
            while len(self._facts) > self._capacity:
                self._facts.popitem(last=False)

    def __len__(self) -> int:
        return len(self._facts)


def _fingerprint(value: object) -> tuple[str | None, int]:
    """Return ``value``'s JSON and its hash; ``(None, 0)`` when it is not JSON."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None, 0
    return text, hash(text) or 1
