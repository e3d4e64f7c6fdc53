-- An operator requests an adjustment of a meter: a signed amount in cents with its reason and
-- reference. It changes no money until a second, different operator approves it
-- (review_adjustment.lua). Journaled. Idempotent by its request id for ever: the same request
-- id again, whatever became of the adjustment (requested, approved, rejected), answers the
-- original record unchanged when the request is the same (meter, amount, reason, reference,
-- requester), and is refused (CONFLICT) when it is not; a retry never makes two.
-- KEYS: 1 meter, 2 adjustments, 3 pending adjustments, 4 journal, 5 seq, 6 adjustment requests
-- ARGV: 1 meter_id, 2 link_group_id, 3 amount_cents (signed, not 0), 4 reason, 5 reference,
--       6 actor, 7 actor certificate, 8 request id (the client's, or one derived from the
--       requester and the content)
-- A must-hit-by meter is never raised by an adjustment (docs/mystery.md, "Changing a
-- must-hit-by meter"): it could carry the meter past its committed hit point unpaid, and the
-- next wager would win it at once; a lowering keeps the meter below its hit point.
-- Answers the adjustment record (JSON).
local meter_id, amount, request_id = ARGV[1], tonumber(ARGV[3]), ARGV[8]
local known = redis.call('HGET', KEYS[6], request_id)
if known then
  local raw = redis.call('HGET', KEYS[2], known)
  if not raw then
    refuse('CONFLICT', 'request id ' .. request_id .. ' was adjustment ' .. known
      .. ', which this Redis no longer holds; a new adjustment needs a new request id')
  end
  local a = cjson.decode(raw)
  check_version('adjustment ' .. known, a.v)
  local asked = {meter_id = meter_id, amount_cents = ARGV[3], reason = ARGV[4],
    reference = ARGV[5], requested_by = ARGV[6]}
  for _, field in ipairs({'meter_id', 'amount_cents', 'reason', 'reference', 'requested_by'}) do
    if a[field] ~= asked[field] then
      refuse('CONFLICT', 'request id ' .. request_id .. ' is adjustment ' .. known .. ' ('
        .. a.status .. '), whose ' .. field .. ' is ' .. tostring(a[field]) .. ', not ' .. asked[field]
        .. '; a new adjustment needs a new request id')
    end
  end
  return raw
end
local m = redis.call('HMGET', KEYS[1], 'value_microcents', 'ceiling_cents', 'v', 'kind')
if not m[1] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, m[3])
refuse_mystery_raise(meter_id, m[4], amount)
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
   'by_cert', ARGV[7], 'request_id', request_id})
local adjustment_id = ARGV[2] .. ':' .. int(seq)
local raw = cjson.encode({v = SCHEMA_VERSION, adjustment_id = adjustment_id,
  link_group_id = ARGV[2], meter_id = meter_id, amount_cents = ARGV[3], reason = ARGV[4],
  reference = ARGV[5], status = 'requested', requested_by = ARGV[6],
  requested_by_cert = ARGV[7], requested_at_ms = now_ms(), request_seq = int(seq),
  decided_by = '', decided_by_cert = '', decided_at_ms = '0', decision_seq = '0', note = '',
  request_id = request_id})
redis.call('HSET', KEYS[2], adjustment_id, raw)
redis.call('HSET', KEYS[6], request_id, adjustment_id)
redis.call('SADD', KEYS[3], adjustment_id)
return raw
