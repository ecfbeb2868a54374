"""The history search and reads of ``RedisStore`` (``SearchableStore``).

The index lives beside each session's messages (layout in ``redis_lua``): postings
in one sorted set per session, ``term NUL id NUL tf`` at score 0, so a term's
postings are one lex range and its document count one ``ZLEXCOUNT``; each message's
entry (its length and distinct terms) in a hash, to unindex it when it is popped;
the session's total length in a counter. The scripts that save, pop, clear and
forget messages change it in the same atomic step, and a session's TTL covers it.

A search reads, in four scripts: the document count of each query term, the
postings of the informative ones (``domain.ranking.informative``), the neighbours of
the best matches (the context step), then the messages of the final hits. It scores
here, with ``domain.ranking`` and the session's own statistics, exactly as
``InMemoryStore`` (the reference) does. Every key a script reads is the session's
own, so no other session's message can be returned.

Under ``recall_index="lazy"`` a search first indexes what the session's saves left
unindexed (``redis_catch_up``).

Why about 500 lines: one concept, the search and reads of the whole history: their
read scripts and the code that scores and pages through their replies.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from memory_summary.adapters.recall.policy import refuse_search
from memory_summary.adapters.stores.redis.catch_up import PAGE, POSTINGS_PER_CALL
from memory_summary.adapters.stores.redis.catch_up import SCRIPTS as CATCH_UP
from memory_summary.adapters.stores.redis.lua import index_check, read_boundary
from memory_summary.adapters.stores.rows import (
    check_key,
    check_limit,
    check_read,
    check_row_id,
    json_row_message,
)
from memory_summary.domain import MalformedRecord, StoredHit
from memory_summary.domain.config import RecallIndex
from memory_summary.domain.ranking import (
    CONTEXT_REACH,
    CONTEXT_SEEDS,
    Coverage,
    bm25_search,
    informative,
    newest,
    seed_terms,
    with_context,
)
from memory_summary.domain.recall import message_terms

_MAX_SPAN = 10**12  # reads never ask for more neighbours than a session can hold


def index_entry(terms: Sequence[str]) -> str:
    """Return a message's index entry: ``"length term tf term tf ..."``.

    Terms hold letters and digits only (``domain.recall``), never a space.
    """
    counts = Counter(terms)
    return " ".join([str(len(terms)), *(f"{t} {n}" for t, n in counts.items())])


# KEYS: postings, entries, words. ARGV: terms. Returns documents, then each term's
# count.
TERM_COUNTS = (
    index_check
    + """
check_index(KEYS[1], KEYS[2], KEYS[3])
local out = {redis.call('HLEN', KEYS[2])}
for i = 1, #ARGV do
  out[i + 1] = redis.call('ZLEXCOUNT', KEYS[1],
    '[' .. ARGV[i] .. '\\0', '(' .. ARGV[i] .. '\\1')
end
return out
"""
)

# KEYS: postings, entries, words, boundary, instructions. ARGV: terms.
# Returns {documents, words, boundary, {kept instruction id, ...}, {postings of term
# 1}, ..., {id, length...}}.
POSTINGS = (
    read_boundary
    + index_check
    + """
check_index(KEYS[1], KEYS[2], KEYS[3])
local out = {redis.call('HLEN', KEYS[2]), redis.call('GET', KEYS[3]) or '0',
  archive_boundary(KEYS[4]), {}}
