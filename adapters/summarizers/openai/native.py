"""OpenAI's ``POST /v1/responses/compact`` as a summarizer (extra ``openai``).

``OpenAICompactingLLM`` folds a range twice: a text summarizer (the offline
``ExtractiveSummarizer`` unless another is given) writes the record's readable,
portable text, and OpenAI's compaction endpoint (``client.responses.compact``)
turns the same range into one ``compaction`` item, whose ``encrypted_content``
only OpenAI reads, for the same account and model. The item is kept with the
record as its native artifact (provider ``"openai"``); a Responses API request to
the same model carries it (``conversation().prepare(format="responses")``), any
other request the text.

What is sent: the previous record's item first when OpenAI wrote it for this
model (else the previous text, as a ``developer`` message), then the range as
Responses input items (messages, function calls and their outputs); the
compaction's ``output`` is "all user messages followed by one compaction item",
of which the item is kept, with the user messages that fit the summary's budget
(``newest_within``; one no request can carry, ``lead_item``: content neither text
nor parts, a lone surrogate, is dropped); the range is archived, and recall reads it.

Never bricked: the text is written first, and any failure of the compaction (a
refused or missing item, an error, a timeout) leaves a reply with the text alone
(the record then has no artifact, and requests carry the text). A refusal that
names the item sent first (``invalid_encrypted_content``, a 400 naming the
compaction item: a key rotation, another account or model) is retried once
without it. ``refuses_native(exc)`` tells a host whether its own Responses call
failed because of the item: it then calls ``engine.drop_native`` and prepares the
same turn again, which carries the text.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import openai

from memory_summary.adapters.summarizers.offline.extractive import (
    ExtractiveSummarizer,
)
from memory_summary.domain import (
    Message,
    NativeArtifact,
    NativeRequest,
    Summarizer,
    SummaryReply,
    TokenUsage,
    chat_messages,
)
from memory_summary.domain.native import OPENAI_PROVIDER, lead_item, native_item

log = logging.getLogger(__name__)

COMPACTION_INSTRUCTIONS = (
    "Compact this conversation so that it can be continued: keep the facts, "
    "decisions, open tasks and the user's preferences."
)
_REFUSAL = re.compile(
    r"invalid_encrypted_content|encrypted[ _]content|"
    r"compaction item.{0,80}(?:invalid|could not|cannot|failed)|"
    r"could not be (?:decrypted|verified)",
    re.IGNORECASE | re.DOTALL,
)


_REASONING_ITEM = re.compile(r"\brs_[A-Za-z0-9]")
"""A reasoning item's id (``rs_...``): its encrypted content is not ours."""


def refuses_native(exc: BaseException | None) -> bool:
    """Tell whether an OpenAI error refused a compaction item the request carried.

    True for any OpenAI API error whose code is ``invalid_encrypted_content``
    (a 400 before the reply, or an error event in the middle of a stream), and for
    a 400 whose message names the item (its encrypted content, a compaction item
    that could not be decrypted or verified): the item cannot be read by this
    account, key or model, and every request carrying it will fail. The host then
    calls ``engine.drop_native(session_id, str(exc))`` and prepares the turn again
    (the text goes instead).

    >>> refuses_native(ValueError("x"))
    False
    """
    if not isinstance(exc, openai.APIError):
        return False
    if _REASONING_ITEM.search(str(exc)):  # a reasoning item's: the host's, not ours
        return False
    if getattr(exc, "code", None) == "invalid_encrypted_content":
        return True
    if not isinstance(exc, openai.APIStatusError) or exc.status_code != 400:
        return False
    return bool(_REFUSAL.search(str(exc)))


def input_items(history: Sequence[Message]) -> list[dict[str, object]]:
    """Return ``history`` as Responses API input items (text, calls, outputs).

    A stored item with no chat meaning (``reasoning``, ``web_search_call``:
    ``domain.provider_items``) is left out: its placeholder text is no message.

    >>> input_items([Message("user", "hi")])
    [{'type': 'message', 'role': 'user', 'content': 'hi'}]
    """
    items: list[dict[str, object]] = []
    for message in chat_messages(history):
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.text,
                }
            )
            continue
        if message.text:
            role = message.role if message.role != "system" else "developer"
            items.append({"type": "message", "role": role, "content": message.text})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
            for call in message.tool_calls
        )
    return items


