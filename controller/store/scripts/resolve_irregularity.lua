-- A supervisor confirms a round held by a chip count that differed (§ 639a.8(b)): the round
-- returns to 'locked' and settles with the wagers accepted at lockout. (A supervisor's void is
-- void_round.lua with the resolution.) Journaled with the supervisor's certificate identity
-- and note; the time is Redis's clock (ms). The same supervisor confirming again gets the
-- record unchanged; a round without an open irregularity is refused.
-- KEYS: 1 round, 2 journal, 3 seq, 4 irregularities
-- ARGV: 1 table_id, 2 round_id, 3 supervisor identity, 4 its certificate fingerprint, 5 note
-- Answers the irregularity record (JSON).
local table_id, round_id, by = ARGV[1], ARGV[2], ARGV[3]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local id = table_id .. ':' .. round_id .. ':chip_count'
local raw = redis.call('HGET', KEYS[4], id)
if not raw then
  refuse('NOT_IRREGULAR', where .. ' has no chip count that differed; there is nothing to '
    .. 'confirm')
end
local record = cjson.decode(raw)
check_version('irregularity ' .. id, record.v)
if record.status ~= 'open' then
  if record.status == 'confirmed' and record.resolved_by == by then
    return raw
  end
  refuse('DECIDED', 'the irregularity of ' .. where .. ' was already ' .. record.status
    .. ' by ' .. record.resolved_by .. '; it is resolved once')
end
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'irregular' then
  refuse('NOT_IRREGULAR', where .. ' is ' .. tostring(state or 'expired') .. ', not held for '
    .. 'a supervisor')
end
local seq = journal(KEYS[2], KEYS[3], 'irregularity_resolved', '', 0, 0,
  {'table', table_id, 'round', round_id, 'kind', 'chip_count', 'decision', 'confirm',
   'supervisor', by, 'supervisor_cert', ARGV[4], 'note', ARGV[5]})
record.status, record.resolved_by, record.resolved_by_cert = 'confirmed', by, ARGV[4]
record.note = ARGV[5]
record.resolved_at_ms = int(clock_ms())
record.resolved_seq = int(seq)
raw = cjson.encode(record)
redis.call('HSET', KEYS[4], id, raw)
redis.call('HSET', KEYS[1], 'state', 'locked')
return raw
