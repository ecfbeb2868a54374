"""The Redis store: the whole compression-store contract on one Redis server.

Every operation that reads and then writes is a Lua script (``redis_lua``), so it is
atomic for every process sharing the server: a fenced commit checks the lease, the
record's generation and the archive count and applies all or nothing, exactly as a
SQL transaction does. Rows are written and checked by the same code as the SQL
stores' (``message_rows``), so the store refuses what they refuse and reads back
what they read back. The history index (``redis_history``, ``SearchableStore``)
changes in the script that saves, pops or deletes its messages.

Leases are keys that expire on the server's clock, so they bind every process and
survive a restart when the server persists its data (RDB or AOF). A server that
persists nothing loses every key on a restart: a compression in flight then fails
its lease check and commits nothing. See docs/redis.md.

Why about 670 lines: this is the one class that implements the store protocol on
Redis, and its messages, its fenced commit and its leases share one key layout and one
set of scripts; what stands apart is mixed in (``redis_history``: search and reads of
the whole history; ``redis_metadata``: records).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, ClassVar

import redis

from memory_summary.adapters.stores.fence import DeprecatedCommits, commit_prelude
from memory_summary.adapters.stores.rows import (
    LEASE_HORIZON_S,
    check_forget,
    check_key,
    check_lease_ttl,
    check_limit,
    check_read,
    check_ttl,
    json_row_message,
    message_values,
    new_token,
    popped,
    row_message,
    stored_message,
)
from memory_summary.domain import (
    NAMESPACE,
    NO_SPAN,
    ActiveSpan,
    CommitRequest,
    CommitResult,
    MalformedRecord,
    Message,
    StoreError,
)
from memory_summary.domain.config import RecallIndex, check_recall_index
from memory_summary.domain.recall import message_terms

from . import history as redis_history
from . import lua
from .history import Arg, RedisHistory, index_entry
from .metadata import PAGE as _PAGE
from .metadata import RedisMetadata
from .records import DecodedRecords

log = logging.getLogger(__name__)

URL_VARIABLE = "MEMORY_SUMMARY_REDIS_URL"
DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "memory-summary:"
SAVE_ATTEMPTS = 3
"""A save whose reply is lost is sent this many times in all (``_save``)."""
REPLAY_S = 300.0
"""How long the server remembers a save's token, and the ids it gave."""
_MAX_TTL_MS = 2**40  # about 35 years: PEXPIRE must not overflow the server's clock
# The error codes of the scripts' checks of values another program wrote:
# ``lua.read_boundary``, ``lua.next_id`` and ``lua.index_check``.
_FOREIGN = ("FOREIGN_BOUNDARY ", "FOREIGN_COUNTER ", "FOREIGN_INDEX ")
_SCRIPTS = {  # the Lua scripts, by name (not the helpers they share)
    **{name: v for name, v in vars(lua).items() if name.isupper() and name[0] != "_"},
    **redis_history.SCRIPTS,
}


def _score_id(score: bytes | str) -> int:
    text = score.decode() if isinstance(score, bytes) else score
    return int(Decimal(text))


def _ms(seconds: float) -> int:
    return min(max(1, math.ceil(seconds * 1000)), _MAX_TTL_MS)


_HORIZON_MS = _ms(LEASE_HORIZON_S)  # a lease expiring further ahead is expired