def compaction_usage(usage: object) -> TokenUsage | None:
    """Return a compaction's ``usage`` as ours (input counts the cached tokens).

    A count that is no int (a bool, a float) makes it no usage: the engine counts.

    >>> compaction_usage({"input_tokens": True, "output_tokens": 5}) is None
    True
    """
    if usage is None:
        return None
    data = usage if isinstance(usage, Mapping) else getattr(usage, "__dict__", {})
    sent, received = data.get("input_tokens"), data.get("output_tokens")
    if not _is_count(sent) or not _is_count(received):
        return None
    details = data.get("input_tokens_details")
    cached = getattr(details, "cached_tokens", None)
    if isinstance(details, Mapping):
        cached = details.get("cached_tokens")
    read = cached if _is_count(cached) and 0 <= cached <= sent else 0
    return TokenUsage(max(sent, 0), max(received, 0), cache_read_tokens=read)


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _sum(one: TokenUsage | None, other: TokenUsage | None) -> TokenUsage | None:
    if one is None or other is None:
        return one or other
    return TokenUsage(
        one.input_tokens + other.input_tokens,
        one.output_tokens + other.output_tokens,
        cache_read_tokens=one.cache_read_tokens + other.cache_read_tokens,
        cache_write_tokens=one.cache_write_tokens + other.cache_write_tokens,
    )


