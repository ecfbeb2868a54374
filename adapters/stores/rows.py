"""How values are laid out in store rows, shared by every store.

The SQL stores write and read rows with these functions, and ``InMemoryStore`` runs the
same checks so that it refuses exactly what they refuse. Rows this library wrote are
decoded with the trusted ``Message.from_row`` (no converters run twice); a row that
fails the cheap shape checks goes through the validating constructor instead.

Why about 600 lines: one concept, the row layout. Writing a row and reading it back
must change together (every column's encoding sits next to its decoding), and the
key, limit and JSON checks are what each store runs before it writes that row.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memory_summary.domain import (
    Content,
    EncodedRecord,
    MalformedRecord,
    Message,
    MessageError,
    StoreError,
    ToolCall,
)
from memory_summary.domain.content import content_parts, plain_parts
from memory_summary.domain.model import ROLES, may_lack_content

_TOKEN_NONCE = uuid.uuid4().hex[:16]  # per process: tokens never repeat across them
_TOKEN_COUNTER = itertools.count(1)


def new_token() -> str:
    """Return a token unique across processes and time: a per-process nonce + counter.

    Cheaper than ``uuid4()`` (no system call), which matters once per compression.
    """
    return f"{_TOKEN_NONCE}{next(_TOKEN_COUNTER):x}"


log = logging.getLogger(__name__)

COLUMNS = (
    "id",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "kind",
    "timestamp",
    "metadata",
    "content_json",
    "refusal",
)
"""``content`` always holds text: the content itself, or for parts and None their
``Message.text`` (what an older reader or a SQL query sees). ``content_json`` holds the
content as given, as JSON, when it is not text: a list of parts, or ``null``."""
SELECT_COLUMNS = ", ".join(COLUMNS)
MAX_ROW_ID = 2**63 - 1  # SQL BIGINT / SQLite INTEGER
_ROLES = frozenset(ROLES)
_SCALARS = frozenset({str, int, float, bool, type(None)})
_JSON_ERRORS = (TypeError, ValueError, RecursionError)


def check_key(field: str, value: object) -> None:
    """Refuse a session id, namespace, key or owner no SQL column could store.

    Raises:
        StoreError: ``value`` is not text, holds a NUL (PostgreSQL text cannot) or
            a lone surrogate (no UTF-8 encoding has it); names ``field``.
    """
    if type(value) is not str:
        raise StoreError(f"{field} must be text (str), got {type(value).__name__}")
    if "\x00" in value:
        raise StoreError(f"{field} {value!r} holds a NUL character; allowed: text")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise StoreError(
                f"{field} {value!r} holds a lone surrogate; allowed: UTF-8 text"
            ) from exc


def is_store_key(value: object) -> bool:
    """Return whether ``value`` is a key every store can take (``check_key``).

    A listing may return other keys when a foreign writer put them there (a blob in
    SQLite's text column); no session id can be one.
    """
    try:
        check_key("key", value)
    except StoreError:
        return False
    return True


def check_row_id(field: str, value: int | None) -> None:
    """Refuse an id bound that is not an int or that no SQL integer holds."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field}={value!r} is invalid; allowed: int or None")
    if not -MAX_ROW_ID <= value <= MAX_ROW_ID:
        raise ValueError(f"{field}={value} is invalid; allowed: a 64-bit int")


def check_limit(limit: int | None) -> None:
    """Reject a negative or non-int ``limit`` the same way in every store."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit={limit!r} is invalid; allowed: None or int >= 0")
    if limit > MAX_ROW_ID:
        raise ValueError(f"limit={limit} is invalid; allowed: a 64-bit int")


def check_read(session_id: str, limit: int | None, **bounds: int | None) -> None:
    """Refuse a read's session id, ``limit`` and id ``bounds``, in that order."""
    check_key("session_id", session_id)
    check_limit(limit)
    for field, value in bounds.items():
        check_row_id(field, value)


