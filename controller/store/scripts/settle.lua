-- Settle: pay a round's plan in settlement order (seat N down to seat 1, each seat's wagers
-- in its game's order, then the envy bonuses; at Six-Card Fortune each wager at every seat,
-- then its envy bonuses, before the next wager, § 670a.11(h)). The controller has evaluated every hand and
-- computed every fixed award; a percentage award is computed here from its meter as it
-- stands at that wager's turn, in whole cents rounded down, and taken from the meter at once
-- (§ 639a.12(d)(4)); a 100% award resets the meter to its reset amount, funded from the
-- reserve first, the shortfall recorded as operator seed. Percentage awards, and fixed awards
-- the plan marks pending_validation (above the table's validation threshold), become pending
-- jackpots holding their hand-pay slip (the wager, hand, cards, amount, meter before and after,
-- journal seq, and the hit's time in ms from Redis's clock); a fixed one changes no meter.
-- A change staged for a meter's next hit or reset (docs/staged-changes.md) is applied (or
-- dropped, journaled with why) by the award that hits it, before its reset: the meter resets
-- to the new reset amount; only that branch reads the staged change. So are the table changes
-- staged for that hit (_staged_tables.lua): this round was priced with the old definition.
-- KEYS: 1 round, 2 journal, 3 seq, 4 jackpots, 5 pending, 6 epoch, 7 counters,
--       8 open rounds, 9.. the table's meters
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint,
--       4 plan JSON [{seat, kind, on_dealer_hand, hand, line, outcome, envy_for_seat,
--         limited_from_cents, cards, wager_cents, pending_validation, ...,
--         award = {kind, meter_ppm, amount_cents, text, meter_id}}]
--         (Payout's fields by name, its amount in the award: copied into the result),
--         a fixed award's amount_cents (a decimal string) is final,
--       5 meter ids JSON (KEYS[6..]'s order), 6 round retention seconds, 7 link_group_id,
--       8 the lockout fingerprint the plan was made against,
--       9, 10 the table's last acknowledged journal position (epoch id, seq),
--       11 '1' if the settlement carries rest_of_round_void (then it claims no base game win)
-- A round for which report_irregularity.lua recorded "bonus_settles" (its rest_void field,
-- § 647a.13(a), (d)) is settled only with rest_of_round_void: only its bonus wagers settle.
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, fp, link_group_id = ARGV[1], ARGV[2], ARGV[3], ARGV[7]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local epoch = check_epoch(KEYS[6], KEYS[2], KEYS[3], 'table ' .. table_id, ARGV[9], ARGV[10])

local round = redis.call('HMGET', KEYS[1], 'state', 'settle_fp', 'settle_reply', 'lockout_fp',
  'v', 'rest_void')
local state, seen_fp = round[1], round[2]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); a round '
    .. 'is settled only after its lockout')
end
check_version(where, round[5])
if seen_fp then
  if seen_fp == fp then
    return {round[3], 'replay', epoch, redis.call('GET', KEYS[3]) or '0'}
  end
  refuse('CONFLICT', where .. ' is already settled with other cards; a retry must repeat the '
    .. 'original cards exactly')
end
if state == 'voided' then
  refuse('VOIDED', where .. ' was voided; its wagers were returned and it cannot be settled')
end
if state == 'irregular' then
  refuse('IRREGULAR', where .. ' is held: the dealer\'s chip count differed from the '
    .. 'Progressive Payout Wagers accepted (§ 639a.8(b)); call a supervisor to confirm or '
    .. 'void the round before it is settled')
end
if round[6] and ARGV[11] ~= '1' then
  refuse('REST_VOID', where .. ': the dealer reported ' .. round[6] .. '; settle only its '
    .. 'Texas Hold \'Em Bonus Wagers, with rest_of_round_void set to that reason and no base '
    .. 'game win')
end
if round[4] ~= ARGV[8] then
  refuse('CONFLICT', where .. ' changed while it was being settled; retry the request')
