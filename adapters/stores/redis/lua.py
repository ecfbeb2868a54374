"""The Lua scripts of ``RedisStore``: each store operation that reads and then writes.

A script runs atomically on the server (no other command runs in between), so every
check-then-write here, the fenced commit, the leases, a pop, a trim, is one atomic
step for every process sharing the server. Keys come in ``KEYS``; only ``clear_all``,
the metadata scans and the session listing derive keys from the store's prefix inside
the script, so the store needs one server (or a Sentinel-managed primary), not a
Redis Cluster.

Layout (``P`` is the store's prefix; a session id, namespace or key never holds a NUL):

- ``P id``: the id counter (``INCRBY``), ids increase across the whole store, up
  to 2^53 (a score, a double, is exact up to it: SAVE gives no id past it);
- ``P h:<sid>``: a sorted set of the session's messages, score = id, member = the
  row as JSON ``[id, role, ...]``;
- ``P b:<sid>``: the archive boundary, the highest archived id (messages with an
  id at most this are archived, but for the host's instructions kept active);
- ``P i:<sid>``: the host's instructions below the boundary, still active: a sorted
  set like ``h:`` (a system or developer row of no kind, see ``_HELPERS``);
- ``P l:<sid>``: the compression lease, a hash {owner, token} that expires;
- ``P p:<sid>``: the session's history index, a sorted set of score 0 whose members
  are postings ``term NUL id NUL tf`` (a term's postings are one lex range);
- ``P e:<sid>``: a hash, message id -> its index entry (to unindex it when popped);
- ``P w:<sid>``: the number of terms of all the session's messages (BM25 lengths);
- ``P t:<token>``: the first id a save gave its batch, kept ``REPLAY_S`` seconds so
  that the save, resent after a lost reply, returns it instead of storing twice;
- ``P r:<namespace>NUL<key>``: a metadata record, JSON text (NUL: the byte 0);
- ``P x:<namespace>``: the namespace's keys, a sorted set of score 0 (code-point
  order: byte order of UTF-8);
- ``P sessions``: the session ids, a sorted set of score 0 (code-point order), what
  ``clear_all`` visits and ``session_counts`` pages through;
- ``P namespaces``: a set of the namespaces ``clear_all`` must visit.

Why about 700 lines: one concept, the server-side half of ``RedisStore``: one Lua
script a store operation that reads and then writes, each a few lines. They share the
key layout above and the Lua helpers (``_HELPERS``, ``postings``), and a script's
``KEYS``/``ARGV`` comment reads against that layout; split in two, each half would
need both. The history search's read-only scripts live with it (``redis_history``).
"""

from __future__ import annotations

# Lua helpers, prepended to the scripts that archive: whether a row (JSON as written
# by ``message_values``: [id, role, text, calls, call id, name, kind, ...]) is a
# host's instruction, and what archiving (low, high] of a history would do.
_HELPERS = """
local function instruction(row)
  if not (string.find(row, '^%[%d+, ?"system"')
      or string.find(row, '^%[%d+, ?"developer"')) then
    return false
  end
  local ok, values = pcall(cjson.decode, row)
  return ok and type(values) == 'table' and values[7] == cjson.null
end
local function archiving(history, low, high)
  local rows = redis.call(
    'ZRANGEBYSCORE', history, '(' .. low, high, 'WITHSCORES')
  local kept, top = {}, nil
  for i = 1, #rows, 2 do
    if instruction(rows[i]) then
      kept[#kept + 1] = rows[i + 1]
      kept[#kept + 1] = rows[i]
    end
    top = rows[i + 1]
  end
  return (#rows - #kept) / 2, kept, top
end
local function keep(instructions, kept)
  if #kept > 0 then redis.call('ZADD', instructions, unpack(kept)) end
end
"""

