"""The whole compression plan: budget, prompt, task state and input limit, decided once.

Both a compression and ``build_prompt`` use it: the summary budget a compression writes
to is the budget the injected summary is cut to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from .budget import FRAMING_TOKENS, MIN_INPUT_TOKENS, context_tokens
from .budget import summary_budget_tokens as _budget
from .config import SummaryConfig
from .injection import HEADERS
from .model import Message, ToolCall
from .prompt import latest_todo_call, summary_request, system_prompt
from .trigger import Reason


@attrs.frozen
class CompressionPlan:
    """What every summarizer call of one compression is given and may carry.

    Attributes:
        budget_tokens: the injected summary's budget (header included).
        summary_tokens: the summary's own budget: ``budget_tokens`` less the
            injection header, so that injecting never cuts a stored summary. It is the
            call's ``max_tokens`` and the budget the prompt states.
        system: the summarizer's system prompt.
        todo: the latest to-do-list call in the kept part (current task state).
        input_limit_tokens: transcript tokens one call may carry; the previous summary,
            itself cut to ``budget_tokens`` before it is sent, is already counted.
    """

    budget_tokens: int
    summary_tokens: int
    system: str
    todo: ToolCall | None
    input_limit_tokens: int


def injection_budget_tokens(config: SummaryConfig, context_length: int | None) -> int:
    """Return the injected summary's budget: context length x ratio, floor 512."""
    return _budget(context_length, config.summary_token_ratio)


def plan_compression(
    config: SummaryConfig,
    *,
    context_length: int | None,
    reason: Reason,
    keep: Sequence[Message],
    count_tokens: Callable[[str], int],
    instructions: str = "",
) -> CompressionPlan:
    """Return the plan of one compression.

    The summarizer's context must hold the system prompt, the task state, the host's
    ``instructions`` for this compression (``summary_instructions`` and the
    compression's own, joined) with the notice that introduces them, the previous
    summary (at most one budget: it is cut to it), the transcript and the answer (one
    budget): everything a request holds but the transcript and the previous summary
    is counted as the request says it. A tiny context still carries
    ``MIN_INPUT_TOKENS`` of transcript a call.

    >>> from memory_summary.domain import SummaryConfig
    >>> plan = plan_compression(SummaryConfig(), context_length=128_000,
    ...     reason="turn", keep=(), count_tokens=len)
    >>> plan.budget_tokens, plan.input_limit_tokens > 100_000
    (6400, True)
    """
    budget = injection_budget_tokens(config, context_length)
    header = count_tokens(HEADERS[config.locale] + "\n")
    summary_tokens = max(budget - header, 1)
    system = system_prompt(
        config.summary_prompt,
        locale=config.locale,
        budget_tokens=summary_tokens,
        reason=reason,
    )
    todo = latest_todo_call(keep, config.todo_tool_names)
    framing = summary_request(  # all but the transcript and the previous summary
        (),
        previous_summary=None,
        todo=todo,
        system=system,
        locale=config.locale,
        instructions=instructions,
    )
    room = (
        context_tokens(context_length)
        - 2 * budget  # the previous summary and the answer
        - sum(count_tokens(message.text) for message in framing)
        - FRAMING_TOKENS
    )
    return CompressionPlan(
        budget_tokens=budget,
        summary_tokens=summary_tokens,
        system=system,
        todo=todo,
        input_limit_tokens=max(MIN_INPUT_TOKENS, room),
    )
