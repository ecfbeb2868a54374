"""The SQL of the core, written once and spelled per database by a ``Dialect``.

Queries are written with ``?`` placeholders and ``{field}`` slots (table prefix, clock,
boolean literals, row locks) that ``render_queries`` fills for one dialect.
"""

from __future__ import annotations

import attrs

from memory_summary.adapters.stores.rows import LEASE_HORIZON_S, SELECT_COLUMNS


@attrs.frozen(kw_only=True)
class Dialect:
    """How one database spells what the queries need.

    Attributes:
        clock: an SQL expression for now, in seconds since the epoch (a float).
        unlimited: the ``LIMIT`` parameter that means no limit.
        tables: the prefix of every table name (a quoted schema and a dot, or "").
        scope: what tells this store's session locks from another's in one database.
        placeholder: the driver's parameter marker; queries are written with ``?``.
        true, false: boolean literals the store writes to the ``archived`` column.
        archived: the condition that a row is archived: any value but ``false``
            (SQLite keeps whatever a foreign writer puts in the column).
        returning_id: appended to an INSERT when the driver reports no row id.
        lock_rows: appended to a SELECT whose rows the transaction must lock.
        lock_session: a statement taking a transaction lock on ``scope/session``
            (one parameter); None when every write transaction is serialized anyway.
        sort_bytes: appended to ``ORDER BY key`` to sort by code point.
    """

    clock: str
    unlimited: int | None
    tables: str = ""
    scope: str = ""
    placeholder: str = "?"
    true: str = "1"
    false: str = "0"
    archived: str = "archived IS NOT 0"
    returning_id: str = ""
    lock_rows: str = ""
    lock_session: str | None = None
    sort_bytes: str = ""


