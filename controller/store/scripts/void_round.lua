-- Void a locked, unsettled round: every contribution it made leaves the meter and reserve.
-- If the reserve has since been spent (a reset drew on it), the part it cannot give back is
-- taken from the meter. If a hit on the meter since this round's lockout paid the
-- contribution out, the meter is not taken below its reset amount (the Rules Submission's
-- floor, § 639a.12(d)(3)): that part was paid to a winner, so the operator funds it,
-- journaled as operator seed. Without such a hit the whole contribution leaves the meter.
-- KEYS: 1 round, 2 meter, 3 journal, 4 seq
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint, 4 reason, 5 meter_id, 6 retention seconds
local table_id, round_id, fp, reason, meter_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local where = 'round ' .. round_id .. ' of table ' .. table_id

local round = redis.call('HMGET', KEYS[1], 'state', 'void_fp', 'void_reply', 'wagers',
  'lockout_seq')
local state, seen_fp = round[1], round[2]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); only a '
    .. 'locked-out round can be voided')
end
if seen_fp then
  if seen_fp == fp then
    return {round[3], 'replay'}
  end
  refuse('CONFLICT', where .. ' is already voided for another reason')
end
if state == 'settled' then
  refuse('SETTLED', where .. ' is already settled; a settled round cannot be voided')
end

local m = redis.call('HMGET', KEYS[2], 'value_microcents', 'reserve_microcents', 'reset_cents',
  'last_hit_seq')
local value, reserve, reset = num(m[1]), num(m[2]), num(m[3]) * MICRO
local hit_since = num(m[4]) > num(round[5])
local reversed = {}
local total, funded = 0, 0
for i, w in ipairs(cjson.decode(round[4])) do
  local from_meter, from_reserve = tonumber(w.to_meter_microcents), tonumber(w.to_reserve_microcents)
  if from_reserve > reserve then
    from_meter = from_meter + (from_reserve - reserve)
    from_reserve = reserve
  end
  local operator_funded = 0
  if hit_since then
    operator_funded = math.max(0, from_meter - math.max(0, value - reset))
  end
  from_meter = from_meter - operator_funded
  value, reserve = value - from_meter, reserve - from_reserve
  total = total + from_meter + from_reserve + operator_funded
  funded = funded + operator_funded
  journal(KEYS[3], KEYS[4], 'void', meter_id, -from_meter, -from_reserve,
    {'table', table_id, 'round', round_id, 'seat', w.seat, 'amount_cents', w.amount_cents,
     'operator_seed_microcents', int(operator_funded), 'reason', reason})
  reversed[i] = {seat = w.seat, kind = w.kind, amount_cents = w.amount_cents,
    meter_id = meter_id, to_meter_microcents = int(from_meter),
    to_reserve_microcents = int(from_reserve)}
end
redis.call('HSET', KEYS[2], 'value_microcents', int(value), 'reserve_microcents', int(reserve))
redis.call('HINCRBY', KEYS[2], 'wagers_total', int(-#reversed))
redis.call('HINCRBY', KEYS[2], 'contributions_microcents_total', int(-total))
redis.call('HINCRBY', KEYS[2], 'operator_seed_microcents_total', int(funded))
local reply = cjson.encode({table_id = table_id, round_id = round_id, reversed = reversed,
  meters = {meter_value(meter_id, value)}})
redis.call('HSET', KEYS[1], 'state', 'voided', 'void_fp', fp, 'void_reply', reply)
redis.call('EXPIRE', KEYS[1], ARGV[6])
return {reply, 'new'}