# The archive boundary at ``key`` as its decimal text, '0' when there is none. A
# value the store never writes (another type; text that is no decimal id: a sign,
# a point, an exponent, a value past 2^53, the last id SAVE gives) is an error reply
# naming the key, the same in every script: no reading of it may bring archived
# messages back or hide new ones.
# ``RedisStore`` raises it as ``MalformedRecord`` (``FOREIGN_BOUNDARY``).
read_boundary = """
local MAX_ID = '9007199254740992'  -- 2^53: ids are scores, doubles, exact up to it
local function decimal_id(raw)  -- raw if decimal digits of at most 2^53, else nil
  if type(raw) == 'string' and string.find(raw, '^%d+$') then
    local digits = string.gsub(raw, '^0+', '')
    if #digits < 16 or (#digits == 16 and digits <= MAX_ID) then
      return raw  -- at most 2^53: exact as a score (a double)
    end
  end
  return nil
end
local function stored_boundary(key)  -- nil: a value the store never writes
  local raw = redis.pcall('GET', key)
  if raw == false then return '0', raw end
  return decimal_id(raw), raw
end
local function archive_boundary(key)
  local boundary, raw = stored_boundary(key)
  if boundary then return boundary end
  local held = 'a ' .. redis.call('TYPE', key).ok
  if type(raw) == 'string' then held = string.format('%q', string.sub(raw, 1, 40)) end
  error(redis.error_reply('FOREIGN_BOUNDARY the archive boundary ' .. key
    .. ' holds ' .. held .. ', not a message id: another program wrote it (the '
    .. 'store writes the highest archived id, in decimal digits)'))
end
"""

# The id counter ``P id`` as the last id given (0 when there is none), checked
# before a save gives an id. A value the store never writes (text that is no decimal
# id, another type) or one below an id the session already holds (the counter was
# set back, deleted or evicted while the session was kept) is an error reply naming
# the key: an id from it would land at or below ids in use (a message stored under
# another's id, or archived the moment it is saved), and guessing another value would
# break the order of ids across sessions. ``RedisStore`` raises it as
# ``MalformedRecord`` (``FOREIGN_COUNTER``). Needs ``read_boundary``.
next_id = """
-- (a key of another type reads as none here: the save's own checks refuse it)
local function highest(key)  -- the highest score of a sorted set (0: none)
  local top = redis.pcall('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  if top.err then return 0 end
  return tonumber(top[2] or '0')
end
local function index_mark(key)  -- the highest id a search indexed through (0: none)
  local found = redis.pcall('ZRANGEBYLEX', key, '[\\0', '(\\1', 'LIMIT', 0, 1)
  if found.err or not found[1] then return 0 end
  return tonumber(string.match(found[1], '^%z(%d+)$') or '0')
end
local function foreign_counter(key, held, why)
  error(redis.error_reply('FOREIGN_COUNTER the id counter ' .. key .. ' holds '
    .. held .. ', ' .. why .. ': another program wrote it (the store writes the '
    .. 'last id it gave, in decimal digits; set it to the highest id stored)'))
end
local function next_id(counter, history, boundary, instructions, postings)
  local raw = redis.pcall('GET', counter)
  if type(raw) == 'table' then
    foreign_counter(counter, 'a Redis ' .. redis.call('TYPE', counter).ok,
      'not a message id')
  end
  local last = 0
  if raw then
    if not decimal_id(raw) then
      foreign_counter(counter, string.format('%q', string.sub(raw, 1, 40)),
        'not a message id')
    end
    last = tonumber(raw)
  end
  local top = math.max(highest(history), highest(instructions), index_mark(postings),
    tonumber(stored_boundary(boundary) or '0'))
  if last < top then
    local held = 'nothing'
    if raw then held = string.format('%q', string.sub(raw, 1, 40)) end
    foreign_counter(counter, held, 'below the id ' .. string.format('%d', top)
      .. ' this session already holds')
  end
  return last
end
"""

