"""What the compression job knows of each session's chat context: tokens, keep, guard.

The engine measures a session itself when ``context_window`` is configured, and keeps
the kept part within ``keep_recent_tokens``; both count in the chat model's encoding
(the model the host named in ``turn_after``). Message costs are cached by message id:
a stored message never changes, so each is counted once per encoding.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import attrs

from memory_summary.domain import (
    LoopGuard,
    Message,
    SummaryConfig,
    guard_after,
    mask_tool_results,
    message_tokens,
)

_MAX_COSTS = 200_000
_MAX_GUARDS = 50_000

Count = Callable[[str], int]


@attrs.frozen
class Measure:
    """A session's context as the chat model sees it: summary plus active history."""

    used_tokens: int
    window_tokens: int

    @property
    def ratio(self) -> float:
        """Return the usage ratio (the seed's ``usage_ratio``)."""
        return self.used_tokens / max(self.window_tokens, 1)


@attrs.define
class ContextPolicy:
    """Token keep, self-measured usage and the loop guard, for every session.

    Attributes:
        config: the engine's configuration.
        count_for: ``model -> count_tokens`` in that model's encoding.
        chat_model: ``session_id -> model`` the host last named (None: unknown).
    """

    config: SummaryConfig
    count_for: Callable[[str | None], Count]
    chat_model: Callable[[str], str | None]
    _costs: dict[tuple[str, int, int, Count], int] = attrs.field(
        factory=dict, init=False
    )
    _guards: dict[str, LoopGuard] = attrs.field(factory=dict, init=False)
    _reporting: dict[str, None] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    @property
    def measures(self) -> bool:
        """Tell whether the engine measures usage itself (``context_window`` is set)."""
        return self.config.context_window is not None

    def host_reports(self, session_id: str) -> None:
        """Note that the host reports usage for the session: its ratio wins."""
        reporting = self._reporting
        if session_id in reporting:  # the hot path: one lookup, no lock
            return
        with self._lock:
            if len(reporting) >= _MAX_GUARDS:
                reporting.pop(next(iter(reporting)), None)
            reporting[session_id] = None

    def measures_session(self, session_id: str) -> bool:
        """Tell whether the engine measures the session itself.

        Only with ``context_window`` set, and only until the host reports a usage
        ratio for the session (``token_usage``): the host's own figure then wins.
        """
        return self.measures and session_id not in self._reporting

    def window(self, session_id: str) -> int | None:
        """Return the session's chat window in tokens, None when not configured."""
        return self.config.window_for(self.chat_model(session_id))

    def keep_tokens(self, session_id: str) -> int | None:
        """Return the kept part's token bound for the session, None when unbound."""
        return self.config.keep_tokens_for(self.chat_model(session_id))

    def trigger_tokens(self, session_id: str) -> int | None:
        """Return the tokens at which the session's usage triggers a compression."""
        window = self.window(session_id)
        threshold = self.config.auto_compress_threshold
        if window is None or threshold <= 0:
            return None
        return max(int(window * threshold), 1)

    def cost(self, session_id: str) -> Callable[[Message], int]:
        """Return ``message -> tokens`` in the session's chat encoding, cached by id."""
        count = self.count_for(self.chat_model(session_id))
        costs = self._costs

        def cost(message: Message) -> int:
            if message.id is None:
                return message_tokens(message, count)
            key = (session_id, message.id, len(message.text), count)
            tokens = costs.get(key)
            if tokens is None:
                tokens = message_tokens(message, count)
                if len(costs) >= _MAX_COSTS:
                    costs.clear()
                costs[key] = tokens
            return tokens

        return cost

    def masked_cost(
        self, session_id: str, window: Sequence[Message]
    ) -> Callable[[Message], int]:
        """Return ``message -> tokens`` for the messages of ``window`` as sent.

        With ``mask_tool_results_after`` set, a tool result that ``assemble`` would
        mask costs what its stub costs, so usage, the token keep and the loop guard
        see the masked size; otherwise this is ``cost``.
        """
        cost = self.cost(session_id)
        after = self.config.mask_tool_results_after
        if after is None:
            return cost
        masked = mask_tool_results(window, after, locale=self.config.locale)
        stubs = {
            id(o): (o, m) for o, m in zip(window, masked, strict=True) if m is not o
        }  # by identity; each pair holds its original, so no id is reused meanwhile
        if not stubs:
            return cost

        def masked_cost(message: Message) -> int:
            pair = stubs.get(id(message))
            return cost(pair[1] if pair is not None and pair[0] is message else message)

        return masked_cost

    def summary_tokens(self, session_id: str, text: str | None) -> int:
        """Return what the injected summary costs (0 without one)."""
        if not text:
            return 0
        return message_tokens(
            Message("system", text), self.count_for(self.chat_model(session_id))
        )

    def measure(
        self, session_id: str, summary: str | None, active: Sequence[Message]
    ) -> Measure | None:
        """Return the session's usage, or None when its window is not configured."""
        window = self.window(session_id)
        if window is None:
            return None
        cost = self.masked_cost(session_id, active)
        used = self.summary_tokens(session_id, summary) + sum(map(cost, active))
        return Measure(used, window)

    def guard(self, session_id: str) -> LoopGuard | None:
        """Return the session's loop guard, if one is set."""
        return self._guards.get(session_id)

    def after_pressed(
        self, session_id: str, *, tip_id: int, kept_tokens: int
    ) -> LoopGuard | None:
        """Record what a pressed compression kept; return the guard it leaves."""
        guard = guard_after(
            tip_id=tip_id,
            kept_tokens=kept_tokens,
            trigger_tokens=self.trigger_tokens(session_id),
        )
        with self._lock:
            if guard is None:
                self._guards.pop(session_id, None)
            else:
                if len(self._guards) >= _MAX_GUARDS:
                    self._guards.pop(next(iter(self._guards)))
                self._guards[session_id] = guard
        return guard

    def forget(self, session_id: str) -> None:
        """Forget everything known of the session (its guard, who reports usage)."""
        with self._lock:
            self._guards.pop(session_id, None)
            self._reporting.pop(session_id, None)