def check_forget(session_id: str, namespaces: Sequence[str]) -> None:
    """Refuse a ``forget_session`` with a bad session id or namespace names."""
    check_key("session_id", session_id)
    if isinstance(namespaces, str):
        raise TypeError("namespaces must be a sequence of names, not one str")
    for namespace in namespaces:
        check_key("namespace", namespace)


def check_move(namespace: str, key: str, to_namespace: str) -> None:
    """Refuse a record move (``quarantine_metadata``) with a bad key or no move."""
    check_key("namespace", namespace)
    check_key("key", key)
    check_key("to_namespace", to_namespace)
    if to_namespace == namespace:
        raise ValueError(f"to_namespace={to_namespace!r} must differ from namespace")


def check_ttl(ttl_s: float) -> None:
    """Refuse a lease duration that is not a positive, finite number of seconds."""
    if (
        isinstance(ttl_s, bool)
        or not isinstance(ttl_s, (int, float))
        or not math.isfinite(ttl_s)
        or ttl_s <= 0
    ):
        raise ValueError(f"ttl_s={ttl_s!r} is invalid; allowed: seconds > 0")


MAX_LEASE_TTL_S = 86_400.0
"""The longest lease a store grants, a day; also how far ahead a stored lease may
expire. A lease row expiring further ahead than now + this, or at no finite time
(text, a blob, NaN, NULL: a foreign writer's), counts as expired (docs/stores.md)."""
LEASE_HORIZON_S = MAX_LEASE_TTL_S + 60.0
"""How far ahead a stored lease may expire and still hold: the longest lease plus a
minute, so a day-long lease survives a clock that steps back a little."""


def check_lease_ttl(ttl_s: float) -> None:
    """Refuse a lease duration that is not in seconds, > 0 and <= a day."""
    check_ttl(ttl_s)
    if ttl_s > MAX_LEASE_TTL_S:
        raise ValueError(
            f"ttl_s={ttl_s!r} is invalid; allowed: seconds > 0 and "
            f"<= {MAX_LEASE_TTL_S:g} (MAX_LEASE_TTL_S)"
        )


def is_archived(value: object) -> bool:
    """Return whether a stored ``archived`` flag marks its message archived.

    Only a numeric zero (0, 0.0, false) is active; anything else a foreign writer may
    leave in SQLite's column (2, -1, text, a blob, NULL) is archived, as the queries'
    ``archived IS NOT 0`` take it: a message is always in exactly one of the views.
    """
    return not (isinstance(value, (int, float)) and value == 0)


def to_json(data: object, what: str) -> str:
    """Return ``data`` as JSON text that every store can keep.

    Raises:
        StoreError: ``data`` holds something JSON cannot express (a set, NaN, an
            arbitrary object, a cycle) or a lone surrogate; names ``what``.
    """
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except _JSON_ERRORS as exc:
        raise StoreError(f"{what} is not JSON-compatible: {exc}") from exc
    return _keepable(text, what)


def _keepable(text: str, what: str) -> str:
    """Return ``text`` if it encodes to UTF-8 (no lone surrogate), else raise."""
    if not text.isascii() and has_lone_surrogate(text):
        raise StoreError(f"{what} is not JSON-compatible: it holds a lone surrogate")
    return text


# A compact str's size: a header, then (length + 1) code units of 1, 2 or 4 bytes.
_HEADER = sys.getsizeof("\u0100") - 4


def has_lone_surrogate(text: str) -> bool:
    r"""Tell whether ``text`` holds a lone surrogate, the one thing UTF-8 cannot encode.

    Every strict encoder refuses exactly those, so the cheapest for the text's width
    answers: Latin-1 (a copy) clears a text whose code points are all below 256 (70
    times faster than encoding it to UTF-8), UTF-16 or UTF-32 checks a wider one
    (twice as fast): a lineage of long non-ASCII summaries saves a millisecond a commit.
    The width is read from the text's size; a wrong guess only costs time.

    >>> has_lone_surrogate("café ☕"), has_lone_surrogate("caf\ud800")
    (False, True)
    """
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        pass
    else:
        return False
    wide = sys.getsizeof(text) > _HEADER + 3 * (len(text) + 1)
    try:
        text.encode("utf-32-le" if wide else "utf-16-le")
    except UnicodeEncodeError:
        return True
    return False


