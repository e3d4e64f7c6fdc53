-- A second operator approves a requested adjustment, which applies it to the meter in this
-- step (journaled with both identities), or an operator rejects it (the requester may
-- withdraw it) with a reason, moving nothing. An approval by the requester is refused: an
-- adjustment needs two different operator identities. The same decision by the same operator
-- again gets the record unchanged; any other decision on a decided adjustment is refused.
-- The meter stays within zero and its ceiling; a must-hit-by meter is never raised.
-- KEYS: 1 adjustments, 2 pending adjustments, 3 journal, 4 seq, 5 the meter
-- ARGV: 1 adjustment_id, 2 decision ('approved' or 'rejected'), 3 actor, 4 actor certificate,
--       5 note
-- Answers the adjustment record (JSON).
local adjustment_id, decision, actor = ARGV[1], ARGV[2], ARGV[3]
local raw = redis.call('HGET', KEYS[1], adjustment_id)
if not raw then
  refuse('NOT_FOUND', 'adjustment ' .. adjustment_id .. ' does not exist')
end
local a = cjson.decode(raw)
check_version('adjustment ' .. adjustment_id, a.v)
if a.status ~= 'requested' then
  if a.status == decision and a.decided_by == actor then
    return raw
  end
  refuse('DECIDED', 'adjustment ' .. adjustment_id .. ' was already ' .. a.status .. ' by '
    .. a.decided_by .. '; an adjustment is decided once')
end
local amount = tonumber(a.amount_cents)
local d_meter = 0
if decision == 'approved' then
  if actor == a.requested_by then
    refuse('SAME_PERSON', 'adjustment ' .. adjustment_id .. ' was requested by ' .. actor
      .. '; an adjustment needs two people: another operator approves it')
  end
  local m = redis.call('HMGET', KEYS[5], 'value_microcents', 'ceiling_cents', 'v', 'kind')
  if not m[1] then
    refuse('NOT_FOUND', 'meter ' .. a.meter_id .. ' of adjustment ' .. adjustment_id
      .. ' no longer exists (retired); reject the adjustment')
  end
  check_version('meter ' .. a.meter_id, m[3])
  refuse_mystery_raise(a.meter_id, m[4], amount)
  d_meter = amount * MICRO
  local after = num(m[1]) + d_meter
  if after < 0 then
    refuse('ADJUSTMENT', 'adjustment ' .. adjustment_id .. ' of ' .. dollars(amount) .. ' would '
      .. 'take meter ' .. a.meter_id .. ' below zero (it holds '
      .. dollars(math.floor(num(m[1]) / MICRO)) .. ' now)')
  end
  if num(m[2]) > 0 and after > num(m[2]) * MICRO then
    refuse('ADJUSTMENT', 'adjustment ' .. adjustment_id .. ' of ' .. dollars(amount) .. ' would '
      .. 'take meter ' .. a.meter_id .. ' above its ceiling ' .. dollars(num(m[2])))
  end
  check_exact('meter ' .. a.meter_id, after)
  redis.call('HSET', KEYS[5], 'value_microcents', int(after))
  redis.call('HINCRBY', KEYS[5], 'adjustments_microcents_total', int(d_meter))
end
local seq = journal(KEYS[3], KEYS[4], 'adjustment_' .. decision, a.meter_id, d_meter, 0,
  {'adjustment', adjustment_id, 'amount_cents', a.amount_cents, 'reason', a.reason,
   'reference', a.reference, 'requested_by', a.requested_by, 'by', actor, 'by_cert', ARGV[4],
   'note', ARGV[5]})
a.status, a.decided_by, a.decided_by_cert, a.note = decision, actor, ARGV[4], ARGV[5]
a.decided_at_ms, a.decision_seq = now_ms(), int(seq)
raw = cjson.encode(a)
redis.call('HSET', KEYS[1], adjustment_id, raw)
redis.call('SREM', KEYS[2], adjustment_id)
return raw
