-- A supervisor approves or rejects a pending jackpot (§ 639a.11(c)(5)(iii)): pending ->
-- approved, or pending -> rejected with its reason (the note; the servicer requires one).
-- Approval records the validation; a percentage award's amount was taken from the meter at
-- the seat's turn, and a fixed award's never touches a meter.
-- Rejection undoes a percentage award (journaled): the amount returns to the meter, and a 100%
-- award's reset is taken back out (its reserve part to the reserve, its operator seed back to
-- the operator), so the money stays in the prize pool exactly as before the award. A rejection
-- is refused once a later hit on the same meter was computed from the meter this award had
-- reduced: that winner's amount would be misstated. Rejecting a fixed award moves no money.
-- Rejecting a must-hit-by hit returns its amount to the meter's reserve (docs/mystery.md).
-- The reviewer is the caller's certificate identity; the time is Redis's clock (ms). The same
-- reviewer repeating the same decision gets the record unchanged (also once it is paid); any
-- other review of a decided jackpot is refused.
-- KEYS: 1 jackpots, 2 pending, 3 journal, 4 seq, 5 the meter (a percentage award's only)
-- ARGV: 1 jackpot_id, 2 decision ('approved' or 'rejected'), 3 reviewer identity, 4 note,
--       5 reviewer certificate fingerprint
local jackpot_id, decision, reviewer, note = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local raw = redis.call('HGET', KEYS[1], jackpot_id)
if not raw then
  refuse('NOT_FOUND', 'jackpot ' .. jackpot_id .. ' does not exist')
end
local jackpot = cjson.decode(raw)
check_version('jackpot ' .. jackpot_id, jackpot.v)
if jackpot.status ~= 'pending' then
  local decided = jackpot.status == 'paid' and 'approved' or jackpot.status
  if decided == decision and jackpot.reviewed_by == reviewer then
    return raw
  end
  local paid = ''
  if jackpot.status == 'paid' then
    paid = ' and paid by ' .. jackpot.paid_by
  end
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already ' .. decided .. ' by '
    .. jackpot.reviewed_by .. paid .. '; a jackpot is reviewed once')
end
local on_meter = jackpot.meter_id ~= ''
local amount = tonumber(jackpot.amount_cents) * MICRO
local d_meter, d_reserve = 0, 0
local mystery = jackpot.award_kind == 'must_hit_by'
if decision == 'rejected' and on_meter and mystery then
  -- a must-hit-by hit: the meter has started its next cycle under a committed hit point, so
  -- the amount returns to the meter's reserve (the prize pool that funds its resets)
  check_version('meter ' .. jackpot.meter_id, redis.call('HGET', KEYS[5], 'v'))
  d_reserve = amount
  redis.call('HINCRBY', KEYS[5], 'reserve_microcents', int(amount))
  redis.call('HINCRBY', KEYS[5], 'awards_cents_total', int(-tonumber(jackpot.amount_cents)))
  redis.call('HINCRBY', KEYS[5], 'hits_total', -1)
elseif decision == 'rejected' and on_meter then
  local m = redis.call('HMGET', KEYS[5], 'value_microcents', 'last_hit_seq', 'v')
  check_version('meter ' .. jackpot.meter_id, m[3])
  if num(m[2]) > tonumber(jackpot.journal_seq) then
    refuse('LATER_HIT', 'jackpot ' .. jackpot_id .. ' cannot be rejected: a later hit on meter '
      .. jackpot.meter_id .. ' (journal #' .. m[2] .. ') was paid from the meter this award had '
      .. 'reduced; approve it and correct the meter by an audited adjustment')
  end
  local topup = tonumber(jackpot.reset_topup_microcents or '0')
  local from_reserve = tonumber(jackpot.reset_from_reserve_microcents or '0')
  d_meter = amount - topup
  d_reserve = from_reserve
  local value = num(m[1]) + d_meter
  check_exact('meter ' .. jackpot.meter_id, value)
  redis.call('HSET', KEYS[5], 'value_microcents', int(value))
  redis.call('HINCRBY', KEYS[5], 'reserve_microcents', int(from_reserve))
  redis.call('HINCRBY', KEYS[5], 'operator_seed_microcents_total', int(from_reserve - topup))
  redis.call('HINCRBY', KEYS[5], 'awards_cents_total', int(-tonumber(jackpot.amount_cents)))
  redis.call('HINCRBY', KEYS[5], 'hits_total', -1)
end
jackpot.status, jackpot.reviewed_by, jackpot.note = decision, reviewer, note
jackpot.reviewed_by_cert = ARGV[5]
jackpot.reviewed_at_ms = int(clock_ms())
raw = cjson.encode(jackpot)
redis.call('HSET', KEYS[1], jackpot_id, raw)
redis.call('SREM', KEYS[2], jackpot_id)
if on_meter then
  redis.call('HINCRBY', KEYS[5], 'pending_jackpots', -1)
end
journal(KEYS[3], KEYS[4], 'jackpot_' .. decision, jackpot.meter_id, d_meter, d_reserve,
  {'jackpot', jackpot_id, 'amount_cents', jackpot.amount_cents, 'reviewer', reviewer,
   'reviewer_cert', ARGV[5], 'note', note, 'table', jackpot.table_id, 'round', jackpot.round_id})
return raw