class RedisStore(RedisHistory, RedisMetadata, DeprecatedCommits):
    """A compression store on a Redis server, shared by every process that opens it.

    Args:
        url: the server (``redis://host:port/db``); by default
            ``$MEMORY_SUMMARY_REDIS_URL`` or ``redis://127.0.0.1:6379/0``.
        prefix: begins every key the store writes (default ``"memory-summary:"``);
            give each tenant its own.
        session_ttl_s: when set, a session idle that long (no message saved,
            popped, trimmed or compacted) expires: its messages and its records in
            ``session_namespaces`` (its summary) go together.
        session_namespaces: metadata namespaces whose key is a session id, which
            ``session_ttl_s`` covers (default ``("summary",)``: the summaries);
            other namespaces never expire.
        timeout_s: connect and socket timeout of each command.
        client: a ``redis.Redis`` of your own (then ``url`` and ``timeout_s`` are
            not used, and ``close()`` leaves it open).
        recall_index: when a session is indexed for search (``IndexPolicyStore``):
            ``"lazy"`` at its first search, ``"eager"`` in the script that saves
            each message, ``"off"`` never (search refused). An engine applies its
            own ``SummaryConfig.recall_index`` when it is wired.

    Raises:
        StoreError: the server does not answer.

    Example:
        >>> store = RedisStore(prefix="tenant-a:")  # doctest: +SKIP
    """

    counts_locally: ClassVar[bool] = False
    """Whether ``count_history`` is a cheap local read the host's thread may run."""

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str = DEFAULT_PREFIX,
        session_ttl_s: float | None = None,
        session_namespaces: Sequence[str] = (NAMESPACE,),
        timeout_s: float = 5.0,
        client: redis.Redis | None = None,
        recall_index: RecallIndex = "lazy",
    ) -> None:
        check_key("prefix", prefix)
        self.recall_index: RecallIndex = check_recall_index(recall_index)
        if session_ttl_s is not None:
            check_ttl(session_ttl_s)
        if isinstance(session_namespaces, str):
            raise TypeError("session_namespaces must be a sequence of names, not str")
        for namespace in session_namespaces:
            check_key("namespace", namespace)
        self.url = url or os.environ.get(URL_VARIABLE, DEFAULT_URL)
        self.prefix = prefix
        self.session_ttl_s = session_ttl_s
        self._ttl = "0" if session_ttl_s is None else str(_ms(session_ttl_s))
        self._session_namespaces = tuple(session_namespaces)
        self._owns_client = client is None
        # No automatic retries: a write resent after a lost reply could apply twice
        # (a save alone is resent, with a token that makes it apply once: ``_save``).
        # A connection the server closed (a restart) is replaced before it is used.
        self._client = client or redis.Redis.from_url(
            self.url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
        )
        self._decoded = DecodedRecords()
        self._scripts = {
            name: self._client.register_script(text) for name, text in _SCRIPTS.items()
        }
        self._run("connect", self.url, self._client.ping)

    # -- keys and calls

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}:{name}"

    def _record(self, namespace: str, key: str) -> str:
        return f"{self.prefix}r:{namespace}\x00{key}"

    def _session_keys(self, session_id: str) -> list[str]:
        """The keys a session's TTL covers besides its history.

        Its boundary, its instructions kept below it, the history index (postings,
        entries, words), its records.
        """
        return [
            self._key("b", session_id),
            self._key("i", session_id),
            *self._index_keys(session_id),
            *(self._record(ns, session_id) for ns in self._session_namespaces),
        ]

    def _index_keys(self, session_id: str) -> list[str]:
        """The session's history index: postings, entries, words."""
        return [self._key(kind, session_id) for kind in ("p", "e", "w")]

    def _run(self, what: str, where: str, call: Callable[..., Any], *args: Any) -> Any:
        """Run one command or script; turn the driver's errors into ``StoreError``."""
        try:
            return call(*args)
        except redis.RedisError as exc:
            raise _store_error(what, where, exc) from exc

    def _script(
        self, name: str, where: str, keys: Sequence[str], args: Sequence[Arg]
    ) -> Any:
        script = self._scripts[name]
        return self._run(name.lower(), where, lambda: script(keys=keys, args=args))

    def close(self) -> None:
        """Close the store's connections (not those of a client you passed in)."""
        if self._owns_client:
            self._client.close()

    # -- messages

    def save_message(self, session_id: str, message: Message) -> Message:
        return self.save_messages(session_id, [message])[0]

    def save_messages(
        self, session_id: str, messages: Sequence[Message]
    ) -> list[Message]:
        """Store ``messages`` in order, in one script; see ``BatchSavingStore``.

        Every row is checked and encoded before the script runs, so a message the
        store refuses leaves nothing of its batch; the script gives the batch
        consecutive ids with nothing of another writer in between.
        """
        check_key("session_id", session_id)
        eager = self.recall_index == "eager"
        pairs: list[str] = []  # per message: its row without "[" (the script puts
        for message in messages:  # its id first), its index entry ('': lazy, off)
            row = json.dumps(list(message_values(message)), ensure_ascii=False)
            pairs += [row[1:], index_entry(message_terms(message)) if eager else ""]
        if not pairs:
            return []
        keys = [
            self.prefix + "id",
            self._key("h", session_id),
            self.prefix + "sessions",
            *self._session_keys(session_id),
            self._key("t", new_token()),
        ]
        first = int(self._save(session_id, keys, [session_id, self._ttl, *pairs]))
        return [
            stored_message(message, first + offset)
            for offset, message in enumerate(messages)
        ]

    def set_recall_index(self, policy: RecallIndex) -> None:
        """Index by ``policy`` from now on; see ``IndexPolicyStore``."""
        self.recall_index = check_recall_index(policy)

    def _save(self, session_id: str, keys: list[str], args: list[str]) -> Any:
        """Run SAVE; resend it, with its token, while its reply is lost.

        A socket timeout or a dropped connection does not tell whether the server
        stored the batch (a long script finishes after the client gave up): the
        token in ``keys`` makes the resent script return the ids it gave instead of
        storing twice. After ``SAVE_ATTEMPTS`` lost replies the error is raised and
        says the batch may be stored.
        """
        script = self._scripts["SAVE"]
        args = [*args[:2], str(_ms(REPLAY_S)), *args[2:]]
        lost: redis.RedisError | None = None
        reached = False  # whether an attempt may have reached the server
        for attempt in range(1, SAVE_ATTEMPTS + 1):
            if lost is not None:
                log.warning(
                    "save_messages for %r: %s; resending it with its token "
                    "(attempt %d of %d)",
                    session_id,
                    lost,
                    attempt,
                    SAVE_ATTEMPTS,
                )
            reply, lost = _attempt(script, session_id, keys, args)
            if lost is None:
                return reply
            reached = reached or not _unreached(lost)
        if not reached:
            raise StoreError(
                f"save failed for {session_id!r}: {lost} (the server was never "
                "reached: nothing was stored)"
            ) from lost
        raise StoreError(
            f"save failed for {session_id!r}: {lost} (no reply after "
            f"{SAVE_ATTEMPTS} attempts: the messages may be stored)"
        ) from lost

    def _rows(self, raw: Sequence[bytes]) -> list[Message]:
        if not raw:
            return []
        # One parse of all the rows: a JSON array of the members as written.
        try:
            rows = json.loads(b"[%b]" % b",".join(raw))
        except ValueError:  # a member no JSON (a foreign writer's): which one
            return [json_row_message(member) for member in raw]
        return [row_message(row) for row in rows]

    def _history_keys(self, session_id: str) -> list[str]:
        return [
            self._key("h", session_id),
            self._key("b", session_id),
            self._key("i", session_id),
        ]

    def get_history(self, session_id: str, limit: int | None = None) -> list[Message]:
        check_read(session_id, limit)
        if limit == 0:
            return []
        raw = self._script(
            "NEWEST_ACTIVE",
            session_id,
            self._history_keys(session_id),
            [-1 if limit is None else limit],
        )
        rows = self._rows(raw)
        if limit is not None:
            rows.reverse()
        return rows

    def read_window(
        self, session_id: str, *, limit: int, namespace: str
    ) -> tuple[list[Message], dict[str, object] | None]:
        """Return the newest ``limit`` active messages and the record, in one script.

        See ``WindowReadingStore``: one round trip instead of two.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        check_limit(limit)
        if limit == 0:
            return [], self.get_metadata(namespace, session_id)
        raw_rows, raw_record = self._script(
            "WINDOW",
            session_id,
            [*self._history_keys(session_id), self._record(namespace, session_id)],
            [limit],
        )
        rows = self._rows(raw_rows)
        rows.reverse()
        if raw_record is None:
            return rows, None
        return rows, self._decoded.decoded(namespace, session_id, raw_record)

    def get_full_history(
        self, session_id: str, limit: int | None = None
    ) -> list[Message]:
        check_read(session_id, limit)
        if limit == 0:
            return []
        key = self._key("h", session_id)
        stop = -1 if limit is None else min(limit, 2**62) - 1
        raw = self._run(
            "get_full_history", session_id, self._client.zrevrange, key, 0, stop
        )
        rows = self._rows(raw)
        rows.reverse()
        return rows

    def active_span(self, session_id: str) -> ActiveSpan:
        """Return the session's ``ActiveSpan``, without its id sum.

        Every write is one script with its ids taken inside it, so no id lands
        below another already visible: the count and the ends tell a change.
        """
        check_key("session_id", session_id)
        count, first, last = self._script(
            "ACTIVE_SPAN", session_id, self._history_keys(session_id), []
        )
        if not int(count):
            return NO_SPAN
        return ActiveSpan(int(count), _score_id(first), _score_id(last), None)

    def span_and_metadata(
        self, session_id: str, namespace: str
    ) -> tuple[ActiveSpan, dict[str, object] | None]:
        """Return ``active_span`` and the record, read in one script (one moment).

        See ``SpanRecordStore``; the record reads as ``get_metadata``'s.

        Raises:
            MalformedRecord: the record cannot be decoded, or its key holds another
                Redis type (another program's); a foreign archive boundary, as in
                every read.
        """
        check_key("session_id", session_id)
        check_key("namespace", namespace)
        keys = [*self._history_keys(session_id), self._record(namespace, session_id)]
        count, first, last, held, raw = self._script(
            "SPAN_AND_RECORD", session_id, keys, []
        )
        held = held.decode() if isinstance(held, bytes) else held
        if held not in ("", "string"):
            raise MalformedRecord(
                f"metadata {namespace}/{session_id} is not JSON text: the key holds "
                f"a Redis {held}, another program's"
            )
        span = (
            ActiveSpan(int(count), _score_id(first), _score_id(last), None)
            if int(count)
            else NO_SPAN
        )
        record = self._decoded.decoded(namespace, session_id, raw) if held else None
        return span, record

    def count_history(self, session_id: str) -> int:
        check_key("session_id", session_id)
        keys = self._history_keys(session_id)
        return int(self._script("COUNT_ACTIVE", session_id, keys, []))

    def get_oldest_history(
        self, session_id: str, limit: int, after_id: int | None = None
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id)
        if limit == 0:
            return []
        raw = self._script(
            "OLDEST_ACTIVE",
            session_id,
            self._history_keys(session_id),
            [limit, 0 if after_id is None else after_id],
        )
        return self._rows(raw)

    def get_archived(
        self, session_id: str, *, after_id: int | None, through_id: int, limit: int
    ) -> list[Message]:
        check_read(session_id, limit, after_id=after_id, through_id=through_id)
        if limit == 0:
            return []
        raw = self._script(
            "ARCHIVED_RANGE",
            session_id,
            self._history_keys(session_id),
            [0 if after_id is None else after_id, through_id, limit],
        )
        return self._rows(raw)

    def pop_message(self, session_id: str) -> Message | None:
        """Delete the newest active message and return it; see ``PoppingStore``."""
        check_key("session_id", session_id)
        raw = self._script(
            "POP",
            session_id,
            [self._key("h", session_id), *self._session_keys(session_id)],
            [self._ttl],
        )
        return (
            None if raw is None else popped(session_id, lambda: json_row_message(raw))
        )

    def trim_history(self, session_id: str, keep_recent: int) -> int:
        check_key("session_id", session_id)
        if keep_recent < 0:
            raise ValueError(f"keep_recent={keep_recent} is invalid; allowed: int >= 0")
        return int(
            self._script(
                "TRIM",
                session_id,
                [self._key("h", session_id), *self._session_keys(session_id)],
                [keep_recent, self._ttl],
            )
        )

    def clear_session(self, session_id: str) -> None:
        check_key("session_id", session_id)
        keys = [*self._history_keys(session_id), *self._index_keys(session_id)]
        self._run("clear_session", session_id, self._client.delete, *keys)

    def clear_all(self) -> None:
        self._script(
            "CLEAR_ALL",
            self.prefix,
            [self.prefix + "sessions", self.prefix + "namespaces"],
            [self.prefix],
        )

    def session_counts(
        self, *, after: str | None = None, limit: int = 500
    ) -> list[tuple[str, int, int]]:
        """Return up to ``limit`` (session id, active, archived) with id > ``after``.

        Sessions that hold messages, in code-point order of their ids: page through
        them by passing the last id seen as ``after``. A session whose archive
        boundary another program wrote is skipped with a warning naming the key (its
        reads raise ``MalformedRecord``), as the SQL stores skip a foreign key.
        """
        check_limit(limit)
        if after is not None:
            check_key("after", after)
        start = "-" if after is None else f"({after}"
        found: list[tuple[str, int, int]] = []
        while len(found) < limit:
            want = min(limit - len(found), _PAGE)
            flat = self._script(
                "SESSION_COUNTS",
                "sessions",
                [self.prefix + "sessions"],
                [self.prefix, start, want],
            )
            for at in range(0, len(flat), 3):
                sid = bytes(flat[at]).decode("utf-8")
                active, archived = int(flat[at + 1]), int(flat[at + 2])
                if active < 0:
                    log.warning(
                        "session_counts skipped session %r: its archive boundary "
                        "%r holds no message id (another program's)",
                        sid,
                        self._key("b", sid),
                    )
                else:
                    found.append((sid, active, archived))
            if len(flat) < 3 * want:
                break
            start = "(" + bytes(flat[-3]).decode("utf-8")
        return found

    # -- the fenced commit and forgetting

    def commit(self, request: CommitRequest) -> CommitResult:
        """The fenced commit, its attached record and the lease's release: one script.

        See ``CommitRequest``. The store has no archive of its own: separators go to
        the engine's ``archive``.
        """
        data, attached = commit_prelude(request)
        if request.separator is not None:
            raise ValueError("RedisStore has no archive; write separators to one")
        session_id, namespace = request.session_id, request.namespace
        attach = request.attach
        expect, through_id = request.expect_generation, request.through_id
        if attach is None or attached is None:
            side = [self._record(namespace, session_id), self._key("x", namespace)]
            side_args: list[str | int] = ["", "", "", "", "0"]
        else:
            side = [
                self._record(attach.namespace, session_id),
                self._key("x", attach.namespace),
            ]
            side_args = [
                "none" if attach.expect_generation is None else "gen",
                attach.expect_generation or "",
                attached,
                attach.namespace,
                self._ttl if attach.namespace in self._session_namespaces else "0",
            ]
        reply = self._script(
            "COMMIT",
            session_id,
            [
                self._key("l", session_id),
                self._record(namespace, session_id),
                *self._history_keys(session_id)[:2],
                self._key("x", namespace),
                self.prefix + "namespaces",
                *side,
                *self._session_keys(session_id)[1:],  # instructions, index, records
            ],
            [
                request.lease or "",
                "none" if expect is None else "gen",
                expect or "",
                "" if through_id is None else through_id,
                request.expect_archived,
                data,
                session_id,
                namespace,
                self._ttl if namespace in self._session_namespaces else "0",
                *side_args,
                "1" if request.release_lease else "",
            ],
        )
        if reply[0] != b"ok":
            reason = reply[0].decode()
            log.debug("session %s: commit fenced (%s)", session_id, reason)
            return CommitResult(fenced=reason)
        self._decoded.wrote(namespace, session_id, data, request.record)
        if attach is not None and attached is not None and int(reply[2]):
            self._decoded.wrote(attach.namespace, session_id, attached, attach.record)
        return CommitResult(
            archived=int(reply[1]),
            attached=bool(int(reply[2])),
            released=request.release_lease,
        )

    def forget_session(self, session_id: str, *, namespaces: Sequence[str]) -> int:
        check_forget(session_id, namespaces)
        keys = [
            *self._history_keys(session_id),
            self._key("l", session_id),
            *self._index_keys(session_id),
            self.prefix + "sessions",
        ]
        for namespace in namespaces:
            keys += [self._record(namespace, session_id), self._key("x", namespace)]
        return int(self._script("FORGET", session_id, keys, [session_id]))

    # -- leases

    def acquire_lease(self, session_id: str, *, owner: str, ttl_s: float) -> str | None:
        check_key("session_id", session_id)
        check_key("owner", owner)
        check_lease_ttl(ttl_s)
        token = new_token()
        taken = self._script(
            "ACQUIRE",
            session_id,
            [self._key("l", session_id), self.prefix + "sessions"],
            [owner, token, _ms(ttl_s), session_id, _HORIZON_MS],
        )
        return token if taken else None

    def renew_lease(self, session_id: str, token: str, *, ttl_s: float) -> bool:
        check_key("session_id", session_id)
        check_key("token", token)
        check_lease_ttl(ttl_s)
        key = self._key("l", session_id)
        args: list[Arg] = [token, _ms(ttl_s), _HORIZON_MS]
        return bool(self._script("RENEW", session_id, [key], args))

    def release_lease(self, session_id: str, token: str) -> None:
        check_key("session_id", session_id)
        check_key("token", token)
        key = self._key("l", session_id)
        self._script("DROP_LEASE", session_id, [key], ["token", token])

    def lease_owner(self, session_id: str) -> str | None:
        check_key("session_id", session_id)
        key = self._key("l", session_id)
        owner = self._script("LEASE_OWNER", session_id, [key], [_HORIZON_MS])
        return None if owner is None else bytes(owner).decode("utf-8")

    def break_lease(self, session_id: str, owner: str) -> bool:
        check_key("session_id", session_id)
        check_key("owner", owner)
        key = self._key("l", session_id)
        return bool(self._script("DROP_LEASE", session_id, [key], ["owner", owner]))


def _unreached(error: redis.RedisError) -> bool:
    """Tell whether ``error`` came from connecting (no command was sent).

    redis-py words a failed connect "Error N connecting to HOST:PORT." (refused,
    unreachable) or "Timeout connecting to server"; a reply lost after sending is
    a read timeout or a closed connection.
    """
    text = str(error)
    return " connecting to " in text or text.startswith("Timeout connecting")


def _attempt(
    script: Any, session_id: str, keys: list[str], args: list[str]
) -> tuple[Any, redis.RedisError | None]:
    """Run SAVE once: (its reply, None), or (None, the error) when the reply was lost.

    ``BUSY`` counts as a lost reply: the server is still running a script, the
    attempt this one resends above all (a resend with the same token is stored
    once). Any other error is a ``StoreError``: the server refused the script.
    """
    try:
        return script(keys=keys, args=args), None
    except (redis.TimeoutError, redis.ConnectionError) as exc:
        return None, exc
    except redis.ResponseError as exc:
        if str(exc).startswith("BUSY "):
            return None, exc
        raise _store_error("save_messages", session_id, exc) from exc
    except redis.RedisError as exc:
        raise _store_error("save_messages", session_id, exc) from exc


def _store_error(what: str, where: str, error: redis.RedisError) -> StoreError:
    """Return the ``StoreError`` to raise for ``error``, a driver's or a script's.

    A script's refusal of a value another program wrote (``_FOREIGN``) is a
    ``MalformedRecord`` saying which key holds what, without the script's name.
    """
    said = str(error)
    for code in _FOREIGN:
        if said.startswith(code):
            said = said.removeprefix(code).split(" script: ")[0]
            return MalformedRecord(f"{what} failed for {where!r}: {said}")
    return StoreError(f"{what} failed for {where!r}: {said}")
