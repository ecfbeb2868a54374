"""Every exception memory-summary raises on purpose.

```
MemorySummaryError                  catch this to catch everything we raise on purpose
 +-- ConfigError (also ValueError)  names the field, the value and what is allowed
 |    +-- ConfigErrors               several at once (``errors`` lists each)
 +-- MessageError (also ValueError) a message or tool call is malformed; names the field
 +-- QueryError (also ValueError)   a history search's query cannot be searched
 +-- HistoryNotFound (also ValueError) a message id that is not in this session
 +-- RecallUnsupported (also TypeError) the store cannot search or read its history
 +-- StoreError                     the store failed; nothing was applied
 |    +-- MalformedRecord            a stored row cannot be decoded (foreign or corrupt)
 |    +-- PartiallySaved             a store without batches failed midway (lists both)
 |    +-- StoreUnavailable           the database cannot be opened as our store
 +-- SummarizerError                the LLM failed; the engine degrades to trim-only
 |    +-- SummarizerTimeout          no (whole) answer before the deadline
 |    +-- SummarizerContextError     the request exceeds the model's context window
 +-- TokenizerError                 the token vocabulary is missing or fails its check
 +-- EngineClosed                   a call arrived after stop()
```
"""

from __future__ import annotations

import copy
import types
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

_Saved = TypeVar("_Saved")  # the store's messages (``Message``; errors import no model)
_Error = TypeVar("_Error", bound=BaseException)


class MemorySummaryError(Exception):
    """Base of every error memory-summary raises on purpose.

    Every one pickles, copies and deep-copies as itself (same class, message and
    attributes), whatever its constructor takes: errors cross process and thread
    boundaries (process pools, the fold worker, logging handlers that pickle).
    """

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuilt from args and attributes, never by calling __init__ again:
        # Exception's own reduce calls cls(*args), and args holds only the
        # message, so a constructor with more arguments (ConfigError's field,
        # value, allowed) failed with a TypeError at unpickling.
        return (_rebuilt, (type(self), self.args), self.__dict__ or None)


def _rebuilt(cls: type[_Error], args: tuple[object, ...]) -> _Error:
    """Return a ``cls`` holding ``args`` without running its ``__init__``."""
    return cls.__new__(cls, *args)


class UnpicklableValue:
    """What a ``ConfigError``'s rejected value that cannot be pickled unpickles as.

    Its ``repr`` is the value's, as the error's message shows it (a lambda, a
    lock); two are equal when their ``repr`` is.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return type(other) is UnpicklableValue and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __reduce__(self) -> tuple[object, ...]:
        return (UnpicklableValue, (self.text,))


class ConfigError(MemorySummaryError, ValueError):
    """A configuration value is invalid.

    Attributes:
        field: the configuration field (snake_case name).
        value: the rejected value. Pickled, a value pickle cannot take (a lambda,
            a function defined in a function, a lock or a connection, also inside
            a container or an object) becomes an ``UnpicklableValue`` of its
            ``repr``: the error still crosses a process boundary, with its message
            unchanged.
        allowed: a human description of what is allowed.
    """

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}={value!r} is invalid; allowed: {allowed}")

    def __reduce_ex__(self, protocol: Any) -> tuple[object, ...]:
        rebuilt, args, state = self.__reduce__()  # pickle's: copies use the hooks below
        if isinstance(state, dict) and _unpicklable(state.get("value"), protocol):
            state = {**state, "value": UnpicklableValue(repr(state["value"]))}
        return rebuilt, args, state

    # Copies keep the value as it is (one pickle cannot take too), which
    # ``__reduce_ex__`` replaces for pickle alone. Only here: another error's copies
    # go through its ``__reduce__``, a subclass's own one included.
    def __copy__(self) -> ConfigError:
        copied = _rebuilt(type(self), self.args)
        copied.__dict__.update(self.__dict__)
        return copied

    def __deepcopy__(self, memo: dict[int, Any]) -> ConfigError:
        copied = _rebuilt(type(self), copy.deepcopy(self.args, memo))
        memo[id(self)] = copied
        copied.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return copied


_NAMED = (types.FunctionType, type)  # pickled by their module and qualified name
_CONTAINERS = (list, tuple, set, frozenset)
_PLAIN = frozenset({str, bytes, int, float, complex, bool, type(None)})
_DEPTH = 8  # how deep a value is looked into: deeper parts pickle or fail as they do
# The reducers registered with ``copyreg`` (``re.Pattern``'s...), which pickle and
# copy use before ``__reduce_ex__``: ``copy`` holds the very table.
_REGISTERED: dict[type, Any] = getattr(copy, "dispatch_table", {})


def _unpicklable(value: object, protocol: Any, depth: int = 0) -> bool:
    """Tell whether pickling ``value`` surely fails, without pickling it.

    A lambda or a function or class defined in a function (``<locals>``) has no
    name its module can be searched by; an object whose type refuses to be reduced
    (a lock, a connection, an open file, a generator) raises from
    ``__reduce_ex__``. Containers and what an object reduces to (its arguments
    and its state: a bound method's object, an instance's attributes) are looked
    into, ``_DEPTH`` levels deep. Not every failure is foreseen (one deeper, a C
    type pickled by a name under protocols 0 and 1): such a value fails as before.
    """
    kind = type(value)
    if kind in _PLAIN:
        return False
    if isinstance(value, _NAMED):
        name = getattr(value, "__qualname__", "")
        return "<lambda>" in name or "<locals>" in name
    if depth >= _DEPTH:
        return False
    deeper = depth + 1
    if kind in _CONTAINERS:
        return any(_unpicklable(item, protocol, deeper) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        return any(
            _unpicklable(key, protocol, deeper) or _unpicklable(item, protocol, deeper)
            for key, item in value.items()  # type: ignore[attr-defined]
        )
    try:  # pickle's order: the registry (``copyreg``'s, as ``copy`` reads it) first
        reducer = _REGISTERED.get(kind)
        reduced = reducer(value) if reducer else value.__reduce_ex__(protocol)
    except Exception:  # noqa: BLE001 - what pickle would raise
        return True
    if not isinstance(reduced, tuple):  # a global's name
        return False
    return any(_unpicklable(part, protocol, deeper) for part in reduced[1:3])


class ConfigErrors(ConfigError):
    """Several configuration values are invalid; all are reported at once.

    ``field``, ``value`` and ``allowed`` are the first error's.

    Attributes:
        errors: every error, in the order found.
    """

    def __init__(self, errors: tuple[ConfigError, ...]) -> None:
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        first = errors[0]
        super().__init__(first.field, first.value, first.allowed)
        self.errors = errors
        self.args = ("; ".join(str(error) for error in errors),)


class MessageError(MemorySummaryError, ValueError):
    """A message or tool call is malformed.

    Attributes:
        field: the offending field, e.g. ``"role"`` or ``"tool_calls[0].arguments"``.
        problem: what is wrong with it and what is allowed.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"message field {field!r}: {problem}")