# The history index keys of a session as the store writes them: postings a sorted
# set, entries a hash, words a decimal count. ``check_index`` runs before a script
# writes anything: a key of another type (another program's) is an error reply
# naming the key, raised as ``MalformedRecord`` (``FOREIGN_INDEX``), and the script
# writes nothing (Redis does not undo a script's writes before a runtime error).
index_check = """
local function foreign_index(key, held)
  error(redis.error_reply('FOREIGN_INDEX the history index key ' .. key
    .. ' holds ' .. held .. ", another program's (the store writes postings "
    .. 'to a sorted set, entries to a hash, the word count in decimal digits)'))
end
local function check_type(key, want, name)
  local held = redis.call('TYPE', key).ok
  if held ~= 'none' and held ~= want then
    foreign_index(key, 'a Redis ' .. held .. ', not a ' .. name)
  end
end
local function check_index(postings, entries, words)
  check_type(postings, 'zset', 'sorted set')
  check_type(entries, 'hash', 'hash')
  check_type(words, 'string', 'string')
  local raw = redis.call('GET', words)
  if raw and not (string.find(raw, '^%-?%d+$') and #raw <= 18) then
    foreign_index(words, string.format('%q', string.sub(raw, 1, 40))
      .. ', not a number of terms')
  end
end
"""

# The history index: a message's *entry* is "length term tf term tf ..." (its
# number of terms, then each distinct term with its frequency; terms are letters and
# digits). This returns the members of its postings, "term NUL id NUL tf", and its
# length; saving, popping and the catch-up's ``INDEX`` share it.
postings = """
local function postings(id, entry)
  local members, length, term = {}, nil, nil
  for token in string.gmatch(entry, '%S+') do
    if length == nil then
      length = tonumber(token)
    elseif term == nil then
      term = token
    else
      members[#members + 1] = term .. '\\0' .. id .. '\\0' .. token
      term = nil
    end
  end
  return members, length or 0
end
local function each_chunk(items, call)  -- unpack() has a limit: 500 at a time
  for at = 1, #items, 500 do
    call(unpack(items, at, math.min(at + 499, #items)))
  end
end
local function add_postings(key, members)  -- all of score 0: ordered by their text
  local scored = {}
  for _, member in ipairs(members) do
    scored[#scored + 1] = 0
    scored[#scored + 1] = member
  end
  each_chunk(scored, function(...) redis.call('ZADD', key, ...) end)
end
"""

# KEYS: counter, history, sessions, boundary, instructions, postings, entries, words,
# session records..., then the save's token key.
# ARGV: sid, ttl ms (0: none), how long the token is kept (ms), then per message:
# its row without the id (JSON after "["), its index entry ('' under a lazy policy:
# ``catch_up``). Returns the first id;
# the messages get consecutive ids and nothing lands in between. The index changes
# in the same step. The token makes a save safe to resend: a save whose reply was
# lost (a socket timeout, a dropped connection) is sent again with its token, and
# the script returns the first id it gave instead of storing the batch twice.
# A batch that would give an id past 2^53 is refused whole (an error reply):
# past it a score, a double, no longer tells ids apart. So is every batch while the
# counter holds what the store never writes (``next_id``), and, under an eager
# index, while an index key does (``check_index``): nothing is written then.
SAVE = (
    read_boundary
    + next_id
    + index_check
    + postings
    + """
local token = KEYS[#KEYS]
local done = redis.call('GET', token)
if done then return tonumber(done) end
local n = (#ARGV - 3) / 2
local last = next_id(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6])
if last > 2 ^ 53 - n then  -- past 2^53 a score is no exact id
  return redis.error_reply('ID_SPACE the id counter ' .. KEYS[1]
    .. ' is past 2^53 with this batch: no exact id is left to give')
end
for i = 1, n do  -- an index entry (eager): the index keys must be the store's
  if ARGV[2 * i + 3] ~= '' then
    check_index(KEYS[6], KEYS[7], KEYS[8])
    break
  end
end
local first = redis.call('INCRBY', KEYS[1], n) - n + 1
local words = 0
for i = 1, n do
  local id = string.format('%d', first + (i - 1))  -- (first + i) may round past 2^53
  redis.call('ZADD', KEYS[2], id, '[' .. id .. ',' .. ARGV[2 * i + 2])
  -- an empty entry (recall_index lazy or off): a search indexes it (catch_up)
  if ARGV[2 * i + 3] ~= '' then redis.call('HSET', KEYS[7], id, ARGV[2 * i + 3]) end
  local members, length = postings(id, ARGV[2 * i + 3])
  add_postings(KEYS[6], members)
  words = words + length
end
if words > 0 then redis.call('INCRBY', KEYS[8], words) end
redis.call('ZADD', KEYS[3], 0, ARGV[1])
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
  for i = 4, #KEYS - 1 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
redis.call('SET', token, first, 'PX', ARGV[3])
return first
"""
)

