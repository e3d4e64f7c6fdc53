-- Settle: pay a round's progressive wagers in settlement order (seat N down to seat 1).
-- A percentage award is computed from the meter as it stands at that seat's turn, in whole
-- cents rounded down, and taken from the meter at once (§ 639a.12(d)(4)); a 100% award
-- resets the meter to its reset amount, funded from the reserve first, the shortfall
-- recorded as operator seed. Percentage awards become pending jackpots.
-- KEYS: 1 round, 2 meter, 3 journal, 4 seq, 5 jackpots, 6 pending
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint, 4 plan JSON (settlement order)
--       [{seat, hand, folded, award = {kind, meter_ppm, amount_cents, text} or absent}];
--       a fixed award's amount_cents (a decimal string) is final, a percentage is of the meter
--       5 meter_id, 6 round retention seconds, 7 link_group_id
local table_id, round_id, fp, meter_id, link_group_id = ARGV[1], ARGV[2], ARGV[3], ARGV[5], ARGV[7]
local where = 'round ' .. round_id .. ' of table ' .. table_id

local round = redis.call('HMGET', KEYS[1], 'state', 'settle_fp', 'settle_reply', 'wagers')
local state, seen_fp = round[1], round[2]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); a round '
    .. 'is settled only after its lockout')
end
if seen_fp then
  if seen_fp == fp then
    return {round[3], 'replay'}
  end
  refuse('CONFLICT', where .. ' is already settled with other cards; a retry must repeat the '
    .. 'original cards exactly')
end
if state == 'voided' then
  refuse('VOIDED', where .. ' was voided; its wagers were returned and it cannot be settled')
end

local wager_by_seat = {}
for _, w in ipairs(cjson.decode(round[4])) do
  wager_by_seat[tonumber(w.seat)] = w
end
local plan = cjson.decode(ARGV[4])
local reported = {}
for _, p in ipairs(plan) do
  reported[p.seat] = true
end
for seat, _ in pairs(wager_by_seat) do
  if not reported[seat] then
    refuse('MISSING_SEAT', 'seat ' .. seat .. ' holds an accepted progressive wager in '
      .. where .. ' but was not reported; report its cards or mark it folded')
  end
end

local m = redis.call('HMGET', KEYS[2], 'value_microcents', 'reserve_microcents', 'reset_cents')
local value, reserve, reset = num(m[1]), num(m[2]), num(m[3]) * MICRO
local hits, awarded_cents, seeded, pending, last_hit_seq = 0, 0, 0, 0, 0
local results = {}

for i, p in ipairs(plan) do
  local w = wager_by_seat[p.seat]
  local r = {seat = p.seat, hand = p.hand, outcome = 'no_award'}
  local award = p.award
  if not w then
    r.outcome = 'no_wager'
  elseif p.folded then
    r.outcome = 'forfeited'
  elseif award then
    r.outcome, r.award_kind, r.award_text, r.meter_id = 'paid', award.kind, award.text, meter_id
    local common = {'table', table_id, 'round', round_id, 'seat', p.seat, 'hand', p.hand,
      'award', award.text}
    if award.kind == 'percent_of_meter' then
      local before = math.floor(value / MICRO)
      -- floor(before * ppm / 10^6), split so that no product leaves the exact range
      local amount = math.floor(before / MICRO) * award.meter_ppm
        + math.floor((before % MICRO) * award.meter_ppm / MICRO)
      value = value - amount * MICRO
      local seq = journal(KEYS[3], KEYS[4], 'award', meter_id, -amount * MICRO, 0,
        {'amount_cents', int(amount), 'meter_before_cents', int(before),
         'meter_after_cents', int(math.floor(value / MICRO)), unpack(common)})
      local topup, from_reserve = 0, 0
      if award.meter_ppm == MICRO then
        topup = reset - value
        from_reserve = math.min(reserve, topup)
        reserve = reserve - from_reserve
        value = reset
        seeded = seeded + (topup - from_reserve)
        journal(KEYS[3], KEYS[4], 'reset', meter_id, topup, -from_reserve,
          {'operator_seed_microcents', int(topup - from_reserve), 'reset_cents',
           int(reset / MICRO), 'table', table_id, 'round', round_id})
      end
      local jackpot_id = link_group_id .. ':' .. seq
      r.amount_cents, r.meter_before_cents = int(amount), int(before)
      r.meter_after_cents = int(math.floor(value / MICRO))
      r.pending_validation, r.jackpot_id, r.journal_seq = true, jackpot_id, seq
      redis.call('HSET', KEYS[5], jackpot_id, cjson.encode({jackpot_id = jackpot_id,
        link_group_id = link_group_id, meter_id = meter_id, table_id = table_id,
        round_id = round_id, seat = p.seat, hand = p.hand, award_text = award.text,
        amount_cents = int(amount), meter_before_cents = int(before),
        meter_after_cents = r.meter_after_cents, status = 'pending', journal_seq = seq,
        reset_topup_microcents = int(topup), reset_from_reserve_microcents = int(from_reserve)}))
      redis.call('SADD', KEYS[6], jackpot_id)
      hits, awarded_cents, pending = hits + 1, awarded_cents + amount, pending + 1
      last_hit_seq = seq
    else
      local amount = tonumber(award.amount_cents)  -- fixed odds: computed by the controller
      r.amount_cents = int(amount)
      r.journal_seq = journal(KEYS[3], KEYS[4], 'fixed_award', meter_id, 0, 0,
        {'amount_cents', int(amount), unpack(common)})
    end
  end
  results[i] = r
end

redis.call('HSET', KEYS[2], 'value_microcents', int(value), 'reserve_microcents', int(reserve))
if hits > 0 then
  redis.call('HINCRBY', KEYS[2], 'hits_total', int(hits))
  redis.call('HINCRBY', KEYS[2], 'awards_cents_total', int(awarded_cents))
  redis.call('HINCRBY', KEYS[2], 'pending_jackpots', int(pending))
  redis.call('HINCRBY', KEYS[2], 'operator_seed_microcents_total', int(seeded))
  redis.call('HSET', KEYS[2], 'last_hit_seq', last_hit_seq)
end
local reply = cjson.encode({table_id = table_id, round_id = round_id, results = results,
  meters = {meter_value(meter_id, value)}})
redis.call('HSET', KEYS[1], 'state', 'settled', 'settle_fp', fp, 'settle_reply', reply)
redis.call('EXPIRE', KEYS[1], ARGV[6])
return {reply, 'new'}
