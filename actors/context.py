"""Token costs of a session's chat context, in the chat model's encoding.

The engine measures a session itself when ``context_window`` is configured, and keeps
the kept part within ``keep_recent_tokens``; both count in the chat model's encoding
(the model the host named in ``turn_after``). Message costs are cached by message id:
a stored message never changes, so each is counted once per encoding. What a
compression needs of it is one frozen ``ChatContext`` (``chat_context``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from memory_summary.domain import (
    Message,
    SummaryConfig,
    mask_tool_results,
    message_tokens,
)
from memory_summary.domain.compression_io import ChatContext
from memory_summary.domain.compression_state import utf8_token_bound
from memory_summary.domain.trigger import trigger_tokens

_MAX_COSTS = 200_000

Count = Callable[[str], int]


@attrs.define
class ContextPolicy:
    """Token keep, self-measured usage and message costs, for every session.

    Attributes:
        config: the engine's configuration.
        count_for: ``model -> count_tokens`` in that model's encoding.
        estimate: a cheap count that never undercounts, for figures that are only
            reported; None counts UTF-8 bytes (a strict upper bound).
    """

    config: SummaryConfig
    count_for: Callable[[str | None], Count]
    estimate: Count | None = None
    _costs: dict[tuple[str, int, int, Count], int] = attrs.field(
        factory=dict, init=False
    )

    @property
    def measures(self) -> bool:
        """Tell whether the engine measures usage itself (``context_window`` is set)."""
        return self.config.context_window is not None

    def chat_context(self, session_id: str, model: str | None) -> ChatContext:
        """Return the session's chat context for one compression (a snapshot)."""
        config = self.config
        window = config.window_for(model)
        count = self.count_for(model)
        estimate = self.estimate or utf8_token_bound
        return ChatContext(
            cost_for=lambda messages: self.masked_cost(session_id, count, messages),
            summary_tokens=lambda text: summary_tokens(text, count),
            window_tokens=window,
            keep_tokens=config.keep_tokens_for(model),
            estimate_for=lambda messages: self.masked_cost(
                session_id, estimate, messages
            ),
            trigger_tokens=trigger_tokens(window, config),
        )

    def cost(self, session_id: str, count: Count) -> Callable[[Message], int]:
        """Return ``message -> tokens`` by ``count``, cached by id."""
        costs = self._costs

        def cost(message: Message) -> int:
            if message.id is None:
                return message_tokens(message, count)
            content = message.content  # text content is its own text
            size = len(content) if type(content) is str else len(message.text)
            key = (session_id, message.id, size, count)
            tokens = costs.get(key)
            if tokens is None:
                tokens = message_tokens(message, count)
                if len(costs) >= _MAX_COSTS:
                    costs.clear()
                costs[key] = tokens
            return tokens

        return cost

    def masked_cost(
        self, session_id: str, count: Count, window: Sequence[Message]
    ) -> Callable[[Message], int]:
        """Return ``message -> tokens`` for the messages of ``window`` as sent.

        With ``mask_tool_results_after`` set, a tool result that ``assemble`` would
        mask costs what its stub costs, so usage, the token keep and the loop guard
        see the masked size; otherwise this is ``cost``.
        """
        cost = self.cost(session_id, count)
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


def summary_tokens(text: str | None, count: Count) -> int:
    """Return what the injected summary costs (0 without one)."""
    if not text:
        return 0
    return message_tokens(Message("system", text), count)