end

local meters = load_meters(KEYS, 9, cjson.decode(ARGV[5]))
local plan = cjson.decode(ARGV[4])
for _, p in ipairs(plan) do  -- every fixed amount is exact before the first write
  if p.award then
    check_exact('the award to seat ' .. p.seat, tonumber(p.award.amount_cents))
  end
end
local touched = {}
local results = {}
local hit_at_ms  -- Redis's clock, read at the first jackpot held (most rounds hold none)

-- Hold an award for validation: its jackpot record (the slip) and its place in the pending set.
local function hold(r, p, award, seq, fields)
  local jackpot_id = link_group_id .. ':' .. seq
  hit_at_ms = hit_at_ms or clock_ms()
  local record = {v = SCHEMA_VERSION, jackpot_id = jackpot_id, link_group_id = link_group_id,
    meter_id = '', table_id = table_id, round_id = round_id, seat = p.seat, hand = p.hand,
    wager = p.kind, wager_cents = int(p.wager_cents), on_dealer_hand = p.on_dealer_hand,
    envy_for_seat = p.envy_for_seat, cards = p.cards, line = p.line, award_kind = award.kind,
    award_text = award.text, amount_cents = r.amount_cents, meter_before_cents = '0',
    meter_after_cents = '0', status = 'pending', journal_seq = seq, hit_at_ms = int(hit_at_ms),
    player_token = p.player_token}  -- nil (absent) without one
  for name, value in pairs(fields) do record[name] = value end
  redis.call('HSET', KEYS[4], jackpot_id, cjson.encode(record))
  redis.call('SADD', KEYS[5], jackpot_id)
  r.pending_validation, r.jackpot_id, r.journal_seq = true, jackpot_id, seq
end

-- The plan's fields that a SeatResult has (jackpot/results.py) besides seat, hand and outcome,
-- with their defaults: the answer holds one only when it differs (the decoder gives a missing
-- field its default), a smaller answer to send and to keep for retries. The plan's cards and
-- wager_cents are the slip's (hold), not the answer's.
local RESULT_DEFAULTS = {kind = '', on_dealer_hand = false, envy_for_seat = 0,
  limited_from_cents = 0, line = '', pending_validation = false}

