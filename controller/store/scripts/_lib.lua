-- Shared prelude, prepended to every script by controller/store/scripts.py.
--
-- Money: meters and reserves are integers of microcents (1 cent = 1,000,000). Lua numbers
-- are doubles, exact below 2^53; every stored value is checked against MAX_EXACT before it
-- is written, and every integer is written with '%d', never with tostring (which would
-- print 1e+15). Each script validates everything before its first write, because a Redis
-- script is atomic but does not roll back writes made before an error.

local MICRO = 1000000
local MAX_EXACT = 9007199254740991

-- Globals the hot helpers call, held as upvalues: a global is a table lookup (two for
-- string.format) at every call, an upvalue one step.
local lib_format, lib_call, lib_concat, lib_unpack = string.format, redis.call, table.concat,
  unpack

local function int(x)
  return lib_format('%d', x)
end

-- Redis's clock: whole ms since the Unix epoch (a number; int() it for a record).
local function clock_ms()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end

-- Refuse the request: an error reply "CODE message"; the store maps CODE to an error class.
local function refuse(code, message)
  error({err = code .. ' ' .. message})
end

-- A stored record that does not read as these scripts write it: refused, never guessed at
-- (an amount read as 0 would be written back). The store reads the message as
-- kind TAB name TAB key TAB detail (jackpot.errors.CorruptRecord).
local function refuse_corrupt(kind, name, key, detail)
  refuse('CORRUPT', kind .. '\t' .. name .. '\t' .. key .. '\t' .. detail)
end

-- A stored JSON object as the scripts write it (nil for a missing field); one that does not
-- parse to an object is refused as a corrupt record, never a script error.
local function stored_object(kind, name, key, field, raw)
  if not raw then
    return nil
  end
  local ok, value = pcall(cjson.decode, raw)
  if not ok or type(value) ~= 'table' then
    refuse_corrupt(kind, name, key, field .. ' is not a JSON object')
  end
  return value
end

-- A stored integer as the scripts write it ('%d': an optional minus and digits, within
-- MAX_EXACT), or 0 for a missing field (HMGET's false, GET's nil); anything else is refused
-- as a corrupt record, e.g. stored_int('meter', id, key, 'value_microcents', f[1]).
local stored_int_match, stored_int_number = string.match, tonumber  -- upvalues: per field
local function stored_int(kind, name, key, field, value)
  if not value then
    return 0
  end
  local n = stored_int_match(value, '^-?%d+$') and stored_int_number(value)
  if not n or n > MAX_EXACT or n < -MAX_EXACT then
    local shown = string.sub(tostring(value), 1, 40)
    refuse_corrupt(kind, name, key, field .. ' is \'' .. shown .. '\', not an integer')
  end
  return n
end

