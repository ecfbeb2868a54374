"""The lazy half of the Redis history index: a search indexes what a save did not.

Under ``recall_index="lazy"`` (and ``"off"``) ``SAVE`` stores a message without its
index entry. A search first runs ``PENDING``: the session's rows above its *mark*
(the highest id a search has indexed through) that have no entry; then ``INDEX``
with their entries, computed here, which adds each row still stored as read and
still without an entry (another process may have popped or indexed it meanwhile) and
moves the mark. Ids come from one counter and scripts run one at a time, so a row
saved after ``PENDING`` has a higher id than the mark ``INDEX`` sets: none is
skipped.

The server may lose its keys between the two scripts (a restart without persistence,
or from an older snapshot) and give the same ids anew. The mark never goes above the
history's highest id: the rows ``PENDING`` read would otherwise lift it over the ids
the next saves get, and the id counter's check (``next_id``) would refuse them. And
``INDEX`` gets each row back and compares it whole with the row its id holds now: a
message that got the id anew never gets the old one's entry (a search would find it
by another's text), and the mark does not move, so the next ``PENDING`` of the same
search reads it (and any other row given an id anew) and indexes it by its own text.
An id that holds no row any more holds the mark too (the new rows may all have lower
ids; a row popped meanwhile costs one more ``PENDING``). A page of many postings
goes in several ``INDEX`` calls: one that held the mark says so, and the search sends
none of the page's later calls (each would move the mark to its own top, past the
rows left unindexed) but runs ``PENDING`` again.

The mark is a member of the session's postings set, ``NUL`` then the id: no term
is empty, so no term's lex range holds it, and it goes wherever the postings go (a
pop keeps it, a clear, a forget or the session's TTL drops it).
"""

from __future__ import annotations

from .lua import index_check, postings

PAGE = 500
"""Rows ``PENDING`` reads at most at once (a first search of a big session pages)."""

POSTINGS_PER_CALL = 20_000
"""Postings one ``INDEX`` call writes at most (more rows go in further calls): a
script holds the whole server, so its work is bounded, about 0.1 s at most."""

# Both scripts check the index keys first (``check_index``): a key of another type,
# or a mark that is no ``NUL id``, is another program's (``MalformedRecord``).
_MARK = (
    index_check
    + """
local function mark(postings)
  local found = redis.call('ZRANGEBYLEX', postings, '[\\0', '(\\1', 'LIMIT', 0, 1)
  if #found == 0 then return nil, 0 end
  local at = string.match(found[1], '^%z(%d+)$')
  if not at then
    local held = string.format('%q', string.sub(found[1], 1, 40))
    foreign_index(postings, 'the mark ' .. held .. ', not NUL then an id')
  end
  return found[1], tonumber(at)
end
local function set_mark(history, postings, entries, words, top)
  local member, at = mark(postings)
  -- never above the history's highest id: rows read before the keys were lost
  -- (a restart) and ids given anew would lift it over the ids saves give next
  local last = redis.call('ZREVRANGE', history, 0, 0, 'WITHSCORES')
  top = math.min(top, tonumber(last[2] or '0'))
  if top > at then
    if member then redis.call('ZREM', postings, member) end
    redis.call('ZADD', postings, 0, '\\0' .. string.format('%d', top))
  end
  local ttl = redis.call('PTTL', history)
  if ttl > 0 then
    for _, key in ipairs({postings, entries, words}) do
      redis.call('PEXPIRE', key, ttl)
    end
  end
end
"""
)

# KEYS: history, postings, entries, words. ARGV: page size.
# Returns {top, id, row, id, row...}: the highest id read above the mark and the
# rows among them without an entry; {top} when every row read has one (the mark
# moved to top: read on); {} when no row is above the mark.
PENDING = (
    _MARK
    + """
check_index(KEYS[2], KEYS[3], KEYS[4])
local _, at = mark(KEYS[2])
local rows = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. at, '+inf',
  'WITHSCORES', 'LIMIT', 0, ARGV[1])
if #rows == 0 then return {} end
local top = tonumber(rows[#rows])
local out = {string.format('%d', top)}
for i = 1, #rows, 2 do
  local id = string.format('%d', tonumber(rows[i + 1]))
  if redis.call('HEXISTS', KEYS[3], id) == 0 then
    out[#out + 1] = id
    out[#out + 1] = rows[i]
  end
end
if #out == 1 then
  set_mark(KEYS[1], KEYS[2], KEYS[3], KEYS[4], top)
end
return out
"""
)

# KEYS: history, postings, entries, words. ARGV: top, then id, entry, row per row.
# Indexes each row still stored as ``PENDING`` read it and without an entry; moves
# the mark to top, or not at all when an id holds another row than the one read, or
# none. Returns {indexed, held}: how many rows it indexed, and 1 when it held the
# mark (the caller sends no more of the page and reads it anew), else 0.
INDEX = (
    _MARK
    + postings
    + """
check_index(KEYS[2], KEYS[3], KEYS[4])
local _, at = mark(KEYS[2])
local done, words, top, held = 0, 0, tonumber(ARGV[1]), 0
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  local now = redis.call('ZRANGEBYSCORE', KEYS[1], id, id)
  if #now == 0 or now[1] ~= ARGV[i + 2] then
    -- the id holds another row than the one read, or none: the keys may have been
    -- lost (a restart) and ids given anew. Not this entry, and the mark stays: any
    -- row above it may be new and unindexed (one PENDING saw indexed too). A row
    -- popped meanwhile holds it too: the next PENDING reads on past it
    top, held = at, 1
  elseif redis.call('HEXISTS', KEYS[3], id) == 0 then
    redis.call('HSET', KEYS[3], id, ARGV[i + 1])
    local members, length = postings(id, ARGV[i + 1])
    add_postings(KEYS[2], members)
    words = words + length
    done = done + 1
  end
end
if words > 0 then redis.call('INCRBY', KEYS[4], words) end
if redis.call('EXISTS', KEYS[1]) == 1 then
  set_mark(KEYS[1], KEYS[2], KEYS[3], KEYS[4], top)
end
return {done, held}
"""
)

SCRIPTS = {"PENDING": PENDING, "INDEX": INDEX}
"""The catch-up scripts, by name (``RedisStore`` registers them)."""