def metadata_json(namespace: str, key: str, data: Mapping[str, object]) -> str:
    """Return a metadata record as JSON text; check it is a JSON-compatible mapping.

    An ``EncodedRecord`` brings its JSON: it is kept as made, not encoded again.
    """
    check_key("namespace", namespace)
    check_key("key", key)
    if not isinstance(data, Mapping):
        raise StoreError(f"metadata {namespace}/{key} must be a mapping")
    what = f"metadata {namespace}/{key}"
    if type(data) is EncodedRecord:  # exactly: a subclass might change the mapping
        if data.utf8_safe:  # its maker checked it (the lineage: each version once)
            return data.json_text
        return _keepable(data.json_text, what)
    return to_json(dict(data), what)


def decode_record(namespace: str, key: str, raw: object) -> dict[str, object]:
    """Return the mapping a metadata row holds.

    Raises:
        MalformedRecord: the row is not JSON text of an object (a foreign writer or
            corruption); the engine moves such rows aside with ``quarantine_metadata``.
    """
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedRecord(
                f"metadata {namespace}/{key} is not UTF-8 text"
            ) from exc
    if not isinstance(raw, str):
        raise MalformedRecord(
            f"metadata {namespace}/{key} is not JSON text: {type(raw).__name__}"
        )
    try:
        data = json.loads(raw)
    except _JSON_ERRORS as exc:
        raise MalformedRecord(
            f"metadata {namespace}/{key} is not valid JSON: {exc}"
        ) from exc
    if not isinstance(data, dict):
        raise MalformedRecord(
            f"metadata {namespace}/{key} is JSON {type(data).__name__}, not an object"
        )
    return data


def record_generation(record: Mapping[str, object] | None) -> str | None:
    """Return the text ``"generation"`` of a summary record: None without a record.

    A record without one (a foreign writer's, the original plugin's) reads as ``""``,
    so a commit prepared while it existed is fenced once it is deleted.
    """
    if record is None:
        return None
    generation = record.get("generation")
    return generation if isinstance(generation, str) else ""


def json_copy(value: object) -> object:
    """Return an independent copy of decoded JSON (dicts, lists and scalars)."""
    kind = type(value)
    if kind is dict:
        return {
            k: v if type(v) in _SCALARS else json_copy(v)
            for k, v in value.items()  # type: ignore[attr-defined]
        }
    if kind is list:
        return [v if type(v) in _SCALARS else json_copy(v) for v in value]  # type: ignore[attr-defined]
    return value


def plain_copy(record: Mapping[str, object]) -> dict[str, object]:
    """Return a copy of a memo's kept mapping in plain dicts and lists, the caller's.

    ``json_copy`` for a decoded record; an ``EncodedRecord``'s frozen mappings and
    lists become plain ones (scalars shared either way).
    """
    if type(record) is dict:
        return json_copy(record)  # type: ignore[return-value]
    return _thawed(record)  # type: ignore[return-value]


def _thawed(value: object) -> object:
    if isinstance(value, dict):
        return {k: v if type(v) in _SCALARS else _thawed(v) for k, v in value.items()}
    if isinstance(value, list):
        if _SCALARS.issuperset(map(type, value)):  # (a lineage's ranges: thousands)
            return list(value)
        return [v if type(v) in _SCALARS else _thawed(v) for v in value]
    return value