# The newest ``limit`` (> 0) active rows, newest first: the rows above the boundary,
# then the instructions kept below it. KEYS as NEWEST_ACTIVE's.
_NEWEST = (
    read_boundary
    + """
local function newest(history, boundary, instructions, limit)
  local b = archive_boundary(boundary)
  local rows = redis.call(
    'ZREVRANGEBYSCORE', history, '+inf', '(' .. b, 'LIMIT', 0, limit)
  if #rows < tonumber(limit) then
    local more = string.format('%d', tonumber(limit) - #rows - 1)
    for _, row in ipairs(redis.call('ZREVRANGE', instructions, 0, more)) do
      rows[#rows + 1] = row
    end
  end
  return rows
end
"""
)

# KEYS: history, boundary, instructions. ARGV: limit (-1: all). Newest first with a
# limit. The active history is the kept instructions, then the rows above the boundary.
NEWEST_ACTIVE = (
    _NEWEST
    + """
if ARGV[1] ~= '-1' then return newest(KEYS[1], KEYS[2], KEYS[3], ARGV[1]) end
local b = archive_boundary(KEYS[2])
local rows = redis.call('ZRANGE', KEYS[3], 0, -1)
for _, row in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. b, '+inf')) do
  rows[#rows + 1] = row
end
return rows
"""
)

# KEYS: history, boundary, instructions, record. ARGV: limit (> 0). Returns {the
# newest rows as NEWEST_ACTIVE's, the record's JSON or nil}: a compression's window.
WINDOW = (
    _NEWEST
    + """
return {newest(KEYS[1], KEYS[2], KEYS[3], ARGV[1]), redis.call('GET', KEYS[4])}
"""
)

# KEYS: history, boundary, instructions.
COUNT_ACTIVE = (
    read_boundary
    + """
local b = archive_boundary(KEYS[2])
return redis.call('ZCOUNT', KEYS[1], '(' .. b, '+inf') + redis.call('ZCARD', KEYS[3])
"""
)

# KEYS: history, boundary, instructions. Sets count, first and last of the active
# rows, ids as strings ('' when none is active); members are not copied whole.
_ACTIVE_SPAN_BODY = (
    read_boundary
    + """
local b = archive_boundary(KEYS[2])
local above = redis.call('ZCOUNT', KEYS[1], '(' .. b, '+inf')
local kept = redis.call('ZCARD', KEYS[3])
local function score(key, first)
  local got
  if first then
    got = redis.call('ZRANGE', KEYS[key], 0, 0, 'WITHSCORES')
  else
    got = redis.call('ZRANGE', KEYS[key], -1, -1, 'WITHSCORES')
  end
  return got[2]
end
local first, last = '', ''
if kept > 0 then first = score(3, true) elseif above > 0 then
  first = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. b, '+inf', 'WITHSCORES',
    'LIMIT', 0, 1)[2]
end
if above > 0 then last = score(1, false) elseif kept > 0 then last = score(3, false) end
local count = above + kept
"""
)

# KEYS: history, boundary, instructions. Returns {count, first id, last id}.
ACTIVE_SPAN = _ACTIVE_SPAN_BODY + "return {count, first, last}\n"

