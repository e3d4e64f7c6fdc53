-- A supervisor approves or rejects a pending jackpot (§ 639a.11(c)(5)(iii)).
-- Approval records the validation; the amount was taken from the meter at the seat's turn.
-- Rejection undoes the award (journaled): the amount returns to the meter, and a 100% award's
-- reset is taken back out (its reserve part to the reserve, its operator seed back to the
-- operator), so the money stays in the prize pool exactly as before the award. A rejection is refused once a later hit on the same meter was
-- computed from the meter this award had reduced: that winner's amount would be misstated.
-- The reviewer is the caller's certificate identity; the same reviewer repeating the same
-- decision gets the record unchanged; any other review of a decided jackpot is refused.
-- KEYS: 1 jackpots, 2 pending, 3 meter, 4 journal, 5 seq
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
  if jackpot.status == decision and jackpot.reviewed_by == reviewer then
    return raw
  end
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already ' .. jackpot.status .. ' by '
    .. jackpot.reviewed_by .. '; a jackpot is reviewed once')
end
local amount = tonumber(jackpot.amount_cents) * MICRO
local d_meter, d_reserve = 0, 0
if decision == 'rejected' then
  local m = redis.call('HMGET', KEYS[3], 'value_microcents', 'last_hit_seq', 'v')
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
  redis.call('HSET', KEYS[3], 'value_microcents', int(value))
  redis.call('HINCRBY', KEYS[3], 'reserve_microcents', int(from_reserve))
  redis.call('HINCRBY', KEYS[3], 'operator_seed_microcents_total', int(from_reserve - topup))
  redis.call('HINCRBY', KEYS[3], 'awards_cents_total', int(-tonumber(jackpot.amount_cents)))
  redis.call('HINCRBY', KEYS[3], 'hits_total', -1)
end
jackpot.status, jackpot.reviewed_by, jackpot.note = decision, reviewer, note
raw = cjson.encode(jackpot)
redis.call('HSET', KEYS[1], jackpot_id, raw)
redis.call('SREM', KEYS[2], jackpot_id)
redis.call('HINCRBY', KEYS[3], 'pending_jackpots', -1)
journal(KEYS[4], KEYS[5], 'jackpot_' .. decision, jackpot.meter_id, d_meter, d_reserve,
  {'jackpot', jackpot_id, 'amount_cents', jackpot.amount_cents, 'reviewer', reviewer,
   'reviewer_cert', ARGV[5], 'note', note, 'table', jackpot.table_id, 'round', jackpot.round_id})
return raw