def message_values(message: Message) -> tuple[object, ...]:
    """Return the row values of ``message`` in ``COLUMNS[1:]`` order (no id).

    Raises:
        StoreError: see ``metadata_column``.
    """
    if message.tool_calls:
        calls: str | None = json.dumps(
            [
                {"id": c.id, "name": c.name, "arguments": c.arguments}
                if c.type == "function"
                else {
                    "id": c.id,
                    "name": c.name,
                    "arguments": c.arguments,
                    "type": c.type,
                }
                for c in message.tool_calls
            ],
            ensure_ascii=False,
        )  # texts the constructor normalized: always encodable; rows stay as before
    else:
        calls = None
    content = message.content
    text = content if isinstance(content, str) else message.text
    return (
        message.role,
        text,
        calls,
        message.tool_call_id,
        message.name,
        message.kind,
        message.timestamp,
        metadata_column(message),
        content_column(message),
        message.refusal,
    )


def content_column(message: Message) -> str | None:
    """Return the ``content_json`` of ``message``: None for text, else its JSON.

    Raises:
        StoreError: the parts hold something JSON text cannot (a message that skipped
            the constructor's checks, say an int over Python's digit limit).
    """
    content = message.content
    if isinstance(content, str):
        return None
    return to_json(
        None if content is None else plain_parts(content), "message field 'content'"
    )


def _stored_call(call: Any) -> ToolCall:
    """Return a stored call, trusted; a foreign shape raises ``KeyError`` (checked).

    A foreign writer's ``{"id": 7}``, ``null`` arguments or an unknown type go
    through the validating constructor instead, which normalizes or refuses them.
    """
    if type(call) is not dict:
        raise KeyError("call")
    id_, name, arguments = call["id"], call["name"], call["arguments"]
    kind = call.get("type", "function")
    if (
        type(id_) is str
        and type(name) is str
        and type(arguments) is str
        and (kind == "function" or kind == "custom")
    ):
        return ToolCall.from_row(id_, name, arguments, kind)
    raise KeyError("call")


def stored_content(
    text: str, structured: object, *, may_be_none: bool, id_: object
) -> Content:
    """Return a row's content: its ``content_json`` when that is sound, else its text.

    Never raises: a ``content_json`` a foreign writer broke (not JSON, not a list of
    valid parts, ``null`` where None is not allowed) reads as the row's text column,
    with one WARNING, so the message is kept and the session never stalls.
    """
    if structured is None:
        return text
    try:
        if not isinstance(structured, str):
            raise TypeError(f"content_json is {type(structured).__name__}")
        data = json.loads(structured)
        if data is None and may_be_none:
            return None
        if isinstance(data, list):
            return content_parts(data)
        raise TypeError(f"content_json is JSON {type(data).__name__}")
    except (*_JSON_ERRORS, MessageError) as exc:
        log.warning("stored message %r: content_json ignored: %s", id_, exc)
        return text


def metadata_column(message: Message) -> str | None:
    """Return the JSON text of ``message.metadata`` (None when empty), checked.

    Also checks ``timestamp``: SQLite would silently store NaN as NULL.

    Raises:
        StoreError: the metadata is not JSON-compatible, or the timestamp is not
            finite; names the field.
    """
    timestamp = message.timestamp
    if timestamp is not None and not math.isfinite(timestamp):
        raise StoreError(
            f"message field 'timestamp' is {timestamp}; allowed: a finite number"
        )
    metadata = message.metadata
    return to_json(dict(metadata), "message field 'metadata'") if metadata else None


def stored_message(
    message: Message, row_id: int, metadata: dict[str, object] | None = None
) -> Message:
    """Return ``message`` as stored under ``row_id``, without re-running converters.

    ``metadata``: the copy of its metadata to keep (default: a new copy).
    """
    return Message.from_row(
        message.role,
        message.content,  # parts are frozen, safe to share
        message.tool_calls,
        message.tool_call_id,
        message.name,
        message.kind,
        message.timestamp,
        dict(message.metadata) if metadata is None else metadata,
        row_id,
        message.refusal,
    )