# KEYS: history, boundary, instructions, record. Returns {count, first id, last id,
# what the record key holds ('' nothing, 'string', else its type), its text or ''}:
# the span and the record as they were at one moment.
SPAN_AND_RECORD = (
    _ACTIVE_SPAN_BODY
    + """
local raw = redis.pcall('GET', KEYS[4])
if raw == false then return {count, first, last, '', ''} end
if type(raw) == 'table' then  -- another type: another program's key
  return {count, first, last, redis.call('TYPE', KEYS[4]).ok, ''}
end
return {count, first, last, 'string', raw}
"""
)

# KEYS: history, boundary, instructions. ARGV: limit, after id.
OLDEST_ACTIVE = (
    read_boundary
    + """
local rows = redis.call(
  'ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[2], '+inf', 'LIMIT', 0, ARGV[1])
if #rows >= tonumber(ARGV[1]) then return rows end
local low = archive_boundary(KEYS[2])
if tonumber(ARGV[2]) > tonumber(low) then low = ARGV[2] end
local more = string.format('%d', tonumber(ARGV[1]) - #rows)
for _, row in ipairs(redis.call(
    'ZRANGEBYSCORE', KEYS[1], '(' .. low, '+inf', 'LIMIT', 0, more)) do
  rows[#rows + 1] = row
end
return rows
"""
)

# KEYS: history, boundary, instructions. ARGV: after id, through id, limit.
ARCHIVED_RANGE = (
    read_boundary
    + """
local high = archive_boundary(KEYS[2])
if tonumber(ARGV[2]) < tonumber(high) then high = ARGV[2] end
local skip = redis.call('ZCOUNT', KEYS[3], '(' .. ARGV[1], high)
if skip == 0 then
  return redis.call(
    'ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], high, 'LIMIT', 0, ARGV[3])
end
local want = tonumber(ARGV[3])
local fetch = string.format('%d', math.min(want + skip, 2 ^ 53))
local out = {}
for _, row in ipairs(redis.call(
    'ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], high, 'LIMIT', 0, fetch)) do
  if #out >= want then break end
  if not redis.call('ZSCORE', KEYS[3], row) then out[#out + 1] = row end
end
return out
"""
)

# KEYS: history, boundary, instructions, postings, entries, words, session records...
# ARGV: ttl ms. The popped message leaves the index in the same step.
POP = (
    read_boundary
    + index_check
    + postings
    + """
local b = archive_boundary(KEYS[2])
local top = redis.call(
  'ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. b, 'WITHSCORES', 'LIMIT', 0, 1)
local kept = #top == 0  -- none above the boundary: an instruction kept below it
if kept then
  top = redis.call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if #top == 0 then return false end
end
local id = string.format('%d', tonumber(top[2]))
check_type(KEYS[5], 'hash', 'hash')
local entry = redis.call('HGET', KEYS[5], id)
if entry then check_index(KEYS[4], KEYS[5], KEYS[6]) end  -- before any write
if kept then redis.call('ZREM', KEYS[3], top[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], top[2], top[2])
if entry then
  local members, length = postings(id, entry)
  each_chunk(members, function(...) redis.call('ZREM', KEYS[4], ...) end)
  redis.call('HDEL', KEYS[5], id)
  redis.call('DECRBY', KEYS[6], length)
end
local ttl = tonumber(ARGV[1])
if ttl > 0 then for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
return top[1]
"""
)

# KEYS: history, boundary, instructions, session records... ARGV: keep_recent, ttl ms.
TRIM = (
    read_boundary
    + _HELPERS
    + """
local b = archive_boundary(KEYS[2])
local cut = redis.call(
  'ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. b, 'WITHSCORES', 'LIMIT', ARGV[1], 1)
if #cut == 0 then return 0 end
local archived, kept = archiving(KEYS[1], b, cut[2])
keep(KEYS[3], kept)
redis.call('SET', KEYS[2], cut[2])
local ttl = tonumber(ARGV[2])
if ttl > 0 then for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
return archived
"""
)

