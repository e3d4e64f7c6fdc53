-- Report the dealer's chip count of a locked-out round (§ 639a.8(b)): the value chips
-- collected for Progressive Payout Wagers, compared with the wagers of the counted kinds
-- accepted at lockout (one chip each). The count is recorded in the round and journaled; a
-- different count is an irregularity: the round's state becomes 'irregular' (settle.lua and
-- void_round.lua refuse the table until a supervisor resolves it, resolve_irregularity.lua or
-- void_round.lua), its record is kept in the irregularities hash and it is counted.
-- A round is counted once: the same count again is a replay, another count is refused, as is
-- a count of a settled or voided round.
-- KEYS: 1 round, 2 journal, 3 seq, 4 epoch, 5 counters, 6 irregularities
-- ARGV: 1 table_id, 2 round_id, 3 chips, 4 counted wager kinds JSON, 5 link_group_id,
--       6 section, 7, 8 the table's last acknowledged journal position (epoch id, seq)
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, chips = ARGV[1], ARGV[2], tonumber(ARGV[3])
local where = 'round ' .. round_id .. ' of table ' .. table_id
local epoch = check_epoch(KEYS[4], KEYS[2], KEYS[3], 'table ' .. table_id, ARGV[7], ARGV[8])

local round = redis.call('HMGET', KEYS[1], 'state', 'chip_count', 'chip_count_reply', 'wagers',
  'v')
local state = round[1]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); the chips '
    .. 'are counted after the lockout')
end
check_version(where, round[5])
if round[2] then
  if tonumber(round[2]) == chips then
    return {round[3], 'replay', epoch, redis.call('GET', KEYS[3]) or '0'}
  end
  refuse('CONFLICT', where .. ' was already counted at ' .. round[2] .. ' chips; a round is '
    .. 'counted once (a supervisor resolves a count that differed)')
end
if state == 'settled' then
  refuse('SETTLED', where .. ' is already settled; the chips are counted before settlement')
end
if state == 'voided' then
  refuse('VOIDED', where .. ' was voided; its wagers were returned')
end

local counted = {}
for _, kind in ipairs(cjson.decode(ARGV[4])) do
  counted[kind] = true
end
local accepted = 0
for _, w in ipairs(cjson.decode(round[4])) do
  if counted[w.kind] then
    accepted = accepted + 1
  end
end
local matched = chips == accepted
local seq = journal(KEYS[2], KEYS[3], 'chip_count', '', 0, 0,
  {'table', table_id, 'round', round_id, 'chips', int(chips), 'accepted', int(accepted),
   'matched', tostring(matched), 'section', ARGV[6]})
if not matched then
  local record = {v = SCHEMA_VERSION, link_group_id = ARGV[5], table_id = table_id,
    round_id = round_id, kind = 'chip_count', effect = 'held', section = ARGV[6],
    status = 'open', chips = int(chips), accepted = int(accepted), journal_seq = int(seq),
    reported_at_ms = int(clock_ms())}
  redis.call('HSET', KEYS[6], table_id .. ':' .. round_id .. ':chip_count',
    cjson.encode(record))
  redis.call('HSET', KEYS[1], 'state', 'irregular')
  count(KEYS[5], {'irregularities', 'chip_count'}, 1)
end
local reply = cjson.encode({table_id = table_id, round_id = round_id, chips = int(chips),
  accepted = int(accepted), matched = matched})
redis.call('HSET', KEYS[1], 'chip_count', int(chips), 'chip_count_reply', reply)
return {reply, 'new', epoch, int(seq)}
