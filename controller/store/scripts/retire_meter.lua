-- Retire a meter while its link group is in maintenance, moving its money to another meter of
-- the same game in the same link group (one atomic step; across link groups it could not be).
-- The amount above the reset goes to the other meter (up to that meter's ceiling, the rest to
-- its reserve, as a contribution would; all to the reserve of a must-hit-by meter, which only
-- contributions raise, docs/mystery.md), the reserve to the other meter's reserve (players'
-- money held for resets stays in the prize pool); the reset amount, the operator's seed,
-- returns to the operator (Iowa 491-11.12(4): "less its reset value"). Journaled on both
-- sides with who, why and the approval reference. Refused while a table still feeds the meter
-- (naming them), while a jackpot or an adjustment on it waits. The retired meter's record is
-- kept (retired meters hash); its key is removed, so every step that would feed it is refused,
-- and its id is never used again. The same operator repeating the same retirement gets its
-- record again.
-- KEYS: 1 meter, 2 the other meter, 3 meters set, 4 maintenance, 5 journal, 6 seq,
--       7 retired meters, 8 pending adjustments, 9 adjustments, 10 tables set,
--       11.. the group's tables (ARGV[8]'s order)
-- ARGV: 1 meter_id, 2 the other meter's id, 3 link_group_id, 4 actor, 5 actor certificate,
--       6 reason, 7 approval reference, 8 table ids JSON
-- Answers the retired meter's record (JSON).
local meter_id, to_id, link_group_id = ARGV[1], ARGV[2], ARGV[3]
local done = redis.call('HGET', KEYS[7], meter_id)
if done then
  local record = cjson.decode(done)
  if record.to_meter_id == to_id and record.retired_by == ARGV[4]
      and record.retired_reason == ARGV[6] then
    return done
  end
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' was retired already (journal #'
    .. record.retired_seq .. ', its money moved to ' .. record.to_meter_id .. ')')
end
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
local m = {}
for i = 1, #fields, 2 do
  m[fields[i]] = fields[i + 1]
end
check_version('meter ' .. meter_id, m.v)
local t = redis.call('HMGET', KEYS[2], 'game', 'value_microcents', 'reserve_microcents',
  'ceiling_cents', 'v', 'kind')
if not t[1] then
  refuse('NOT_FOUND', 'meter ' .. to_id .. ' does not exist in link group ' .. link_group_id)
end
check_version('meter ' .. to_id, t[5])
if t[1] ~= m.game then
  refuse('INVALID', 'meter ' .. meter_id .. ' funds ' .. m.game .. ' but meter ' .. to_id
    .. ' funds ' .. t[1] .. '; a retired meter\'s money goes to a meter of the same game')
end
require_maintenance(KEYS[4], link_group_id, 'meter ' .. meter_id)
local feeding = tables_feeding(KEYS, 11, cjson.decode(ARGV[8]), KEYS[10], meter_id)
if #feeding > 0 then
  refuse('FEEDS', 'meter ' .. meter_id .. ' is still fed by table(s) ' .. table.concat(feeding, ', ')
    .. '; update them to feed another meter first (jackpotctl tables update)')
end
if m.staged_seq then
  refuse('STAGED', 'meter ' .. meter_id .. ' has a change staged for its next hit (journal #'
    .. m.staged_seq .. '); cancel it first (jackpotctl meters cancel-staged)')
end
if num(m.pending_jackpots) > 0 then
  refuse('PENDING', 'meter ' .. meter_id .. ' has ' .. m.pending_jackpots .. ' jackpots '
    .. 'waiting for validation; approve or reject them first')
end
for _, adjustment_id in ipairs(redis.call('SMEMBERS', KEYS[8])) do
  local a = cjson.decode(redis.call('HGET', KEYS[9], adjustment_id))
  if a.meter_id == meter_id then
    refuse('PENDING', 'adjustment ' .. adjustment_id .. ' of meter ' .. meter_id .. ' waits for '
      .. 'approval; approve or reject it first')
  end
end

local value, reserve = num(m.value_microcents), num(m.reserve_microcents)
local above = math.max(value - num(m.reset_cents) * MICRO, 0)
local recovered = value - above
local to_value, to_reserve = num(t[2]), num(t[3])
local room = above
if num(t[4]) > 0 then
  room = math.max(num(t[4]) * MICRO - to_value, 0)
end
if t[6] == 'must_hit_by' then  -- never raised but by contributions: all to its reserve
  room = 0
end
local to_meter = math.min(above, room)
local to_reserve_part = above - to_meter + reserve
check_exact('meter ' .. to_id, to_value + to_meter)
check_exact('the reserve of meter ' .. to_id, to_reserve + to_reserve_part)

local why = {'by', ARGV[4], 'by_cert', ARGV[5], 'reason', ARGV[6], 'approval', ARGV[7]}
local seq = journal(KEYS[5], KEYS[6], 'meter_retired', meter_id, -value, -reserve,
  {'to_meter', to_id, 'transferred_microcents', int(above), 'reserve_transferred_microcents',
   int(reserve), 'operator_recovered_microcents', int(recovered), unpack(why)})
journal(KEYS[5], KEYS[6], 'meter_transfer_in', to_id, to_meter, to_reserve_part,
  {'from_meter', meter_id, 'retired_seq', int(seq), 'from_meter_microcents', int(above),
   'from_reserve_microcents', int(reserve), unpack(why)})
redis.call('HSET', KEYS[2], 'value_microcents', int(to_value + to_meter), 'reserve_microcents',
  int(to_reserve + to_reserve_part))
redis.call('HINCRBY', KEYS[2], 'transfers_in_microcents_total', int(above + reserve))

m.to_meter_id, m.retired_by, m.retired_by_cert = to_id, ARGV[4], ARGV[5]
m.retired_reason, m.approval, m.retired_seq = ARGV[6], ARGV[7], int(seq)
m.retired_at_ms = now_ms()
m.transferred_microcents, m.reserve_transferred_microcents = int(above), int(reserve)
m.operator_recovered_microcents = int(recovered)
local record = cjson.encode(m)
redis.call('HSET', KEYS[7], meter_id, record)
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], meter_id)
return record