local kept = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
for i = 2, #kept, 2 do out[4][#out[4] + 1] = kept[i] end
local seen, lengths = {}, {}
for i = 1, #ARGV do
  local found = redis.call('ZRANGEBYLEX', KEYS[1],
    '[' .. ARGV[i] .. '\\0', '(' .. ARGV[i] .. '\\1')
  out[#out + 1] = found
  for _, member in ipairs(found) do
    local id = string.match(member, '^[^%z]+%z(%d+)%z%d+$')
    if not id then  -- a posting is "term NUL id NUL tf"
      foreign_index(KEYS[1], 'the posting '
        .. string.format('%q', string.sub(member, 1, 40)) .. ', not term NUL id NUL tf')
    end
    if not seen[id] then
      seen[id] = true
      local entry = redis.call('HGET', KEYS[2], id) or '0'
      lengths[#lengths + 1] = id
      lengths[#lengths + 1] = string.match(entry, '^%d+')
    end
  end
end
out[#out + 1] = lengths
return out
"""
)

# KEYS: history, boundary, instructions. ARGV: reach, archived only (1/0), seeds,
# then ids (the
# seeds first). Returns id, later, ... for each id still stored and for the
# neighbours of the seeds (within ``reach`` places); later is the id ``reach``
# places after it, 0 when the session ends sooner.
CONTEXT = (
    read_boundary
    + """
local h, reach = KEYS[1], tonumber(ARGV[1])
local high = math.huge
if ARGV[2] == '1' then high = tonumber(archive_boundary(KEYS[2])) end
local seeds = tonumber(ARGV[3])
local function place(id)
  if redis.call('ZCOUNT', h, id, id) == 0 then return nil end
  return redis.call('ZCOUNT', h, '-inf', '(' .. id)
end
local ids, seen = {}, {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if not seen[id] then
    seen[id] = true
    ids[#ids + 1] = id
  end
  local at = (i < 4 + seeds) and place(id)
  if at then
    local near = redis.call(
      'ZRANGE', h, math.max(at - reach, 0), at + reach, 'WITHSCORES')
    for j = 2, #near, 2 do
      local n = string.format('%d', tonumber(near[j]))
      if not seen[n] and tonumber(n) <= high
          and (high == math.huge or redis.call('ZSCORE', KEYS[3], near[j - 1]) == false)
      then
        seen[n] = true
        ids[#ids + 1] = n
      end
    end
  end
end
local out = {}
for _, id in ipairs(ids) do
  local at = place(id)
  if at then
    local later = redis.call('ZRANGE', h, at + reach, at + reach, 'WITHSCORES')
    out[#out + 1] = id
    out[#out + 1] = later[2] or '0'
  end
end
return out
"""
)

# A reply of rows: {boundary, {ids of the kept instructions among them}, rows...}.
_KEPT = (
    read_boundary
    + """
-- the ids among ``rows`` of the host's instructions kept active below the boundary
local function kept_ids(instructions, rows)
  local ids = {}
  for _, row in ipairs(rows) do
    if row and redis.call('ZSCORE', instructions, row) then
      ids[#ids + 1] = string.match(row, '^%[(%d+)')
    end
  end
  return ids
end
"""
)

# KEYS: history, boundary, instructions. ARGV: ids.
# Returns {boundary, {kept ids}, row or false, ...}.
ROWS = (
    _KEPT
    + """
local rows = {}
for i = 1, #ARGV do
  rows[i] = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[i], ARGV[i])[1] or false
end
local out = {archive_boundary(KEYS[2]), kept_ids(KEYS[3], rows)}
for i = 1, #ARGV do out[i + 2] = rows[i] end
return out
"""
)

# KEYS: history, boundary, instructions. ARGV: id, before, after.
# Returns {boundary, {kept ids}, rows...}: no row when the session has no message id.
AROUND = (
    _KEPT
    + """
local out = {archive_boundary(KEYS[2]), {}}
if redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1]) == 0 then return out end
local at = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. ARGV[1])
local low = math.max(at - tonumber(ARGV[2]), 0)
local rows = redis.call('ZRANGE', KEYS[1], low, at + tonumber(ARGV[3]))
out[2] = kept_ids(KEYS[3], rows)
for _, row in ipairs(rows) do out[#out + 1] = row end
return out
"""
)

# KEYS: history, boundary, instructions. ARGV: first id, last id, limit.
# Returns {boundary, {kept ids}, rows...}.
RANGE = (
    _KEPT
    + """
local rows = redis.call(
  'ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
local out = {archive_boundary(KEYS[2]), kept_ids(KEYS[3], rows)}
for _, row in ipairs(rows) do out[#out + 1] = row end
return out
"""
)


SCRIPTS = {
    "TERM_COUNTS": TERM_COUNTS,
    "POSTINGS": POSTINGS,
    "CONTEXT": CONTEXT,
    "ROWS": ROWS,
    "AROUND": AROUND,
    "RANGE": RANGE,
    **CATCH_UP,
}
"""The read scripts of the history index, by name (``RedisStore`` registers them)."""
Arg = bytes | str | int | float


class RedisScripted:
    """What the mixins of ``RedisStore`` call on it: its scripts and its key names."""

    def _script(
        self, name: str, where: str, keys: Sequence[str], args: Sequence[Arg]
    ) -> Any:
        raise NotImplementedError  # pragma: no cover - RedisStore runs scripts

    def _key(self, kind: str, name: str) -> str:
        raise NotImplementedError  # pragma: no cover - RedisStore names keys


@contextlib.contextmanager
def _replies(session_id: str) -> Iterator[None]:
    """Raise ``MalformedRecord`` for a search script's reply that does not parse.

    The replies hold what the index keys hold: only another program's values (a
    word count of text, an entry of no length, a history member of no integer
    score) fail to parse. Around the parsing alone: an error of the search's own
    code is no foreign data.
    """
    try:
        yield
    except (ValueError, IndexError, TypeError) as exc:
        raise MalformedRecord(
            f"search_messages for {session_id!r} failed: the session's history "
            "or index keys (h:, p:, e:, w:) hold a value this store never writes "
            f"(another program's): {type(exc).__name__}: {exc}"
        ) from exc


class RedisHistory(RedisScripted):
    """Search and read a session's whole history; ``RedisStore`` mixes it in."""

    recall_index: RecallIndex

    def search_messages(
        self,
        session_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        archived_only: bool = False,
    ) -> list[StoredHit]:
        """Return the best matches of ``terms``; see ``SearchableStore``."""
        check_read(session_id, limit)
        refuse_search(self, self.recall_index)
        terms = list(dict.fromkeys(terms))
        if not limit or not terms:
            return []
        return self._search(session_id, terms, limit, archived_only)

    def _search(
        self, session_id: str, terms: list[str], limit: int, archived_only: bool
    ) -> list[StoredHit]:
        """``search_messages`` once its arguments are checked."""
        self.catch_up_session(session_id)
        key = self._key
        counts = self._script(
            "TERM_COUNTS",
            session_id,
            [key("p", session_id), key("e", session_id), key("w", session_id)],
            terms,
        )
        with _replies(session_id):
            matching = dict(zip(terms, map(int, counts[1:]), strict=True))
            total = int(counts[0])
        kept = informative(terms, matching, total)
        if not kept:
            return []
        coverage = Coverage()
        matches, boundary = self._matches(session_id, kept, archived_only, coverage)
        if not matches:
            return []
        scored, reach = self._context(session_id, matches, archived_only)
        found = with_context(list(scored.items()), reach, limit, coverage)
        rows = self._script(
            "ROWS", session_id, self._row_keys(session_id), [i for i, _ in found]
        )
        with _replies(session_id):
            boundary, instructions = int(rows[0]), {int(i) for i in rows[1]}
        return [
            StoredHit(
                json_row_message(raw),
                row_id <= boundary and row_id not in instructions,
                score,
            )
            for (row_id, score), raw in zip(found, rows[2:], strict=True)
            if raw is not None
        ]

    def catch_up_session(self, session_id: str) -> int:
        """Index the session's messages saved without an entry; count them.

        Whatever the policy (another process may save lazily): see ``catch_up``.
        """
        keys = [self._key(kind, session_id) for kind in ("h", "p", "e", "w")]
        done = 0
        while True:
            reply = self._script("PENDING", session_id, keys, [PAGE])
            if not reply:
                return done
            if len(reply) == 1:
                continue  # a page already indexed: the mark moved past it
            rows: list[tuple[Arg, str, int, Arg]] = []
            for at in range(1, len(reply), 2):
                raw = reply[at + 1]
                terms = message_terms(json_row_message(raw))
                rows.append((reply[at], index_entry(terms), len(set(terms)), raw))
            for part, top in _calls(rows, reply[0]):
                args: list[Arg] = [top]
                for row_id, entry, _, raw in part:  # the row: INDEX compares it
                    args += [row_id, entry, raw]
                indexed, held = self._script("INDEX", session_id, keys, args)
                done += int(indexed)
                if int(held):  # an id holds another row or none: the mark stayed,
                    break  # and a later part would move it past the rows left

    def _row_keys(self, session_id: str) -> list[str]:
        """The keys the reads of rows need: history, boundary, kept instructions."""
        return [self._key(kind, session_id) for kind in ("h", "b", "i")]

    def _matches(
        self,
        session_id: str,
        terms: list[str],
        archived_only: bool,
        coverage: Coverage | None = None,
    ) -> tuple[list[tuple[int, float]], int]:
        """Return the BM25 matches of ``terms`` (best ``CANDIDATES``), the boundary.

        Candidates are bounded as ``domain.ranking`` says: the newest matches of the
        rarest terms (``seed_terms``, ``newest``), then scored with every term;
        ``coverage`` is filled as ``bm25_search`` fills it.
        """
        reply = self._script(
            "POSTINGS",
            session_id,
            [self._key(kind, session_id) for kind in ("p", "e", "w", "b", "i")],
            terms,
        )
        matching: dict[str, int] = {}
        frequencies: dict[str, dict[int, int]] = {}
        with _replies(session_id):
            documents, words, boundary = (int(value) for value in reply[:3])
            kept = {int(row_id) for row_id in reply[3]}
            flat = reply[-1]
            lengths = {int(flat[i]): int(flat[i + 1]) for i in range(0, len(flat), 2)}
            for term, members in zip(terms, reply[4:-1], strict=True):
                matching[term] = len(members)
                held = frequencies[term] = {}
                for member in members:
                    _, posted, tf = bytes(member).split(b"\x00")
                    held[int(posted)] = int(tf)
        candidates: dict[int, Counter[str]] = {}  # absent terms read as 0
        for term in seed_terms(terms, matching):
            allowed = [
                row_id
                for row_id in frequencies[term]
                if not archived_only or (row_id <= boundary and row_id not in kept)
            ]
            for row_id in newest(allowed):
                candidates[row_id] = Counter(
                    {t: tfs[row_id] for t, tfs in frequencies.items() if row_id in tfs}
                )
        matches = bm25_search(
            terms,
            candidates,
            matching,
            lengths,
            documents=documents,
            total_length=words,
            coverage=coverage,
        )
        return matches, boundary

    def _context(
        self, session_id: str, matches: list[tuple[int, float]], archived_only: bool
    ) -> tuple[dict[int, float], dict[int, int | None]]:
        """Return the matches with the seeds' neighbours (score 0), and their reach."""
        ids = [row_id for row_id, _ in matches]
        flat = self._script(
            "CONTEXT",
            session_id,
            self._row_keys(session_id),
            [CONTEXT_REACH, int(archived_only), min(CONTEXT_SEEDS, len(ids)), *ids],
        )
        base = dict(matches)
        scored: dict[int, float] = {}
        reach: dict[int, int | None] = {}
        with _replies(session_id):
            pairs = [
                (int(flat[at]), int(flat[at + 1])) for at in range(0, len(flat), 2)
            ]
        for row_id, later in pairs:
            scored[row_id] = base.get(row_id, 0.0)
            reach[row_id] = later or None
        return scored, reach

    def read_messages(
        self, session_id: str, around_id: int, *, before: int, after: int
    ) -> list[StoredHit]:
        """Return a message and its neighbours; see ``SearchableStore``."""
        check_key("session_id", session_id)
        check_row_id("around_id", around_id)
        check_limit(before)
        check_limit(after)
        reply = self._script(
            "AROUND",
            session_id,
            self._row_keys(session_id),
            [around_id, min(before, _MAX_SPAN), min(after, _MAX_SPAN)],
        )
        return _hits(reply)

    def read_message_range(
        self, session_id: str, first_id: int, last_id: int, *, limit: int
    ) -> list[StoredHit]:
        """Return the messages of an id range; see ``SearchableStore``."""
        check_read(session_id, limit, first_id=first_id, last_id=last_id)
        if not limit:
            return []
        reply = self._script(
            "RANGE",
            session_id,
            self._row_keys(session_id),
            [first_id, last_id, min(limit, _MAX_SPAN)],
        )
        return _hits(reply)


def _hits(reply: Sequence[Any]) -> list[StoredHit]:
    """Return the hits of a ``{boundary, {kept ids}, rows...}`` reply, in order."""
    boundary, kept = int(reply[0]), {int(i) for i in reply[1]}
    hits = []
    for raw in reply[2:]:
        message = json_row_message(raw)
        row_id = message.id or 0
        hits.append(StoredHit(message, row_id <= boundary and row_id not in kept))
    return hits


def _calls(
    rows: list[tuple[Arg, str, int, Arg]], top: Arg
) -> list[tuple[list[tuple[Arg, str, int, Arg]], Arg]]:
    """Split ``rows`` (id, entry, postings, row) into ``INDEX`` calls of bounded work.

    Each call moves the mark through its last row; the last call to ``top`` (the
    page's highest id, rows without an entry or not). A call that held the mark ends
    the page (``catch_up_session``). A row of more postings than
    the bound goes alone (its entry is bounded: ``MAX_INDEXED_TERMS``).
    """
    calls: list[tuple[list[tuple[Arg, str, int, Arg]], Arg]] = []
    part: list[tuple[Arg, str, int, Arg]] = []
    postings = 0
    for row in rows:
        if part and postings + row[2] > POSTINGS_PER_CALL:
            calls.append((part, part[-1][0]))
            part, postings = [], 0
        part.append(row)
        postings += row[2]
    calls.append((part, top))
    return calls