# KEYS: lease, record, history, boundary, index, namespaces, attached record, its
# index, instructions, session records... ARGV: lease token ('' none), 'none' | 'gen',
# expected generation, through id ('' none), expected archived count, record JSON,
# key (sid), namespace, ttl ms, then the attached record's '' (none) | 'none' | 'gen',
# expected generation, JSON, namespace, ttl ms, and '1' to drop the lease with it.
# Returns {reason} when fenced, {'ok', archived, attached 0 | 1} when applied.
COMMIT = (
    read_boundary
    + _HELPERS
    + """
-- the generation of the record at key: false when it cannot be decoded (it is never
-- overwritten before quarantine), nil when there is none, '' when it has none. A
-- surrogate escape cjson refuses (a lone one, which Python's JSON reads) is read as
-- another character: only the generation is wanted, and the store reads the rest.
local function generation(key)
  local raw = redis.call('GET', key)
  if not raw then return nil end
  if not string.find(raw, '^%s*{') then return false end
  local ok, record = pcall(cjson.decode, raw)
  if not ok then
    ok, record = pcall(
      cjson.decode, (string.gsub(raw, '\\\\[uU][dD][89a-fA-F]%x%x', '?')))
  end
  if not ok or type(record) ~= 'table' then return false end
  local g = record['generation']
  if type(g) == 'string' then return g end
  return ''
end
local function matches(stored, mode, expected)
  if stored == false then return false end
  if mode == 'none' then return stored == nil end
  return stored == expected
end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return {'lease'}
end
if not matches(generation(KEYS[2]), ARGV[2], ARGV[3]) then return {'generation'} end
local archived = 0
if ARGV[4] ~= '' then
  local b = archive_boundary(KEYS[4])
  local kept, top
  archived, kept, top = archiving(KEYS[3], b, ARGV[4])
  if archived ~= tonumber(ARGV[5]) then return {'archive'} end
  if top ~= nil then
    -- the boundary is the newest id moved below it, never through_id itself: a
    -- message saved later gets a higher id and must stay active
    keep(KEYS[9], kept)
    redis.call('SET', KEYS[4], top)
  end
end
redis.call('SET', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[5], 0, ARGV[7])
redis.call('SADD', KEYS[6], ARGV[8])
local ttl = tonumber(ARGV[9])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('PEXPIRE', KEYS[4], ttl)
  for i = 9, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
end
local attached = 0
if ARGV[10] ~= '' and matches(generation(KEYS[7]), ARGV[10], ARGV[11]) then
  redis.call('SET', KEYS[7], ARGV[12])
  redis.call('ZADD', KEYS[8], 0, ARGV[7])
  redis.call('SADD', KEYS[6], ARGV[13])
  if tonumber(ARGV[14]) > 0 then redis.call('PEXPIRE', KEYS[7], ARGV[14]) end
  attached = 1
end
if ARGV[15] == '1' then redis.call('DEL', KEYS[1]) end
return {'ok', archived, attached}
"""
)

# KEYS: history, boundary, instructions, lease, postings, entries, words, sessions,
# then (record, index) per namespace. ARGV: sid.
FORGET = """
local deleted = redis.call('ZCARD', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], ARGV[1])
for i = 9, #KEYS, 2 do
  redis.call('DEL', KEYS[i])
  redis.call('ZREM', KEYS[i + 1], ARGV[1])
end
return deleted
"""

# KEYS: sessions, namespaces. ARGV: prefix.
CLEAR_ALL = """
local p = ARGV[1]
for _, sid in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  redis.call('DEL', p .. 'h:' .. sid, p .. 'b:' .. sid, p .. 'i:' .. sid,
    p .. 'l:' .. sid, p .. 'p:' .. sid, p .. 'e:' .. sid, p .. 'w:' .. sid)
end
for _, ns in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local index = p .. 'x:' .. ns
  for _, key in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    redis.call('DEL', p .. 'r:' .. ns .. '\\0' .. key)
  end
  redis.call('DEL', index)
end
redis.call('DEL', KEYS[1], KEYS[2])
return 0
"""

