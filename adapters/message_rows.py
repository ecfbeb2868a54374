"""How a ``Message`` is laid out in a SQL row, shared by the SQL stores."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memory_summary.domain import Message, StoreError, ToolCall

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
)
SELECT_COLUMNS = ", ".join(COLUMNS)


def to_json(data: object, what: str) -> str:
    """Return ``data`` as JSON text, or raise StoreError naming ``what``."""
    try:
        return json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what} is not JSON-compatible: {exc}") from exc


def message_values(message: Message) -> tuple[object, ...]:
    """Return the row values of ``message`` in ``COLUMNS[1:]`` order (no id)."""
    calls = [
        {"id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.tool_calls
    ]
    return (
        message.role,
        message.content,
        to_json(calls, "tool_calls") if calls else None,
        message.tool_call_id,
        message.name,
        message.kind,
        message.timestamp,
        to_json(dict(message.metadata), "message metadata")
        if message.metadata
        else None,
    )


def row_message(row: Sequence[object]) -> Message:
    """Return the message of a row selected with ``SELECT_COLUMNS``."""
    id_, role, content, calls, call_id, name, kind, timestamp, metadata = row
    tool_calls = [ToolCall.from_mapping(c) for c in _json(calls)] if calls else ()
    return Message(
        role,  # type: ignore[arg-type]
        content,
        tool_calls=tool_calls,
        tool_call_id=call_id,
        name=name,
        kind=kind,
        timestamp=timestamp,
        metadata=_json(metadata) if metadata else {},
        id=int(id_),  # type: ignore[call-overload]
    )


def _json(value: object) -> Any:
    """Decode a JSON column (text from SQLite, already decoded from PostgreSQL)."""
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def metadata_json(namespace: str, key: str, data: Mapping[str, object]) -> str:
    """Return metadata as JSON text, checking it is a JSON-compatible mapping."""
    if not isinstance(data, Mapping):
        raise StoreError(f"metadata {namespace}/{key} must be a mapping")
    return to_json(dict(data), f"metadata {namespace}/{key}")


def check_limit(limit: int | None) -> None:
    """Reject a negative ``limit`` the way InMemoryStore does."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit={limit} is invalid; allowed: None or int >= 0")