class QueryError(MemorySummaryError, ValueError):
    """A history search's query cannot be searched (not text, no word, too long)."""


class HistoryNotFound(MemorySummaryError, ValueError):
    """A message id that is not one of this session's stored messages.

    Attributes:
        session_id: the session asked about.
        message_id: the id it does not hold.
    """

    def __init__(self, session_id: str, message_id: int) -> None:
        self.session_id = session_id
        self.message_id = message_id
        super().__init__(f"session {session_id!r} has no message with id {message_id}")


class RecallUnsupported(MemorySummaryError, TypeError):
    """The store cannot search or read its history (it is no ``SearchableStore``)."""


class StoreError(MemorySummaryError):
    """The memory store failed; the operation was not applied."""


class StoreUnavailable(StoreError):
    """The database cannot be opened as this library's store; nothing was changed.

    Its server cannot be reached, the store is missing where it must already
    exist (a schema that does not exist or is another application's), or it was
    written by a newer release.
    """


class PartiallySaved(StoreError, Generic[_Saved]):
    """The store failed midway through a batch: the first messages are stored.

    Only a store without ``save_messages`` (no batch in one transaction; every
    store this library ships has it) saves a batch one message at a time, so only
    such a store can fail once some are saved. Nothing is undone (the store has no
    way to): ``saved`` are stored, ``unsaved`` are not. Saving the batch again would
    store ``saved`` twice; ``Conversation.add(*error.unsaved)`` completes it.

    Attributes:
        session_id: the session saved to.
        saved: the messages the store saved, as stored (with their ids), in order.
        unsaved: the rest of the batch, not saved, in order.
    """

    def __init__(
        self,
        session_id: str,
        saved: Sequence[_Saved],
        unsaved: Sequence[_Saved],
    ) -> None:
        self.session_id = session_id
        self.saved = tuple(saved)
        self.unsaved = tuple(unsaved)
        ids = [getattr(message, "id", None) for message in self.saved]
        total = len(self.saved) + len(self.unsaved)
        super().__init__(
            f"the store failed midway through a batch of {total} messages for "
            f"session {session_id!r}: saved {len(self.saved)} (ids {ids}), not "
            f"saved {len(self.unsaved)}"
        )


class MalformedRecord(StoreError):
    """A stored row cannot be decoded: invalid JSON, or JSON that is not an object.

    The store itself is healthy; the engine moves such a record aside (quarantine).
    """


class SummarizerError(MemorySummaryError):
    """The summarizer LLM failed; the engine degrades to trim-only."""


class SummarizerTimeout(SummarizerError):
    """The summarizer LLM did not answer in time."""


class SummarizerContextError(SummarizerError):
    """The request exceeds the summarizer model's context window.

    The engine retries the chunk once at half its size before it degrades.
    """


class TokenizerError(MemorySummaryError):
    """The token vocabulary is missing or failed its integrity check."""


class EngineClosed(MemorySummaryError):
    """A call arrived after the engine was stopped."""
