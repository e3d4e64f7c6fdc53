-- An operator requests an adjustment of a meter: a signed amount in cents with its reason and
-- reference. It changes no money until a second, different operator approves it
-- (review_adjustment.lua). Journaled. The same operator requesting the same adjustment again
-- while it waits gets the waiting one (a retry never makes two).
-- KEYS: 1 meter, 2 adjustments, 3 pending adjustments, 4 journal, 5 seq
-- ARGV: 1 meter_id, 2 link_group_id, 3 amount_cents (signed, not 0), 4 reason, 5 reference,
--       6 actor, 7 actor certificate
-- Answers the adjustment record (JSON).
local meter_id, amount = ARGV[1], tonumber(ARGV[3])
local m = redis.call('HMGET', KEYS[1], 'value_microcents', 'ceiling_cents', 'v')
if not m[1] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, m[3])
for _, adjustment_id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local raw = redis.call('HGET', KEYS[2], adjustment_id)
  local a = cjson.decode(raw)
  if a.meter_id == meter_id and a.amount_cents == ARGV[3] and a.reason == ARGV[4]
      and a.reference == ARGV[5] and a.requested_by == ARGV[6] then
    return raw
  end
end
local after = num(m[1]) + amount * MICRO
if after < 0 then
  refuse('ADJUSTMENT', 'an adjustment of ' .. dollars(amount) .. ' would take meter ' .. meter_id
    .. ' below zero (it holds ' .. dollars(math.floor(num(m[1]) / MICRO)) .. ')')
end
if num(m[2]) > 0 and after > num(m[2]) * MICRO then
  refuse('ADJUSTMENT', 'an adjustment of ' .. dollars(amount) .. ' would take meter ' .. meter_id
    .. ' above its ceiling ' .. dollars(num(m[2])))
end
check_exact('meter ' .. meter_id, after)
local seq = journal(KEYS[4], KEYS[5], 'adjustment_requested', meter_id, 0, 0,
  {'amount_cents', ARGV[3], 'reason', ARGV[4], 'reference', ARGV[5], 'by', ARGV[6],
   'by_cert', ARGV[7]})
local adjustment_id = ARGV[2] .. ':' .. int(seq)
local raw = cjson.encode({v = SCHEMA_VERSION, adjustment_id = adjustment_id,
  link_group_id = ARGV[2], meter_id = meter_id, amount_cents = ARGV[3], reason = ARGV[4],
  reference = ARGV[5], status = 'requested', requested_by = ARGV[6],
  requested_by_cert = ARGV[7], requested_at_ms = now_ms(), request_seq = int(seq),
  decided_by = '', decided_by_cert = '', decided_at_ms = '0', decision_seq = '0', note = ''})
redis.call('HSET', KEYS[2], adjustment_id, raw)
redis.call('SADD', KEYS[3], adjustment_id)
return raw
