"""Anthropic's on-demand compaction as a summarizer (extra ``anthropic``).

``AnthropicCompactingLLM`` is an ``AnthropicLLM`` that also folds natively (a
``NativeSummarizer``): it sends the range to fold in the Messages format with a
top-level ``compaction: {"type": "summarize"}`` and the beta ``compact-2026-09-04``,
plus the host's ``system`` and ``tools`` for the session when the engine knows them
(the summarizer reads them, and the prompt cache is reused). What came before the
range goes first: the record's compaction block when Anthropic wrote it for this
model, else the record's text merged into ``system`` as ``assemble_anthropic`` merges
it. The answer is one ``compaction`` block (``stop_reason`` ``"compaction"``): its
``content`` is the summary's text, the block itself (every field, unknown ones too)
the record's native artifact.

Never bricked: a block whose ``content`` is null or empty, a missing or malformed
block, or a stop short of one falls back, within the same call's deadline, to the
text path (``complete_with_usage`` on the rendered prompt), whose reply has no
artifact. A stop the text path refuses too (``max_tokens``, ``refusal``, the
model's context window reached: ``stop_error``) fails the call as it would there.
A 400 that names compaction is retried once without the block sent first (the
record's text in its place); any other 400 (an invalid request: an unknown beta, a
tool rule, a model without on-demand compaction) takes the text path once, logged,
except a context-length one (``SummarizerContextError``: the engine folds a smaller
chunk). A range with tool calls while the host's tools are not known takes the
text path at once (the API refuses ``tool_use`` blocks without ``tools``). Other
errors are the text path's, retried and translated by the same code (``errors``,
``sdk.core``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import anthropic

from memory_summary.adapters.summarizers.sdk.stream import deadline_at
from memory_summary.domain import (
    AnthropicSystem,
    Message,
    NativeArtifact,
    NativeRequest,
    SummarizerContextError,
    SummarizerError,
    SummaryReply,
    anthropic_pairs,
    assemble_messages,
    chat_messages,
    messages_from_anthropic,
    messages_to_anthropic,
    summary_message,
    with_block_first,
)
from memory_summary.domain.native import ANTHROPIC_PROVIDER, native_block

from .llm import AnthropicLLM, stop_error, token_usage

log = logging.getLogger(__name__)

COMPACTION_BETA = "compact-2026-09-04"
"""The beta header of on-demand compaction."""
TEMPERATURE = 0.3


def compaction_payload(
    request: NativeRequest, *, block: Mapping[str, object] | None
) -> tuple[AnthropicSystem, list[dict[str, object]]]:
    """Return ``(system, messages)`` of a compaction request for ``request``.

    ``block``: the previous compaction block, sent first; None merges the previous
    text into ``system`` instead (when there is one). Items only the Responses API
    reads (``domain.provider_items``) are left out, not merged into ``system``.
    """
    head: list[Message] = (
        [] if request.system is None else messages_from_anthropic(request.system, [])
    )
    text = request.previous_text if block is None else ""
    assembled = assemble_messages(
        [*head, *chat_messages(request.history)],
        summary_message(text) if text else None,
        "merge",
    )
    system, turns = messages_to_anthropic(
        anthropic_pairs(assembled, True), alternate=True
    )
    return system, turns if block is None else with_block_first(block, turns)


def _invalid_request(exc: SummarizerError) -> bool:
    """Tell whether a failed call was a 400 (an invalid request), not about length."""
    cause = exc.__cause__
    return (
        not isinstance(exc, SummarizerContextError)
        and isinstance(cause, anthropic.APIStatusError)
        and cause.status_code == 400
    )


def _names_compaction(exc: SummarizerError) -> bool:
    """Tell whether a 400 was about compaction (its block, its field)."""
    return _invalid_request(exc) and "compaction" in str(exc.__cause__).lower()


def _holds_tool_calls(history: tuple[Message, ...]) -> bool:
    """Tell whether ``history`` has tool calls or results (the API needs ``tools``)."""
    for message in history:
        if message.tool_calls or message.role == "tool":
            return True
        if isinstance(message.content, list) and any(
            str(part.get("type", "")).endswith(("tool_use", "tool_result"))
            for part in message.content
            if isinstance(part, Mapping)
        ):
            return True
    return False


class AnthropicCompactingLLM(AnthropicLLM):
    """Summarizes with Claude's own compaction; ``AnthropicLLM``'s text path besides.

    ``compact`` is what the engine calls to fold a range (``NativeSummarizer``);
    ``complete`` and ``stream`` stay the text path (recovering ranges archived
    without a summary, and the fallback).

    Args:
        model: the model that compacts (``$ANTHROPIC_MODEL``, else
            ``"claude-haiku-4-5"``); it must support on-demand compaction.
        api_key: as ``AnthropicLLM``'s.
        base_url: as ``AnthropicLLM``'s.
        timeout_s: as ``AnthropicLLM``'s; a compaction and its fallback share it.
        max_retries: as ``AnthropicLLM``'s.
        connect_timeout_s: as ``AnthropicLLM``'s.
        context_tokens: as ``AnthropicLLM``'s.
        max_reply_chars: as ``AnthropicLLM``'s.
        extra_body: as ``AnthropicLLM``'s, sent with compactions too.

    Example:
        >>> llm = AnthropicCompactingLLM("claude-sonnet-4-6", api_key="sk-ant-...")
        >>> llm.context_length()
        200000
    """

    def compact(
        self,
        request: NativeRequest,
        *,
        model: str | None = None,
        max_tokens: int,
        timeout_s: float | None = None,
    ) -> SummaryReply:
        """Fold ``request.history`` by on-demand compaction (see the module)."""
        name = model or self.model
        deadline = deadline_at(timeout_s)
        previous = request.previous
        block = (
            previous.block
            if previous is not None and previous.serves(ANTHROPIC_PROVIDER, name)
            else None
        )
        reply = None
        if not request.tools and _holds_tool_calls(request.history):
            log.info("the range holds tool calls and no tools are known; text path")
        else:
            for sent in (block, None) if block is not None else (None,):
                try:
                    reply = self._compacted(request, name, max_tokens, deadline, sent)
                    break
                except SummarizerError as exc:
                    if not _invalid_request(exc):
                        raise
                    if sent is not None and _names_compaction(exc):
                        log.warning(
                            "compaction refused the block sent first (%s); "
                            "sending the text instead",
                            exc,
                        )
                        continue
                    log.warning("compaction refused (%s); using the text path", exc)
                    break
        if reply is not None:
            return reply
        remaining = (
            None if deadline is None else max(deadline - time.monotonic(), 0.001)
        )
        return self.complete_with_usage(
            request.prompt,
            model=name,
            max_tokens=max_tokens,
            temperature=TEMPERATURE,
            timeout_s=remaining,
        )

    def _compacted(
        self,
        request: NativeRequest,
        model: str,
        max_tokens: int,
        deadline: float | None,
        block: Mapping[str, object] | None,
    ) -> SummaryReply | None:
        """Return the compaction's reply, or None when it made no usable block."""
        system, turns = compaction_payload(request, block=block)
        arguments: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": turns,
            "compaction": {"type": "summarize"},
            "betas": [COMPACTION_BETA],
        }
        if system is not None:
            arguments["system"] = system
        if request.tools:
            arguments["tools"] = [dict(tool) for tool in request.tools]
        if self._extra_body:
            arguments["extra_body"] = self._extra_body
        try:
            response = self._retried(
                lambda timeout: self._client.beta.messages.create(
                    **arguments, timeout=timeout
                ),
                deadline,
            )
        except ValueError as exc:  # the SDK's JSON decoding of a 200's body
            raise SummarizerError(
                f"the Anthropic API answered with a body that is not JSON: {exc}"
            ) from exc
        refused = stop_error(getattr(response, "stop_reason", None))
        if refused is not None:
            raise refused
        found = _compaction_block(response)
        if found is None:
            log.warning(
                "compaction made no usable block (stop reason %r); using the text path",
                getattr(response, "stop_reason", None),
            )
            return None
        usage = token_usage(getattr(response, "usage", None))
        content = found["content"]
        assert isinstance(content, str)  # native_block checked it
        artifact = NativeArtifact(ANTHROPIC_PROVIDER, model, found)
        return SummaryReply(self._capped(content, max_tokens), usage, artifact)


def _compaction_block(response: object) -> dict[str, object] | None:
    """Return the response's compaction block as sent, if it is a usable one."""
    content = getattr(response, "content", None)
    if not isinstance(content, list):
        return None
    for block in content:
        if getattr(block, "type", None) != "compaction":
            continue
        to_dict = getattr(block, "to_dict", None)  # the fields as received, extras too
        raw = to_dict(mode="json", warnings=False) if callable(to_dict) else block
        return native_block(raw)
    return None