class OpenAICompactingLLM:
    """Summarizes with a text summarizer and keeps OpenAI's compaction item beside.

    ``compact`` is what the engine calls to fold a range (``NativeSummarizer``);
    ``complete`` is the text summarizer's (recovering ranges archived without a
    summary, and the summary text itself).

    Args:
        client: an ``openai.OpenAI`` client (its key, base URL and retries).
        model: the model that compacts; a Responses request carries the item only
            to this model.
        text: the summarizer that writes the readable summary (default: the
            offline ``ExtractiveSummarizer``, no network).
        instructions: the compaction's ``instructions`` (None: the module's).
        timeout_s: the longest a compaction waits when the engine gives no deadline.

    Example:
        >>> import openai
        >>> client = openai.OpenAI(api_key="sk-...", base_url="http://127.0.0.1:9/v1")
        >>> OpenAICompactingLLM(client, model="gpt-5.4-mini").model
        'gpt-5.4-mini'
    """

    label = "openai-compaction"

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        text: Summarizer | None = None,
        instructions: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        responses = getattr(client, "responses", None)
        compact = getattr(responses, "compact", None)
        if compact is None:
            raise TypeError(
                f"{type(client).__name__} has no responses.compact: "
                "OpenAICompactingLLM needs a synchronous openai.OpenAI client of an "
                "openai SDK that has it (pip install -U openai)"
            )
        if inspect.iscoroutinefunction(compact):
            raise TypeError(
                "OpenAICompactingLLM needs a synchronous openai.OpenAI client, "
                f"not {type(client).__name__} (the engine calls it on its threads)"
            )
        self._client = client
        self.model = model
        self._text = text or ExtractiveSummarizer()
        self._instructions = instructions or COMPACTION_INSTRUCTIONS
        self._timeout_s = timeout_s

    def context_length(self, model: str | None = None) -> int | None:
        """Return the text summarizer's context length (it reads the prompt)."""
        length = getattr(self._text, "context_length", None)
        return length() if callable(length) else None

    def complete(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> str:
        """Return the text summarizer's answer to ``messages``."""
        return self.complete_with_usage(
            messages, max_tokens=max_tokens, temperature=temperature
        ).text

    def complete_with_usage(
        self,
        messages: Sequence[Message],
        *,
        model: str | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> SummaryReply:
        """Return the text summarizer's answer, with its usage when it reports one.

        ``model`` (the compaction's) is not the text summarizer's: it uses its own.
        """
        with_usage = getattr(self._text, "complete_with_usage", None)
        if callable(with_usage):
            reply = with_usage(messages, max_tokens=max_tokens, temperature=temperature)
            assert isinstance(reply, SummaryReply)
            return reply
        text = self._text.complete(
            messages, max_tokens=max_tokens, temperature=temperature
        )
        return SummaryReply(text)

    def compact(
        self,
        request: NativeRequest,
        *,
        model: str | None = None,
        max_tokens: int,
        timeout_s: float | None = None,
    ) -> SummaryReply:
        """Return the text summary of ``request.history`` and OpenAI's item for it."""
        name = model or self.model
        deadline = time.monotonic() + (timeout_s or self._timeout_s)
        reply = self.complete_with_usage(
            request.prompt, max_tokens=max_tokens, temperature=0.0
        )
        previous = request.previous
        item = (
            previous
            if previous is not None and previous.serves(OPENAI_PROVIDER, name)
            else None
        )
        for sent in (item, None) if item is not None else (None,):
            try:
                found, lead, usage = self._compacted(request, name, deadline, sent)
            except Exception as exc:  # noqa: BLE001 - any fault: the text goes alone
                if sent is not None and refuses_native(exc):
                    log.warning(
                        "compaction refused the item sent first (%s); "
                        "sending the text instead",
                        exc,
                    )
                    continue
                log.warning("compaction failed (%s); the text goes alone", exc)
                return reply
            if found is None:
                log.warning("compaction made no usable item; the text goes alone")
                return SummaryReply(reply.text, _sum(reply.usage, usage))
            kept = newest_within(lead, max_tokens)
            if len(kept) < len(lead):
                log.info(
                    "compaction returned %d user messages; the newest %d fit the "
                    "summary budget and go with the item",
                    len(lead),
                    len(kept),
                )
            artifact = NativeArtifact(OPENAI_PROVIDER, name, found, lead=kept)
            return SummaryReply(reply.text, _sum(reply.usage, usage), artifact)
        return reply

    def _compacted(
        self,
        request: NativeRequest,
        model: str,
        deadline: float,
        item: NativeArtifact | None,
    ) -> tuple[
        dict[str, object] | None, tuple[dict[str, object], ...], TokenUsage | None
    ]:
        """Return the compaction's item (None: none), its user messages, its usage."""
        lead: list[dict[str, object]] = []
        if item is not None:  # the previous output: its user messages, then its item
            lead.extend(item.items)
        elif request.previous_text:
            lead.append(
                {
                    "type": "message",
                    "role": "developer",
                    "content": "Summary of the earlier conversation:\n"
                    + request.previous_text,
                }
            )
        arguments: dict[str, Any] = {
            "model": model,
            "input": [*lead, *input_items(request.history)],
            "instructions": self._instructions,
            "timeout": max(deadline - time.monotonic(), 0.001),
        }
        response = self._client.responses.compact(**arguments)
        output = getattr(response, "output", None)
        found = None
        users: list[dict[str, object]] = []
        for entry in output if isinstance(output, list) else []:
            to_dict = getattr(entry, "to_dict", None)
            raw = to_dict(mode="json", warnings=False) if callable(to_dict) else entry
            if getattr(entry, "type", None) == "compaction":
                found = native_item(raw)
            elif _is_user_message(raw):  # kept: the item stands for the rest only
                user = lead_item(_message_item(raw))
                if user is None:  # no request could carry it, no store keep it
                    log.warning("compaction returned a malformed user message: dropped")
                else:
                    users.append(user)
        return found, tuple(users), compaction_usage(getattr(response, "usage", None))


def newest_within(
    messages: Sequence[Mapping[str, object]], budget: int
) -> tuple[dict[str, object], ...]:
    """Return the newest of ``messages`` whose JSON fits ``budget`` UTF-8 bytes.

    OpenAI's compact returns every user message of its input; sent back at each
    compaction, they would grow without end. Taken newest first, each that still
    fits is kept (one too large is skipped, older ones may still fit), counted in
    UTF-8 bytes (never fewer than tokens), within the summary's own budget; kept in
    their order.

    >>> newest_within([{"content": "a"}, {"content": "b" * 30}, {"content": "c"}], 40)
    ({'content': 'a'}, {'content': 'c'})
    """
    kept: list[dict[str, object]] = []
    used = 0
    for message in reversed(messages):
        size = len(json.dumps(message, ensure_ascii=False).encode("utf-8", "replace"))
        if used + size > budget:
            continue
        kept.append(dict(message))
        used += size
    return tuple(reversed(kept))


def _is_user_message(raw: object) -> bool:
    return (
        isinstance(raw, Mapping)
        and raw.get("type") == "message"
        and raw.get("role") == "user"
    )


def _message_item(raw: Mapping[str, object]) -> dict[str, object]:
    """A user message of the compact output as an input item: role and content."""
    return {"type": "message", "role": "user", "content": raw.get("content", "")}
