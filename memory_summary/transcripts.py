"""Each recently prepared session's active messages, kept between its turns.

A ``Conversation`` appends what it saves to its session's ``Transcript`` and reads the
store again only when the store's ``ActiveSpan`` is not the one those saves lead to;
``Transcripts`` bounds how many sessions are kept (least recently prepared go first).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import attrs

from memory_summary.domain import SUMMARY_KIND, ActiveSpan, Message, repair_pairs

__all__ = ["TRANSCRIPT_SESSIONS", "Transcript", "Transcripts"]

TRANSCRIPT_SESSIONS = 1024
"""How many sessions' active messages the engine keeps for ``prepare`` (the most
recently prepared; a session it dropped is read again on its next turn)."""


@attrs.define
class Transcript:
    """A session's active messages as the engine last knew them.

    ``dicts`` are ``messages`` in OpenAI's format; ``plain`` says the OpenAI
    request can be built from them as they are (no stored instruction or summary,
    every tool call answered right after it, in the calls' order); ``open_calls``
    are the newest assistant's calls still unanswered, in order.
    """

    span: ActiveSpan
    messages: list[Message]
    dicts: list[dict[str, object]]
    plain: bool = True
    open_calls: list[str] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    @classmethod
    def of(cls, messages: list[Message]) -> Transcript:
        ids = [message.id or 0 for message in messages]
        span = (
            ActiveSpan(len(ids), ids[0], ids[-1], sum(ids))
            if ids
            else ActiveSpan(0, None, None, 0)
        )
        made = cls(span, [], [])
        made.extend(messages, counted=False)
        if made.plain:  # repair must agree: the tracking could miss a case
            repaired = repair_pairs(messages, True)
            made.plain = len(repaired) == len(messages) and all(
                a is b for a, b in zip(repaired, messages, strict=True)
            )
        return made

    def extend(self, saved: Sequence[Message], *, counted: bool = True) -> None:
        """Append messages the store just saved (``counted``: move the span)."""
        for message in saved:
            self.messages.append(message)
            self.dicts.append(message.to_openai())
            self._track(message)
        if counted:
            self.span = self.span.after_saving([m.id or 0 for m in saved])

    def _track(self, message: Message) -> None:
        if message.role in ("system", "developer") or message.kind == SUMMARY_KIND:
            self.plain = False
        elif message.role == "tool":
            if self.open_calls and self.open_calls[0] == message.tool_call_id:
                del self.open_calls[0]
            else:
                self.plain = False  # repair would move it next to its call
        else:
            if self.open_calls:
                self.plain = False  # an earlier call was never answered
            self.open_calls = [call.id for call in message.tool_calls]


class Transcripts:
    """The active messages of the most recently prepared sessions, bounded."""

    def __init__(self, capacity: int = TRANSCRIPT_SESSIONS) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Transcript] = OrderedDict()

    def get(self, session_id: str) -> Transcript | None:
        with self._lock:
            found = self._items.get(session_id)
            if found is not None:
                self._items.move_to_end(session_id)
            return found

    def put(self, session_id: str, transcript: Transcript) -> None:
        with self._lock:
            self._items[session_id] = transcript
            self._items.move_to_end(session_id)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._items.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