-- Whether the set holds exactly ids (read before the script ran): false at once on a size
-- mismatch, else one SISMEMBER per id (bounded by the caller's list).
local function same_members(set_key, ids)
  if redis.call('SCARD', set_key) ~= #ids then
    return false
  end
  for _, id in ipairs(ids) do
    if redis.call('SISMEMBER', set_key, id) == 0 then
      return false
    end
  end
  return true
end

-- A stored number (0 when missing); one that is not an integer is refused as corrupt (a
-- script that read it as 0 would write the 0 back).
local function num(value)
  if not value then
    return 0
  end
  if type(value) == 'number' and value == math.floor(value) then
    return value
  end
  return stored_int('record', '', '', 'a stored number', value)
end

-- Every stored record carries the schema version it was written in (its field 'v');
-- SCHEMA_VERSION, the one these scripts write and read, is defined above this prelude by
-- controller/store/scripts.py (from codec.SCHEMA_VERSION). A record of another version is
-- refused, never guessed at; 'what' names it (e.g. 'round 5 of table cs-1').
local function check_version(what, version)
  if not version then
    refuse('VERSION', 'the stored record of ' .. what .. ' has no schema version; these '
      .. 'scripts read version ' .. SCHEMA_VERSION .. ' and do not guess')
  end
  if tonumber(version) ~= SCHEMA_VERSION then
    refuse('VERSION', 'the stored record of ' .. what .. ' has schema version '
      .. tostring(version) .. '; these scripts read version ' .. SCHEMA_VERSION)
  end
end

-- The journal's hash chain (docs/journal.md; controller/domain/journal_chain.py is its Python twin).
-- Every entry carries 'hash', the SHA-256 (sha256.lua) of
--   DOMAIN_BLOCK .. field .. field ... .. previous hash (its 32 bytes)
-- over the entry's fields without 'hash': each whose name has a tag in CHAIN_TAGS as
-- tag .. len(value) .. value, in the order of the tags, then each other one as
-- '\0' .. len(name) .. name .. len(value) .. value, sorted by name (byte order); lengths are
-- byte counts in unsigned LEB128. DOMAIN_BLOCK is 'jackpot-journal-v2' and 46 zero bytes,
-- one whole block: CHAIN_DOMAIN is the state it leaves, so an entry's hash starts there. The
-- first entry's previous hash is CHAIN_GENESIS. The previous hash is the 'hash' of the
-- stream's last entry (a trim always keeps that one), so the chain needs no key of its own.
local CHAIN_GENESIS = string.rep('0', 64)

-- FIELD_TAGS of controller/domain/journal_chain.py (a test holds them equal). Never change or reuse
-- a tag, and give one only to a name no journal holds yet. The names the entries of one step
-- share (type, meter, table, round, wager, amount) come first, so that the first block of
-- the contributions of one lockout is the same and is hashed once (chain_states).
-- CHAIN_DOMAIN, CHAIN_TAGS and chain_states (below) are made by a call's first entry
-- (chain_tables): a table is built anew at every call of a script, and most calls of some
-- scripts (a settlement without an award) journal nothing.
local CHAIN_DOMAIN, CHAIN_TAGS, chain_states
local function chain_tables()
  CHAIN_DOMAIN = {bytes = 64, words = {0xab2387ed, 0xcffb95cb, 0xa5dd1a5f, 0xfab9acf3,
    0x4cc31221, 0x51a580d9, 0x87c4e700, 0x33b601e6}}
  CHAIN_TAGS = {type = 1, meter = 2, table = 3, round = 4, wager = 5, amount_cents = 6,
    d_meter = 7, d_reserve = 8, seat = 9, seq = 10, on_dealer = 11, hand = 12, line = 13,
    award = 14, envy_for_seat = 15, limited_from_cents = 16, meter_before_cents = 17,
    meter_after_cents = 18, operator_seed_microcents = 19, reset_cents = 20, jackpot = 21,
    payer = 22, payer_cert = 23, reviewer = 24, reviewer_cert = 25, note = 26, reason = 27,
    wagers = 28, by = 29, by_cert = 30, link_group = 31, description = 32, epoch = 33,
    previous_epoch = 34, from_seq = 35, source = 36, stopped_because = 37, game = 38,
    rate_ppm = 39, reserve_rate_ppm = 40, ceiling_cents = 41, config = 42,
    previous_last_round = 43, last_round = 44}
  chain_states = {}  -- this call's states after CHAIN_DOMAIN and a first block, by block
  return CHAIN_TAGS
end

local function bytes_before(a, b)  -- byte order: Lua's '<' follows the server's locale
  local sbyte = string.byte
  for i = 1, math.min(#a, #b) do
    local x, y = sbyte(a, i), sbyte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

-- A length as unsigned LEB128 (7 bits a byte, low first, the high bit meaning more).
local function chain_length(n)
  if n < 128 then
    return string.char(n)
  end
  local bytes = {}
  while n >= 128 do
    local low = n % 128
    bytes[#bytes + 1] = 128 + low
    n = (n - low) / 128
  end
  bytes[#bytes + 1] = n
  return string.char(unpack(bytes))
end

-- The 32 bytes a hash (hex) is chained as: the digest its 64 hex digits spell, or zeros when
-- it spells none (an entry whose hash was removed or mangled: the audit names it).
local function chain_previous(hex)
  if #hex ~= 64 or string.find(hex, '[^0-9a-fA-F]') then
    return string.rep('\0', 32)
  end
  local bytes, sub = {}, string.sub
  for i = 1, 63, 2 do
    bytes[#bytes + 1] = tonumber(sub(hex, i, i + 1), 16)
  end
  return string.char(unpack(bytes))
end

-- The hash of an entry (flat list of string names and values) chained to 'previous' (32
-- bytes): its hex digits and its 32 bytes.
local function chain_hash(previous, flat)
  local char = string.char
  local tags = CHAIN_TAGS or chain_tables()
  local by_tag, last_tag, names, by_name = {}, 0, nil, nil
  for i = 1, #flat, 2 do
    local name = flat[i]
    local tag = tags[name]
    if tag then
      by_tag[tag] = flat[i + 1]
      if tag > last_tag then
        last_tag = tag
      end
    else
      names, by_name = names or {}, by_name or {}
      names[#names + 1] = name
      by_name[name] = flat[i + 1]
    end
  end
  local parts = {}
  for tag = 1, last_tag do
    local value = by_tag[tag]
    if value then
      local n = #value
      parts[#parts + 1] = n < 128 and char(tag, n) or char(tag) .. chain_length(n)
      parts[#parts + 1] = value
    end
  end
  if names then
    table.sort(names, bytes_before)
    for i = 1, #names do
      local name = names[i]
      local value = by_name[name]
      parts[#parts + 1] = '\0' .. chain_length(#name) .. name .. chain_length(#value) .. value
    end
  end
  parts[#parts + 1] = previous
  local message = lib_concat(parts)
  if #message < 64 then
    return sha256_finish(CHAIN_DOMAIN, message)
  end
  local first = string.sub(message, 1, 64)
  local state = chain_states[first]
  if not state then
    state = sha256_absorb(CHAIN_DOMAIN, first)
    chain_states[first] = state
  end
  return sha256_finish(state, string.sub(message, 65))
end

local chain_heads = {}  -- this call's last hash per journal key (scripts may write several)

-- The 32 bytes of the hash the next entry of a journal chains to.
local function chain_head(journal_key)
  local head = chain_heads[journal_key]
  if head then
    return head
  end
  local last = redis.call('XREVRANGE', journal_key, '+', '-', 'COUNT', 1)[1]
  if not last then
    return chain_previous(CHAIN_GENESIS)
  end
  local flat = last[2]
  for i = 1, #flat, 2 do
    if flat[i] == 'hash' then
      return chain_previous(flat[i + 1])
    end
  end
  -- an entry without a hash: the audit names it; the chain goes on
  return chain_previous(CHAIN_GENESIS)
end

-- Append one journal entry (flat field list) with the next sequence number, chained to the
-- previous entry; return its sequence number. Values are written as the strings they are
-- hashed as (a number as Redis itself would print it, '%.17g': integers plainly).
local function journal(journal_key, seq_key, entry_type, meter_id, d_meter, d_reserve, fields)
  local seq = lib_call('INCR', seq_key)
  local flat = {'seq', int(seq), 'type', entry_type, 'meter', meter_id, 'd_meter', int(d_meter),
    'd_reserve', int(d_reserve)}
  for i = 1, #fields do
    local value = fields[i]
    if type(value) == 'number' then
      value = lib_format('%.17g', value)
    end
    flat[#flat + 1] = value
  end
  local hash, chained_as = chain_hash(chain_head(journal_key), flat)
  chain_heads[journal_key] = chained_as
  flat[#flat + 1] = 'hash'
  flat[#flat + 1] = hash
  lib_call('XADD', journal_key, '*', lib_unpack(flat))
  return seq
end

-- Add to one of the link group's event counters (its "counters" hash: only ever added to, in
-- the step that caused the event, so the metrics count exactly what Redis applied; a field is
-- the counter's kind and label values joined by '|', e.g. 'hits|cs-main|royal_flush').
local function count(counters_key, parts, amount)
  if amount ~= 0 then
    lib_call('HINCRBY', counters_key, lib_concat(parts, '|'), int(amount))
  end
end

local function meter_value(meter_id, microcents)
  return {meter_id = meter_id, amount_microcents = int(microcents)}
end

local function check_exact(what, value)
  if value > MAX_EXACT or value < -MAX_EXACT then
    refuse('OVERFLOW', what .. ' would leave the range this controller keeps exactly')
  end
end

-- The meters of a table: KEYS[first..] in the order of ids; refuse a missing one.
-- Each is {id, key, value, reserve, rate, reserve_rate, ceiling, reset, last_hit_seq} in
-- microcents (rates in ppm), plus counters the script adds to (wagers, total). Its HMGET
-- reads 8 fields: a 9th would make Redis's reply table grow its array part once more.
local function load_meters(keys, first, ids)
  local meters = {list = {}, by_id = {}}
  for i, meter_id in ipairs(ids) do
    local key = keys[first + i - 1]
    local f = lib_call('HMGET', key, 'value_microcents', 'reserve_microcents', 'rate_ppm',
      'reserve_rate_ppm', 'ceiling_cents', 'reset_cents', 'last_hit_seq', 'v')
    if not f[1] then
      refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
    end
    check_version('meter ' .. meter_id, f[8])
    local ceiling = stored_int('meter', meter_id, key, 'ceiling_cents', f[5]) * MICRO
    if ceiling == 0 or ceiling > MAX_EXACT then
      ceiling = MAX_EXACT
    end
    local m = {id = meter_id, key = key,
      value = stored_int('meter', meter_id, key, 'value_microcents', f[1]),
      reserve = stored_int('meter', meter_id, key, 'reserve_microcents', f[2]),
      rate = stored_int('meter', meter_id, key, 'rate_ppm', f[3]),
      reserve_rate = stored_int('meter', meter_id, key, 'reserve_rate_ppm', f[4]),
      ceiling = ceiling, reset = stored_int('meter', meter_id, key, 'reset_cents', f[6]) * MICRO,
      last_hit_seq = stored_int('meter', meter_id, key, 'last_hit_seq', f[7]), wagers = 0,
      total = 0}
    meters.list[i] = m
    meters.by_id[meter_id] = m
  end
  return meters
end

local function meter_values(meters)
  local values = {}
  for i, m in ipairs(meters.list) do
    values[i] = meter_value(m.id, m.value)
  end
  return values
end

-- Epochs (jackpot/epochs.py is the reference of this judgement). A table sends the
-- last journal position it was acknowledged, (epoch id, seq); nil when Redis's state holds
-- it, else why not. e = {id, lineage "id:cutoff,id:*", stopped}.
local function epoch_verdict(e, seq, who, known_epoch, known_seq)
  if known_epoch == '' then
    return nil
  end
  if known_epoch == e.id then
    if known_seq <= seq then
      return nil
    end
    return who .. ' was acknowledged journal #' .. int(known_seq) .. ' but Redis\'s journal '
      .. 'ends at #' .. int(seq) .. ': Redis lost acknowledged steps (restarted without its '
      .. 'data, or restored from an older copy)'
  end
  for ancestor, cutoff in string.gmatch(e.lineage, '([^:,]+):([^,]+)') do
    if ancestor == known_epoch then
      if cutoff == '*' or known_seq <= tonumber(cutoff) then
        return nil
      end
      return who .. ' was acknowledged journal #' .. int(known_seq) .. ' of epoch '
        .. known_epoch .. ', but Redis\'s state holds that epoch only up to #' .. cutoff
        .. ' (restored from there): reconcile its answers after that (jackpotctl restore '
        .. 'collect --outbox FILE, then jackpotctl restore status)'
    end
  end
  return who .. ' knows epoch ' .. known_epoch .. ' but Redis holds epoch ' .. e.id
    .. ': Redis\'s state was replaced or created anew, and what the table was acknowledged '
    .. 'is not in it'
end

local STOP_ADVICE = '; the link group is stopped until an operator restores its state or '
  .. 'resumes it (RUNBOOK: "Redis lost its data")'
local UNVERIFIED_ADVICE = '; the controller cannot verify that it answered this position (no '
  .. 'valid mac), so only this table is refused and the link group serves on (alert '
  .. 'JackpotTablePositionAhead, see the RUNBOOK); a second table claiming so stops the '
  .. 'link group'

-- Check the link group's epoch before a table's step; return {epoch id, seq}. A missing
-- record or a stopped group is refused. known_seq is the seq's digits, followed by '!' when
-- the controller verified the table's mac over that position (docs/journal.md, "Verified
-- positions"). A table that knows more than Redis holds stops the group - a deliberate
-- write before a refusal, journaled ('link_group_stopped'), so that every table of it stops -
-- when its position is verified, or when it is the second table identity claiming so without
-- verification in this epoch. A first unverified claim refuses only the claiming table (code
-- UNVERIFIED), and is the other deliberate write before a refusal, journaled too: the epoch
-- record's 'unverified_claim' remembers it ("<epoch> <who>"), and the journal's
-- 'unverified_claim' entry says who claimed what, once per epoch (that table's claims again
-- write nothing), so that a second table's claim can stop the group on any replica.
local function check_epoch(epoch_key, journal_key, seq_key, who, known_epoch, known_seq)
  local f = redis.call('HMGET', epoch_key, 'id', 'lineage', 'stopped', 'unverified_claim')
  if not f[1] then
    refuse('LOST', 'the link group of ' .. who .. ' has no epoch record in Redis: its state '
      .. 'is missing' .. STOP_ADVICE)
  end
  if f[3] and f[3] ~= '' then
    -- a restore awaiting reconciliation names its own commands (restore_epoch.lua)
    refuse('STOPPED', string.find(f[3], 'jackpotctl restore', 1, true) and f[3]
      or f[3] .. STOP_ADVICE)
  end
  local digits, mark = string.match(tostring(known_seq or ''), '^(%d*)(!?)$')
  local seq = num(redis.call('GET', seq_key))
  local why = epoch_verdict({id = f[1], lineage = f[2] or ''}, seq, who, known_epoch,
    tonumber(digits) or 0)
  if why then
    if mark ~= '!' then
      local prefix = f[1] .. ' '
      local first = f[4] and string.sub(f[4], 1, #prefix) == prefix
        and string.sub(f[4], #prefix + 1) or ''
      if first == '' then
        first = nil
        redis.call('HSET', epoch_key, 'unverified_claim', prefix .. who)
        journal(journal_key, seq_key, 'unverified_claim', '', 0, 0, {'by', who, 'reason', why})
      end
      if not first or first == who then
        refuse('UNVERIFIED', why .. UNVERIFIED_ADVICE)
      end
      why = why .. ' (unverified, as ' .. first .. ' claimed before: two tables agree)'
    end
    redis.call('HSET', epoch_key, 'stopped', why)
    journal(journal_key, seq_key, 'link_group_stopped', '', 0, 0, {'reason', why})
    refuse('STOPPED', why .. STOP_ADVICE)
  end
  return f[1]
end

-- Must-hit-by mystery meters (docs/mystery.md; controller/domain/mystery.py is the Python
-- twin of the commitment). A hit point is drawn uniformly in whole cents in
-- (reset, must_hit_by] from 'seed', 32 bytes from the controller's CSPRNG (Python's
-- secrets) as 64 hex digits, never from math.random: SHA-256 in counter mode over the seed,
-- the meter and its cycle gives 48-bit integers, exact in Lua's doubles; one below the largest
-- multiple of the span is taken modulo the span (rejection sampling: no modulo bias). The salt
-- is the SHA-256 of the seed under another label, so revealing it reveals nothing of the seed.
-- The commitment is sha256_hex(hit_cents .. ':' .. salt). Answers hit_cents, salt, commitment.
local MYSTERY_BLOCK = 2 ^ 48

local function mystery_draw(seed, meter_id, cycle, reset_cents, must_hit_by_cents)
  if not string.match(seed, '^%x+$') or #seed ~= 64 then
    refuse('BOUND', 'a mystery draw needs a 64-hex-digit seed')
  end
  local span = must_hit_by_cents - reset_cents
  if not (span >= 1 and span < MYSTERY_BLOCK) then  -- an empty span has no hit point
    refuse('INVALID', 'no hit point of must-hit-by meter ' .. meter_id .. ' lies in ('
      .. int(reset_cents) .. ', ' .. int(must_hit_by_cents) .. '] cents; nothing was changed')
  end
  local limit = math.floor(MYSTERY_BLOCK / span) * span
  local where = 'jackpot-mystery-v1:' .. seed .. ':' .. meter_id .. ':' .. int(cycle) .. ':'
  local hit
  for block = 0, 1000 do
    local digest = sha256_hex(where .. block)
    for at = 1, 61, 12 do  -- five 48-bit numbers of each digest
      local x = tonumber(string.sub(digest, at, at + 11), 16)
      if x < limit then
        hit = reset_cents + 1 + x % span
        break
      end
    end
    if hit then
      break
    end
  end
  if not hit then  -- each number is taken with probability above 1/2: never in practice
    refuse('BOUND', 'no mystery draw for meter ' .. meter_id .. ' from this seed')
  end
  local salt = sha256_hex('jackpot-mystery-salt-v1:' .. seed .. ':' .. meter_id .. ':'
    .. int(cycle))
  return hit, salt, sha256_hex(int(hit) .. ':' .. salt)
end

-- Start cycle 'cycle' of a must-hit-by meter with a drawn hit point: the secret (hit_cents,
-- salt) in its mystery key, the commitment in the meter, and the commitment (only) journaled.
-- m = {id, key, reset (microcents), must_hit_by (cents)}; 'fields' are added to the entry.
local function mystery_commit(journal_key, seq_key, secret_key, m, draw, fields)
  redis.call('HSET', secret_key, 'hit_cents', int(draw.hit), 'salt', draw.salt, 'cycle',
    int(draw.cycle))
  redis.call('HSET', m.key, 'mystery_cycle', int(draw.cycle), 'mystery_commitment',
    draw.commitment)
  local entry = {'cycle', int(draw.cycle), 'commitment', draw.commitment, 'reset_cents',
    int(m.reset / MICRO), 'must_hit_by_cents', int(m.must_hit_by)}
  for i = 1, #fields do
    entry[#entry + 1] = fields[i]
  end
  return journal(journal_key, seq_key, 'mystery_draw', m.id, 0, 0, entry)
end

-- An adjustment never raises a must-hit-by meter (request_adjustment.lua): 'kind' is the
-- meter's stored kind, 'amount' the adjustment's signed cents.
local function refuse_mystery_raise(meter_id, kind, amount)
  if kind == 'must_hit_by' and amount > 0 then
    refuse('ADJUSTMENT', 'meter ' .. meter_id .. ' is a must-hit-by meter: only its players\' '
      .. 'contributions raise it (a raise could carry it past its committed hit point unpaid, '
      .. 'to be won by the next wager); nothing was changed')
  end
end

-- The draw of cycle 'cycle' of meter m (see mystery_commit) as {cycle, hit, salt, commitment}.
local function mystery_next(m, seed, cycle)
  local hit, salt, commitment = mystery_draw(seed, m.id, cycle, m.reset / MICRO, m.must_hit_by)
  return {cycle = cycle, hit = hit, salt = salt, commitment = commitment}
end

-- Staged meter changes (docs/staged-changes.md; stage_meter_change.lua stages one). A staged
-- change waits in the meter's fields 'staged_change' (JSON of strings: at = 'hit' | 'reset',
-- old_* and new_* reset_cents, rate_ppm, reserve_rate_ppm, ceiling_cents, by, reason) and
-- 'staged_seq' (its meter_change_staged entry), and is applied by the step that pays the
-- meter's next hit (at = 'hit': any percentage or must-hit-by hit; at = 'reset': a hit that
-- resets the meter, a 100% award or a must-hit-by hit). Only that branch reads the fields,
-- once per meter per call (m.staged caches it): an ordinary round reads nothing more.
-- staged_check decides and changes m in memory (its reset, rates and ceiling, so the reset
-- and the rest of the step use the new ones); staged_write writes and journals it, after the
-- hit's reset. A change that no longer fits (the meter's parameters are not the ones it was
-- staged against, or a new ceiling below what the meter holds after the hit, or a
-- must-hit-by meter's invariants) is dropped, journaled with why: the payment never waits.
local STAGED_NAMES = {'reset_cents', 'rate_ppm', 'reserve_rate_ppm', 'ceiling_cents'}

local function staged_check(m, event)
  if m.staged == false then
    return nil
  end
  local f = redis.call('HMGET', m.key, 'staged_change', 'staged_seq', 'reset_cents', 'rate_ppm',
    'reserve_rate_ppm', 'ceiling_cents', 'kind', 'must_hit_by_cents', 'staged_tables')
  m.staged_tables_read = f[9]  -- for staged_tables_apply, next in the same step (settle.lua)
  if not f[1] then
    m.staged = false
    return nil
  end
  local ok, s = pcall(cjson.decode, f[1])
  local d = {m = m, staged_seq = f[2] or '', json = f[1]}
  if not ok or type(s) ~= 'table' then
    d.why = 'its record does not read as JSON'
  elseif s.at == 'hit' or (s.at == 'reset' and event == 'reset') then
    d.s = s
    for i, name in ipairs(STAGED_NAMES) do
      -- digits only, as stored_int reads them back: staged_write stores the text as it is
      local text = s['new_' .. name]
      local new = type(text) == 'string' and string.match(text, '^%d+$') and tonumber(text)
      if s['old_' .. name] ~= f[2 + i] then
        d.why = 'the meter\'s ' .. name .. ' is ' .. tostring(f[2 + i]) .. ', not '
          .. tostring(s['old_' .. name]) .. ' as when the change was staged'
      elseif not (new and new <= MAX_EXACT / MICRO) then
        d.why = 'its new ' .. name .. ' is not a whole number'
      end
      if d.why then
        break
      end
    end
    local reset, ceiling = tonumber(s.new_reset_cents), tonumber(s.new_ceiling_cents)
    if not d.why and f[7] == 'must_hit_by' then
      local must_hit_by = tonumber(f[8]) or 0
      if ceiling ~= 0 or reset >= must_hit_by then
        d.why = 'a must-hit-by meter keeps no ceiling and a reset below its must-hit-by '
          .. 'amount ' .. int(must_hit_by) .. ' cents'
      end
    elseif not d.why and ceiling > 0 then
      local after = event == 'reset' and reset * MICRO or m.value
      if ceiling <= reset or ceiling * MICRO < after then
        d.why = 'its ceiling ' .. int(ceiling) .. ' cents would be below the meter after the '
          .. 'hit (' .. int(math.floor(after / MICRO)) .. ' cents) or not above its reset'
      end
    end
  else
    return nil  -- at the next reset: this hit does not reset the meter
  end
  m.staged = false
  if not d.why then
    m.reset = tonumber(s.new_reset_cents) * MICRO
    m.rate, m.reserve_rate = tonumber(s.new_rate_ppm), tonumber(s.new_reserve_rate_ppm)
    local ceiling = tonumber(s.new_ceiling_cents) * MICRO
    m.ceiling = (ceiling == 0 or ceiling > MAX_EXACT) and MAX_EXACT or ceiling
  end
  return d
end

-- Write and journal a decision of staged_check ('fields': the hit's table, round, hit_seq).
local function staged_write(journal_key, seq_key, d, fields)
  local m = d.m
  local entry = {'staged_seq', d.staged_seq}
  if d.why then
    entry[#entry + 1] = 'reason'
    entry[#entry + 1] = 'dropped: ' .. d.why
  else
    local set = {}
    for _, name in ipairs(STAGED_NAMES) do
      set[#set + 1] = name
      set[#set + 1] = d.s['new_' .. name]
      entry[#entry + 1] = 'old_' .. name
      entry[#entry + 1] = d.s['old_' .. name]
      entry[#entry + 1] = 'new_' .. name
      entry[#entry + 1] = d.s['new_' .. name]
    end
    entry[#entry + 1] = 'at'
    entry[#entry + 1] = d.s.at
    redis.call('HSET', m.key, unpack(set))
  end
  for i = 1, #fields do
    entry[#entry + 1] = fields[i]
  end
  redis.call('HDEL', m.key, 'staged_change', 'staged_seq')
  return journal(journal_key, seq_key, d.why and 'meter_change_dropped' or 'meter_change_applied',
    m.id, 0, 0, entry)
end