# A lease key holds while it expires within the horizon (the longest ttl); one of no
# expiry or a far one (a foreign writer's PERSIST or PEXPIRE) is expired: taken over.
# KEYS: lease, sessions. ARGV: owner, token, ttl ms, sid, horizon ms.
ACQUIRE = """
local left = redis.call('PTTL', KEYS[1])
if left >= 0 and left <= tonumber(ARGV[5]) then return 0 end
if left ~= -2 then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[4])
return 1
"""

# KEYS: lease. ARGV: horizon ms.
LEASE_OWNER = """
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left > tonumber(ARGV[1]) then return false end
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return false end
return redis.call('HGET', KEYS[1], 'owner')
"""

# KEYS: lease. ARGV: token, ttl ms, horizon ms.
RENEW = """
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left > tonumber(ARGV[3]) then return 0 end
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS: lease. ARGV: field ('token' or 'owner'), value.
DROP_LEASE = """
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS: record, index, namespaces. ARGV: data, key, namespace, ttl ms.
SAVE_METADATA = """
if tonumber(ARGV[4]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
return 1
"""

# KEYS: record, index. ARGV: key.
DELETE_METADATA = """
local deleted = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return deleted
"""

# KEYS: index. ARGV: record-key prefix, start ('-' or '(' .. after key), limit.
# Returns key, raw, key, raw... ; keys whose record expired leave the index.
METADATA_PAGE = """
local out, found, start = {}, 0, ARGV[2]
local want = tonumber(ARGV[3])
while found < want do
  local keys = redis.call('ZRANGEBYLEX', KEYS[1], start, '+', 'LIMIT', 0, want - found)
  if #keys == 0 then break end
  for _, key in ipairs(keys) do
    local raw = redis.call('GET', ARGV[1] .. key)
    if raw then
      out[#out + 1] = key
      out[#out + 1] = raw
      found = found + 1
    else
      redis.call('ZREM', KEYS[1], key)
    end
  end
  start = '(' .. keys[#keys]
end
return out
"""

# KEYS: from record, from index, to record, to index, namespaces.
# ARGV: key, to namespace.
QUARANTINE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
redis.call('SET', KEYS[3], raw)
redis.call('ZADD', KEYS[4], 0, ARGV[1])
redis.call('SADD', KEYS[5], ARGV[2])
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""

# KEYS: sessions. ARGV: key prefix, start ('-' or '(' .. after sid), limit.
# Returns sid, active, archived, ... for sessions that hold messages, active and
# archived -1 for one whose boundary the store never wrote (``RedisStore`` skips it
# with a warning); a session with no key left (expired, cleared) leaves the set.
SESSION_COUNTS = (
    read_boundary
    + """
local out, found, start = {}, 0, ARGV[2]
local want = tonumber(ARGV[3])
while found < want do
  local sids = redis.call('ZRANGEBYLEX', KEYS[1], start, '+', 'LIMIT', 0, want - found)
  if #sids == 0 then break end
  for _, sid in ipairs(sids) do
    local h, b = ARGV[1] .. 'h:' .. sid, ARGV[1] .. 'b:' .. sid
    local total = redis.call('ZCARD', h)
    local boundary = total > 0 and stored_boundary(b)
    if total > 0 and not boundary then
      out[#out + 1] = sid
      out[#out + 1] = -1
      out[#out + 1] = -1
      found = found + 1
    elseif total > 0 then
      local active = redis.call('ZCOUNT', h, '(' .. boundary, '+inf')
        + redis.call('ZCARD', ARGV[1] .. 'i:' .. sid)
      out[#out + 1] = sid
      out[#out + 1] = active
      out[#out + 1] = total - active
      found = found + 1
    elseif redis.call('EXISTS', b, ARGV[1] .. 'l:' .. sid) == 0 then
      redis.call('ZREM', KEYS[1], sid)  -- expired or cleared: nothing left to visit
    end
  end
  start = '(' .. sids[#sids]
end
return out
"""
)
