"""Each recently prepared session's active messages, kept between its turns.

A ``Conversation`` appends what it saves to its session's ``Transcript`` and reads the
store again only when the store's ``ActiveSpan`` is not the one those saves lead to;
``Transcripts`` bounds how many sessions are kept (least recently prepared go first).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence

import attrs

from memory_summary.domain import SUMMARY_KIND, ActiveSpan, Message, repair_pairs
from memory_summary.domain.anthropic_pairing import CONTINUED
from memory_summary.domain.anthropic_turns import turn_content

from .response_items import Item, items_of

__all__ = ["TRANSCRIPT_SESSIONS", "Transcript", "Transcripts"]

TRANSCRIPT_SESSIONS = 1024
"""How many sessions' active messages the engine keeps for ``prepare`` (the most
recently prepared; a session it dropped is read again on its next turn)."""


@attrs.define
class Transcript:
    """A session's active messages as the engine last knew them.

    ``dicts`` are ``messages`` in OpenAI's format; ``plain`` says the OpenAI
    request can be built from them as they are (no stored instruction or summary,
    every tool call answered right after it); ``open_calls`` are the newest
    assistant's calls still unanswered, in order. Results that arrive in another
    order than their calls (``record`` saves the library's answers before the host
    adds its own) are put in the calls' order as each arrives, as ``repair_pairs``
    places them, so such a turn stays plain.
    """

    span: ActiveSpan
    messages: list[Message]
    dicts: list[dict[str, object]]
    plain: bool = True
    open_calls: list[str] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    _calls: list[str] = attrs.field(factory=list)  # the newest assistant's calls
    _turns: _Turns | None = None  # the Anthropic turns, once asked for
    _items: list[list[Item]] | None = None  # each message's Responses items, once asked
    lead: tuple[object, list[dict[str, object]]] | None = None
    """The last OpenAI lead (the host's text prompt with the summary merged) and what
    it was built from: a turn with the same prompt and summary copies it."""
    read_last: int | None = None
    """The newest active id when the store's span was last seen to be this one's."""
    saved_since: list[int] = attrs.field(factory=list)
    """The ids the handle saved since: what a span without an id sum cannot vouch
    for (``unproven``)."""

    def replace(self, fresh: Transcript) -> None:
        """Take ``fresh``'s messages (the store's, read again) in place of these."""
        self.span, self.messages, self.dicts = fresh.span, fresh.messages, fresh.dicts
        self.plain, self.open_calls = fresh.plain, fresh.open_calls
        self._calls = fresh._calls
        self._turns = self._items = None
        self.read_last, self.saved_since = fresh.read_last, []

    def archived_to(self, span: ActiveSpan) -> bool:
        """Drop the oldest messages when the store's ``span`` is what remains of them.

        A compression that committed since the span was last seen archived the
        oldest active messages and left the rest: when the store's span (with an id
        sum) is the span of this transcript's newest ``span.count`` messages, those
        are the active ones and the others are dropped here, instead of reading
        the history again (a read whose cost grows with it). Only a plain
        transcript, cut before a message that is not a tool result (every group of
        calls and results whole on one side): what remains is as plain, and each
        message on either side of the cut was saved before any after it. Anything
        else (a foreign writer's message, a pop, a host instruction kept below
        the cut) leaves the transcript as it was and returns False.
        """
        cut = len(self.messages) - span.count
        if (
            not self.plain
            or cut <= 0
            or span.count <= 0
            or span.id_sum is None
            or self.span.id_sum is None
            or span.last_id != self.span.last_id
        ):
            return False
        first, before = self.messages[cut], self.messages[cut - 1]
        if (
            first.role == "tool"
            or first.id is None
            or first.id != span.first_id
            or before.id is None
            or before.id >= first.id
        ):
            return False
        dropped = sum(message.id or 0 for message in self.messages[:cut])
        if self.span.id_sum - dropped != span.id_sum:
            return False
        del self.messages[:cut], self.dicts[:cut]
        if self._items is not None:
            del self._items[:cut]
        self._turns = None  # the first turn may change (a user turn comes first)
        self.span = span
        self.seen()
        return True

    def unproven(self, span: ActiveSpan) -> bool:
        """Tell whether the store's matching ``span`` may still hide a change.

        It may when it carries no id sum and the handle saved since the span was
        seen. Another writer's pop of the newest message and save of another, then the
        handle's save, leave the count and the ends as the handle's save alone
        would; ``proven`` then reads the active messages after ``read_last``.
        """
        return bool(self.saved_since) and (
            span.id_sum is None or self.span.id_sum is None
        )

    def proven(self, after: Sequence[Message]) -> bool:
        """Tell whether the store's active messages ``after`` are the handle's saves.

        ``after``: those after ``read_last``, one more than ``saved_since`` asked for.
        """
        if [message.id for message in after] != sorted(self.saved_since):
            return False
        self.seen()
        return True

    def seen(self) -> None:
        """Note that the store's span was just seen to be this transcript's."""
        self.read_last, self.saved_since = self.span.last_id, []

    @property
    def settled(self) -> bool:
        """Tell whether no tool call of the newest assistant is half answered."""
        return not self.open_calls or len(self.open_calls) == len(self._calls)

    def anthropic_turns(self) -> list[dict[str, object]]:
        """Return the messages as Anthropic turns (a plain transcript's; a new list).

        The same turns ``messages_to_anthropic(anthropic_pairs(...), alternate=True)``
        gives a plain, settled history: a user turn first, each side's consecutive
        messages one turn. Every turn but the last is built once and shared.
        """
        if self._turns is None:
            self._turns = _Turns()
            for message in self.messages:
                self._turns.add(message)
        return self._turns.all()

    def response_items(self) -> list[Item]:
        """Return the messages as Responses input items (a new list, shared items)."""
        if self._items is None:
            self._items = [items_of([message]) for message in self.messages]
        return list(itertools.chain.from_iterable(self._items))

    @classmethod
    def of(cls, messages: list[Message]) -> Transcript:
        ids = [message.id or 0 for message in messages]
        span = (
            ActiveSpan(len(ids), ids[0], ids[-1], sum(ids))
            if ids
            else ActiveSpan(0, None, None, 0)
        )
        made = cls(span, [], [], read_last=span.last_id)
        made.extend(messages, counted=False)
        if made.plain:  # repair must agree: the tracking could miss a case
            repaired = repair_pairs(messages, True)
            made.plain = len(repaired) == len(made.messages) and all(
                a is b for a, b in zip(repaired, made.messages, strict=True)
            )
        return made

    def extend(self, saved: Sequence[Message], *, counted: bool = True) -> None:
        """Append messages the store just saved (``counted``: move the span)."""
        for message in saved:
            self.messages.append(message)
            self.dicts.append(message.to_openai())
            if self._turns is not None:
                self._turns.add(message)
            if self._items is not None:
                self._items.append(items_of([message]))
            self._track(message)
        if counted:
            ids = [m.id or 0 for m in saved]
            self.span = self.span.after_saving(ids)
            self.saved_since.extend(ids)

    def _track(self, message: Message) -> None:
        if message.role in ("system", "developer") or message.kind == SUMMARY_KIND:
            self.plain = False
        elif message.role == "tool":
            if message.tool_call_id not in self.open_calls:
                self.plain = False  # repair would move or drop it
                return
            self.open_calls.remove(message.tool_call_id)
            self._place_last()
        else:
            if self.open_calls:
                self.plain = False  # an earlier call was never answered
            if not message.tool_calls:  # most messages: nothing more to track
                self.open_calls, self._calls = [], []
                return
            self.open_calls = [call.id for call in message.tool_calls]
            self._calls = list(self.open_calls)
            if "" in self.open_calls or len(set(self.open_calls)) < len(self._calls):
                self.plain = False  # repair answers or drops such calls itself

    def _place_last(self) -> None:
        """Move the result just appended among its group's, in the calls' order.

        ``repair_pairs`` puts results in the order of their calls, answered or not
        yet; so does this, each time one arrives.
        """
        if not self.plain:
            return  # the request is assembled, and repaired, anyway
        start = len(self.messages) - (len(self._calls) - len(self.open_calls))
        rank = self._calls.index  # the ids of a plain group are distinct
        last = len(self.messages) - 1
        key = rank(self.messages[last].tool_call_id or "")
        at = last
        while at > start and rank(self.messages[at - 1].tool_call_id or "") > key:
            at -= 1
        if at == last:
            return
        self.messages.insert(at, self.messages.pop())
        self.dicts.insert(at, self.dicts.pop())
        if self._items is not None:
            self._items.insert(at, self._items.pop())
        if self._turns is not None:  # the results are the open user turn
            self._turns.group[:] = self.messages[start:]


class _Turns:
    """Anthropic turns built as messages arrive: closed ones kept, the last open."""

    def __init__(self) -> None:
        self.closed: list[dict[str, object]] = []
        self.side: str | None = None
        self.group: list[Message] = []

    def add(self, message: Message) -> None:
        side = "assistant" if message.role == "assistant" else "user"
        if self.side is None and side == "assistant":  # a user turn comes first
            self.closed.append({"role": "user", "content": CONTINUED})
        if self.group and side == self.side:
            self.group.append(message)
            return
        if self.group:
            content = turn_content(self.group, fill=True)  # no longer the last turn
            self.closed.append({"role": self.side, "content": content})
        self.side, self.group = side, [message]

    def all(self) -> list[dict[str, object]]:
        if not self.group:
            return list(self.closed)
        last: dict[str, object] = {
            "role": self.side,
            "content": turn_content(self.group),
        }
        return [*self.closed, last]


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