_MESSAGE_COLUMNS = (
    "session_id, role, content, tool_calls, tool_call_id, name, kind, timestamp, "
    "metadata, content_json, refusal"
)
_ACTIVE = "session_id = ? AND archived = {false}"
ACTIVE_ENDS = (
    f"(SELECT id FROM {{t}}messages WHERE {_ACTIVE} ORDER BY id LIMIT 1) AS lo, "
    f"(SELECT id FROM {{t}}messages WHERE {_ACTIVE} ORDER BY id DESC LIMIT 1) AS hi"
)
"""The oldest and newest active ids of a session as two index seeks: ``min(id)`` and
``max(id)`` beside ``count(*)`` would aggregate every active row (takes two more
``session_id`` parameters, before the outer query's)."""
# Not a host's instruction (``is_host_instruction``): those are never archived.
_HISTORY = "(role NOT IN ('system', 'developer') OR kind IS NOT NULL)"
_SESSION_COUNTS = (
    "session_id, sum(CASE WHEN archived = {false} THEN 1 ELSE 0 END), "
    "sum(CASE WHEN archived = {false} THEN 0 ELSE 1 END)"
)
# A lease holds while it expires at a number in (now, now + the longest ttl]: text, a
# blob, NULL, NaN or a far future (a foreign writer's) is expired (LEASE_HORIZON_S).
_LIVE = f"expires_at > {{now}} AND expires_at <= {{now}} + {LEASE_HORIZON_S!r}"
_TEMPLATES = {
    "insert_message": f"INSERT INTO {{t}}messages ({_MESSAGE_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?){returning_id}",
    "insert_archive": f"INSERT INTO {{t}}archive ({_MESSAGE_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?){returning_id}",
    "newest_active": f"SELECT {SELECT_COLUMNS} FROM {{t}}messages WHERE {_ACTIVE} "
    "ORDER BY id DESC LIMIT ?",
    # The window with the record in its first row, the newest (uncorrelated
    # subqueries: each read once); NULL in the others, so a long summary is not
    # copied out once per message.
    "newest_active_and_record": f"SELECT {SELECT_COLUMNS}, "
    f"CASE WHEN id = (SELECT max(id) FROM {{t}}messages WHERE {_ACTIVE}) "
    "THEN (SELECT data FROM {t}metadata WHERE namespace = ? AND key = ?) END "
    f"FROM {{t}}messages WHERE {_ACTIVE} ORDER BY id DESC LIMIT ?",
    "newest_all": f"SELECT {SELECT_COLUMNS} FROM {{t}}messages WHERE session_id = ? "
    "ORDER BY id DESC LIMIT ?",
    "newest_active_row": f"SELECT {SELECT_COLUMNS} FROM {{t}}messages "
    f"WHERE {_ACTIVE} ORDER BY id DESC LIMIT 1{{lock_rows}}",
    "delete_message": "DELETE FROM {t}messages WHERE session_id = ? AND id = ?",
    "count_active": f"SELECT count(*) FROM {{t}}messages WHERE {_ACTIVE}",
    "active_span": f"SELECT count(*), {ACTIVE_ENDS}, coalesce(sum(id), 0) "
    f"FROM {{t}}messages WHERE {_ACTIVE}",
    "oldest_active": f"SELECT {SELECT_COLUMNS} FROM {{t}}messages WHERE {_ACTIVE} "
    "AND id > ? ORDER BY id LIMIT ?",
    # Walks the session's ids in order (``messages_in_order``), not ``archived``.
    "archived_range": f"SELECT {SELECT_COLUMNS} FROM {{t}}messages "
    "WHERE session_id = ? AND {archived} AND id > ? AND id <= ? "
    "ORDER BY id LIMIT ?",
    "trim_cut": f"SELECT id FROM {{t}}messages WHERE {_ACTIVE} "
    "ORDER BY id DESC LIMIT 1 OFFSET ?",
    "archive_through": "UPDATE {t}messages SET archived = {true} "
    f"WHERE {_ACTIVE} AND id <= ? AND {_HISTORY}",
    "archive_rows": f"SELECT {SELECT_COLUMNS} FROM {{t}}archive WHERE session_id = ? "
    "ORDER BY id",
    "get_metadata": "SELECT data FROM {t}metadata WHERE namespace = ? AND key = ?",
    # NULL (never stored: the column is NOT NULL) when the text is the parameter
    "get_metadata_unless": "SELECT CASE WHEN data = ? THEN NULL ELSE data END "
    "FROM {t}metadata WHERE namespace = ? AND key = ?",
    "lock_metadata": "SELECT data FROM {t}metadata WHERE namespace = ? AND key = ?"
    "{lock_rows}",
    "upsert_metadata": "INSERT INTO {t}metadata (namespace, key, data) "
    "VALUES (?, ?, ?) ON CONFLICT (namespace, key) DO UPDATE SET data = excluded.data",
    "copy_metadata": "INSERT INTO {t}metadata (namespace, key, data) "
    "SELECT ?, key, data FROM {t}metadata WHERE namespace = ? AND key = ? "
    "ON CONFLICT (namespace, key) DO UPDATE SET data = excluded.data",
    "list_metadata": "SELECT key FROM {t}metadata WHERE namespace = ? "
    "ORDER BY key{sort_bytes}",
    "metadata_first": "SELECT key, data FROM {t}metadata "
    "WHERE namespace = ? ORDER BY key{sort_bytes} LIMIT ?",
    "metadata_page": "SELECT key, data FROM {t}metadata "
    "WHERE namespace = ? AND key{sort_bytes} > ? ORDER BY key{sort_bytes} LIMIT ?",
    "delete_metadata": "DELETE FROM {t}metadata WHERE namespace = ? AND key = ?",
    "delete_messages": "DELETE FROM {t}messages WHERE session_id = ?",
    "delete_archive": "DELETE FROM {t}archive WHERE session_id = ?",
    "delete_lease": "DELETE FROM {t}leases WHERE session_id = ?",
    "clear_messages": "DELETE FROM {t}messages",
    "clear_metadata": "DELETE FROM {t}metadata",
    "clear_archive": "DELETE FROM {t}archive",
    "clear_leases": "DELETE FROM {t}leases",
    # A lease row is taken over only once it expired: the upsert's WHERE refuses a
    # live one, so the statement changes no row and the caller gets None.
    "acquire_lease": "INSERT INTO {t}leases (session_id, owner, token, expires_at) "
    "VALUES (?, ?, ?, {now} + ?) ON CONFLICT (session_id) DO UPDATE SET "
    "owner = excluded.owner, token = excluded.token, expires_at = excluded.expires_at "
    f"WHERE NOT coalesce({_LIVE.replace('expires_at', '{t}leases.expires_at')}, "
    "{false})",
    "renew_lease": "UPDATE {t}leases SET expires_at = {now} + ? "
    f"WHERE session_id = ? AND token = ? AND {_LIVE}",
    "release_lease": "DELETE FROM {t}leases WHERE session_id = ? AND token = ?",
    "lease_owner": f"SELECT owner FROM {{t}}leases WHERE session_id = ? AND {_LIVE}",
    "break_lease": "DELETE FROM {t}leases WHERE session_id = ? AND owner = ?",
    # The record, the attached record and whether the lease holds, in one read: only
    # where every write transaction is serialized (SQLite), since it locks no lease
    # row. A record whose text is the parameter before it reads as 1, not as text.
    "lease_and_records": "SELECT (SELECT CASE WHEN data = ? THEN 1 ELSE data END "
    "FROM {t}metadata WHERE namespace = ? AND key = ?), "
    "(SELECT CASE WHEN data = ? THEN 1 ELSE data END "
    "FROM {t}metadata WHERE namespace = ? AND key = ?), "
    "EXISTS (SELECT 1 FROM {t}leases "
    f"WHERE session_id = ? AND token = ? AND {_LIVE})",
    "check_lease": "SELECT 1 FROM {t}leases "
    f"WHERE session_id = ? AND token = ? AND {_LIVE}{{lock_rows}}",
    "session_counts_first": f"SELECT {_SESSION_COUNTS} FROM {{t}}messages "
    "GROUP BY session_id ORDER BY session_id{sort_bytes} LIMIT ?",
    "session_counts_page": f"SELECT {_SESSION_COUNTS} FROM {{t}}messages "
    "WHERE session_id{sort_bytes} > ? "
    "GROUP BY session_id ORDER BY session_id{sort_bytes} LIMIT ?",
    "schema_version": "SELECT max(version) FROM {t}schema_version",
    "create_versions": "CREATE TABLE IF NOT EXISTS {t}schema_version "
    "(version INTEGER NOT NULL)",
    "insert_version": "INSERT INTO {t}schema_version (version) VALUES (?)",
}


def render_queries(dialect: Dialect) -> dict[str, str]:
    """Return every query of the core in ``dialect``'s spelling."""
    fields = {
        "t": dialect.tables,
        "now": dialect.clock,
        "true": dialect.true,
        "false": dialect.false,
        "archived": dialect.archived,
        "returning_id": dialect.returning_id,
        "lock_rows": dialect.lock_rows,
        "sort_bytes": dialect.sort_bytes,
    }
    return {
        name: template.format(**fields).replace("?", dialect.placeholder)
        for name, template in _TEMPLATES.items()
    }