for i, p in ipairs(plan) do
  -- the result's keys are SeatResult's field names: the plan's, then what is computed here
  local r = {seat = p.seat, hand = p.hand, outcome = p.outcome}
  for name, default in pairs(RESULT_DEFAULTS) do
    local value = p[name]
    if value ~= nil and value ~= default then r[name] = value end
  end
  local award = p.award
  if p.outcome == 'paid' then
    r.award_kind, r.award_text = award.kind, award.text
    count(KEYS[7], {'awards', p.kind, award.kind}, 1)
    local common = {'table', table_id, 'round', round_id, 'seat', p.seat, 'wager', p.kind,
      'on_dealer', tostring(p.on_dealer_hand), 'hand', p.hand, 'line', p.line, 'award', award.text}
    if p.player_token then  -- the seat's player token (docs/staged-changes.md)
      common[#common + 1] = 'player'
      common[#common + 1] = p.player_token
    end
    if award.kind == 'percent_of_meter' then
      local m = meters.by_id[award.meter_id]
      local before = math.floor(m.value / MICRO)
      -- floor(before * ppm / 10^6), split so that no product leaves the exact range
      local amount = math.floor(before / MICRO) * award.meter_ppm
        + math.floor((before % MICRO) * award.meter_ppm / MICRO)
      m.value = m.value - amount * MICRO
      local seq = journal(KEYS[2], KEYS[3], 'award', m.id, -amount * MICRO, 0,
        {'amount_cents', int(amount), 'meter_before_cents', int(before),
         'meter_after_cents', int(math.floor(m.value / MICRO)), unpack(common)})
      -- a change staged for this meter's next hit or reset (_lib.lua): read only here
      local staged = staged_check(m, award.meter_ppm == MICRO and 'reset' or 'hit')
      local topup, from_reserve = 0, 0
      if award.meter_ppm == MICRO then
        topup = m.reset - m.value
        from_reserve = math.min(m.reserve, topup)
        m.reserve = m.reserve - from_reserve
        m.value = m.reset
        m.seeded = (m.seeded or 0) + (topup - from_reserve)
        journal(KEYS[2], KEYS[3], 'reset', m.id, topup, -from_reserve,
          {'operator_seed_microcents', int(topup - from_reserve), 'reset_cents',
           int(m.reset / MICRO), 'table', table_id, 'round', round_id})
      end
      if staged then
        staged_write(KEYS[2], KEYS[3], staged, {'table', table_id, 'round', round_id,
          'hit_seq', int(seq)})
      end
      -- table changes staged for this meter's next hit or reset (_staged_tables.lua)
      staged_tables_apply(m, award.meter_ppm == MICRO and 'reset' or 'hit', KEYS[2], KEYS[3],
        KEYS[8], table_id .. ':' .. round_id,
        {'round', round_id, 'hit_table', table_id, 'hit_seq', int(seq)})
      r.amount_cents, r.meter_id, r.meter_before_cents = int(amount), m.id, int(before)
      r.meter_after_cents = int(math.floor(m.value / MICRO))
      hold(r, p, award, seq, {meter_id = m.id, meter_before_cents = r.meter_before_cents,
        meter_after_cents = r.meter_after_cents, reset_topup_microcents = int(topup),
        reset_from_reserve_microcents = int(from_reserve)})
      m.hits, m.awarded = (m.hits or 0) + 1, (m.awarded or 0) + amount
      count(KEYS[7], {'hits', m.id, p.line}, 1)
      count(KEYS[7], {'meter_awards_cents', m.id}, amount)
      count(KEYS[7], {'awards_cents', p.kind, award.kind}, amount)
      m.last_hit = seq
      touched[m.id] = m
    else
      local amount = tonumber(award.amount_cents)  -- fixed: computed by the controller
      r.amount_cents = int(amount)
      count(KEYS[7], {'awards_cents', p.kind, award.kind}, amount)
      local fields = {'amount_cents', int(amount), unpack(common)}
      if p.envy_for_seat > 0 then
        fields[#fields + 1] = 'envy_for_seat'
        fields[#fields + 1] = p.envy_for_seat
      end
      if p.limited_from_cents > 0 then  -- cut by the payout limit per hand (§ 647a.12(c))
        fields[#fields + 1] = 'limited_from_cents'
        fields[#fields + 1] = int(p.limited_from_cents)
      end
      r.journal_seq = journal(KEYS[2], KEYS[3], 'fixed_award', '', 0, 0, fields)
      if p.pending_validation then  -- above the validation threshold: no meter changes
        hold(r, p, award, r.journal_seq, {})
      end
    end
  end
  results[i] = r
end

for id, m in pairs(touched) do
  redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
    int(m.reserve), 'last_hit_seq', m.last_hit)
  redis.call('HINCRBY', m.key, 'hits_total', int(m.hits))
  redis.call('HINCRBY', m.key, 'awards_cents_total', int(m.awarded))
  redis.call('HINCRBY', m.key, 'pending_jackpots', int(m.hits))
  redis.call('HINCRBY', m.key, 'operator_seed_microcents_total', int(m.seeded or 0))
end
local reply = cjson.encode({table_id = table_id, round_id = round_id, results = results,
  meters = meter_values(meters)})
redis.call('HSET', KEYS[1], 'state', 'settled', 'settle_fp', fp, 'settle_reply', reply)
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('SREM', KEYS[8], table_id .. ':' .. round_id)
return {reply, 'new', epoch, redis.call('GET', KEYS[3]) or '0'}