def popped(session_id: str, read: Callable[[], Message]) -> Message:
    """Return ``read()``, the message a pop deleted; say so when it cannot be read.

    Raises:
        MalformedRecord: the deleted row is no message (a foreign writer's): the
            error says it is gone, so no caller takes it for still stored.
    """
    try:
        return read()
    except MalformedRecord as exc:
        raise MalformedRecord(
            f"session {session_id!r}: the newest message was deleted, but its row "
            f"cannot be read ({exc})"
        ) from exc


def row_message(row: Sequence[Any]) -> Message:
    """Return the message of a row selected with ``SELECT_COLUMNS``.

    A row that passes the cheap shape checks is decoded with the trusted
    ``Message.from_row``; any other through the validating constructor.

    Raises:
        MalformedRecord: the row is not a message (written by someone else).
    """
    try:
        (
            id_,
            role,
            text,
            calls,
            call_id,
            name,
            kind,
            timestamp,
            metadata,
            structured,
            refusal,
        ) = row
    except (TypeError, ValueError) as exc:  # a foreign JSON row (RedisStore's)
        log.warning("stored message row cannot be decoded: %s", exc)
        raise MalformedRecord("stored message row is not a message row") from exc
    if (
        role in _ROLES
        and type(text) is str
        and type(id_) is int
        and (refusal is None or type(refusal) is str)
        and (call_id is None or type(call_id) is str)
        and (name is None or type(name) is str)
        and (kind is None or type(kind) is str)
        and (timestamp is None or type(timestamp) is float)
    ):
        try:
            data = json.loads(metadata) if metadata else {}
            if type(data) is dict:
                tool_calls = (
                    tuple([_stored_call(c) for c in json.loads(calls)]) if calls else ()
                )
                content = (
                    text
                    if structured is None  # text content: most rows, nothing to check
                    else stored_content(
                        text,
                        structured,
                        may_be_none=may_lack_content(role, tool_calls, refusal, data),
                        id_=id_,
                    )
                )
                return Message.from_row(
                    role,
                    content,
                    tool_calls,
                    call_id,
                    name,
                    kind,
                    timestamp,
                    data,
                    id_,
                    refusal,
                )
        except (*_JSON_ERRORS, KeyError):
            pass
    # A row that failed the trusted path: decoded validating every field.
    try:
        if type(id_) is not int:
            raise TypeError(f"id is {type(id_).__name__}, not int")
        tool_calls = json.loads(calls) if calls else ()
        data = json.loads(metadata) if metadata else {}
        refused = refusal if isinstance(refusal, str) else None
        content = (
            stored_content(
                text,
                structured,
                may_be_none=isinstance(data, Mapping)
                and may_lack_content(role, tool_calls, refused, data),
                id_=id_,
            )
            if isinstance(text, str)
            else text
        )
        return Message(
            role,
            content,
            tool_calls=tool_calls,
            tool_call_id=call_id,
            name=name,
            kind=kind,
            timestamp=timestamp,
            metadata=data,
            refusal=refused,
            id=id_,
        )
    except (*_JSON_ERRORS, MessageError) as exc:
        said = f"stored message {_clipped(repr(id_))} cannot be decoded"
        log.warning("%s: %s", said, _clipped(str(exc)))
        raise MalformedRecord(f"{said}: {_clipped(str(exc))}") from exc


def _clipped(text: str, most: int = 200) -> str:
    """Return ``text`` cut to ``most`` characters (a foreign value may be huge)."""
    return text if len(text) <= most else f"{text[:most]}..."


def json_row_message(raw: str | bytes) -> Message:
    """Return the message of a row kept as JSON text (``RedisStore``'s members).

    Raises:
        MalformedRecord: ``raw`` is not the JSON of a message row (a foreign writer).
    """
    try:
        row = json.loads(raw)
    except _JSON_ERRORS as exc:  # not JSON, not UTF-8
        log.warning("stored message row is not JSON: %s", exc)
        raise MalformedRecord("stored message row is not JSON") from exc
    return row_message(row)
