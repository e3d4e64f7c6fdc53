-- Void a locked, unsettled round: every contribution it made leaves its meter and reserve.
-- If a reserve has since been spent (a reset drew on it), the part it cannot give back is
-- taken from the meter. If a hit on a meter since this round's lockout paid the
-- contribution out, that meter is not taken below its reset amount (the Rules Submission's
-- floor, § 639a.12(d)(3)): that part was paid to a winner, so the operator funds it,
-- journaled as operator seed; so too when this very contribution hit a must-hit-by meter
-- (lockout.lua). Without such a hit the whole contribution leaves the meter.
-- A round whose own lockout won must-hit-by jackpots (docs/mystery.md, "Void of a round that
-- hit") is voided only by a supervisor ({by = 'supervisor'} without a held chip count), and
-- the void reverses those hits: each pending jackpot becomes 'voided' (its slip says by whom,
-- why and at which journal entry), its amount returns to the meter's reserve (as a
-- rejection's does), journaled as 'jackpot_voided'; an approved or paid one refuses the void.
-- A table's void of such a round is refused (MYSTERY_HIT) and changes nothing, so a table
-- that reads the lockout's answer gains nothing by voiding the round that won.
-- A round held by a chip count that differed ('irregular', report_chip_count.lua) is voided
-- only by a supervisor's resolution. ARGV[9], when not empty, is why the round is voided:
-- {by = 'table', kind, effect, section} a seeded irregularity the table reported (journaled
-- and counted before the void, kept in the irregularities hash), or {by = 'supervisor',
-- supervisor, supervisor_cert, note, link_group_id} the resolution of the held round.
-- KEYS: 1 round, 2 journal, 3 seq, 4 epoch, 5 counters, 6 open rounds, 7 irregularities,
--       8.. the table's meters, then jackpots, pending jackpots
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint, 4 reason, 5 meter ids JSON, 6 retention seconds,
--       7, 8 the table's last acknowledged journal position (epoch id, seq),
--       9 the irregularity JSON or ''
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, fp, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local epoch = check_epoch(KEYS[4], KEYS[2], KEYS[3], 'table ' .. table_id, ARGV[7], ARGV[8])
local where = 'round ' .. round_id .. ' of table ' .. table_id

local round = redis.call('HMGET', KEYS[1], 'state', 'void_fp', 'void_reply', 'wagers',
  'lockout_seq', 'v')
local state, seen_fp = round[1], round[2]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); only a '
    .. 'locked-out round can be voided')
end
check_version(where, round[6])
if seen_fp then
  if seen_fp == fp then
    return {round[3], 'replay', epoch, redis.call('GET', KEYS[3]) or '0'}
  end
  refuse('CONFLICT', where .. ' is already voided for another reason')
end
if state == 'settled' then
  refuse('SETTLED', where .. ' is already settled; a settled round cannot be voided')
end
local why = ARGV[9] ~= '' and cjson.decode(ARGV[9]) or {by = 'table'}
local held_id = table_id .. ':' .. round_id .. ':chip_count'
local held
local wagers = cjson.decode(round[4])
local won = {}  -- the must-hit-by jackpots this round's lockout won
for _, w in ipairs(wagers) do
  for _, c in ipairs(w.contributions) do
    if c.mystery_hits then
      for _, id in ipairs(c.mystery_jackpots or {}) do
        won[#won + 1] = id
      end
      if #(c.mystery_jackpots or {}) == 0 then
        refuse('MYSTERY_HIT', where .. ' won a must-hit-by jackpot at its lockout that an '
          .. 'earlier release did not name, so no void can reverse it; settle the round')
      end
    end
  end
end
if #won > 0 and why.by ~= 'supervisor' then
  refuse('MYSTERY_HIT', where .. ' won must-hit-by jackpot(s) ' .. table.concat(won, ', ')
    .. ' at its lockout; only a supervisor voids it (ResolveIrregularity, decision void), '
    .. 'which reverses those hits; nothing was changed')
end
if why.by == 'supervisor' and state ~= 'irregular' and #won > 0 then
  why.mystery = true  -- a supervisor voids a round that hit (no chip count held it)
elseif why.by == 'supervisor' then
  if state ~= 'irregular' then
    refuse('NOT_IRREGULAR', where .. ' is ' .. state .. ', not held for a supervisor; there is '
      .. 'nothing to resolve')
  end
  held = cjson.decode(redis.call('HGET', KEYS[7], held_id))
elseif state == 'irregular' then
  refuse('IRREGULAR', where .. ' is held: the dealer\'s chip count differed from the '
    .. 'Progressive Payout Wagers accepted (§ 639a.8(b)); call a supervisor to confirm or '
    .. 'void the round')
end

local meter_ids = cjson.decode(ARGV[5])
local meters = load_meters(KEYS, 8, meter_ids)
local jackpots_key, pending_key = KEYS[8 + #meter_ids], KEYS[9 + #meter_ids]
local lockout_seq = num(round[5])
local now_ms = int(clock_ms())
local reversed_hits = {}
for _, id in ipairs(won) do
  local raw = redis.call('HGET', jackpots_key, id)
  local j = raw and cjson.decode(raw)
  if j and j.status == 'pending' then
    if not meters.by_id[j.meter_id] then
      refuse('NOT_FOUND', 'meter ' .. j.meter_id .. ' of jackpot ' .. id .. ' is not fed by '
        .. 'table ' .. table_id .. ' any more; reject the jackpot, then void the round')
    end
    reversed_hits[#reversed_hits + 1] = j
  elseif j and j.status ~= 'rejected' then
    refuse('DECIDED', 'must-hit-by jackpot ' .. id .. ' of ' .. where .. ' was already '
      .. j.status .. '; a void cannot reverse it (reject it first if it was not paid)')
  end
end
if why.mystery then
  local seq = journal(KEYS[2], KEYS[3], 'irregularity', '', 0, 0,
    {'table', table_id, 'round', round_id, 'kind', 'mystery_hit', 'effect', 'void',
     'supervisor', why.supervisor, 'supervisor_cert', why.supervisor_cert, 'note', why.note,
     'reason', reason})
  redis.call('HSET', KEYS[7], table_id .. ':' .. round_id .. ':mystery_hit', cjson.encode({
    v = SCHEMA_VERSION, link_group_id = why.link_group_id, table_id = table_id,
    round_id = round_id, kind = 'mystery_hit', effect = 'void',
    section = 'a void of a round that won a must-hit-by jackpot (docs/mystery.md)',
    status = 'voided', journal_seq = int(seq), reported_at_ms = now_ms,
    resolved_by = why.supervisor, resolved_by_cert = why.supervisor_cert, note = why.note,
    resolved_at_ms = now_ms, resolved_seq = int(seq)}))
  count(KEYS[5], {'irregularities', 'mystery_hit'}, 1)
end
for _, j in ipairs(reversed_hits) do  -- each hit reversed: its amount to the meter's reserve
  local m = meters.by_id[j.meter_id]
  local amount = tonumber(j.amount_cents)
  m.reserve = m.reserve + amount * MICRO
  local seq = journal(KEYS[2], KEYS[3], 'jackpot_voided', m.id, 0, amount * MICRO,
    {'jackpot', j.jackpot_id, 'amount_cents', int(amount), 'reviewer', why.supervisor,
     'reviewer_cert', why.supervisor_cert, 'note', why.note, 'table', table_id, 'round',
     round_id, 'reason', reason})
  j.status, j.reviewed_by, j.reviewed_by_cert = 'voided', why.supervisor, why.supervisor_cert
  j.note, j.reviewed_at_ms = why.note, now_ms
  j.void_reason, j.voided_seq = reason, int(seq)
  redis.call('HSET', jackpots_key, j.jackpot_id, cjson.encode(j))
  redis.call('SREM', pending_key, j.jackpot_id)
  redis.call('HSET', m.key, 'reserve_microcents', int(m.reserve))
  redis.call('HINCRBY', m.key, 'pending_jackpots', -1)
  redis.call('HINCRBY', m.key, 'hits_total', -1)
  redis.call('HINCRBY', m.key, 'awards_cents_total', -amount)
  count(KEYS[5], {'voided_mystery_hits', m.id}, 1)
end
if held then
  local seq = journal(KEYS[2], KEYS[3], 'irregularity_resolved', '', 0, 0,
    {'table', table_id, 'round', round_id, 'kind', 'chip_count', 'decision', 'void',
     'supervisor', why.supervisor, 'supervisor_cert', why.supervisor_cert, 'note', why.note})
  held.status, held.resolved_by, held.resolved_by_cert = 'voided', why.supervisor,
    why.supervisor_cert
  held.note, held.resolved_at_ms, held.resolved_seq = why.note, now_ms, int(seq)
  redis.call('HSET', KEYS[7], held_id, cjson.encode(held))
elseif why.kind then
  local seq = journal(KEYS[2], KEYS[3], 'irregularity', '', 0, 0,
    {'table', table_id, 'round', round_id, 'kind', why.kind, 'effect', why.effect, 'section',
     why.section, 'reason', reason})
  redis.call('HSET', KEYS[7], table_id .. ':' .. round_id .. ':' .. why.kind, cjson.encode({
    v = SCHEMA_VERSION, link_group_id = why.link_group_id, table_id = table_id,
    round_id = round_id, kind = why.kind, effect = why.effect, section = why.section,
    status = 'applied', journal_seq = int(seq), reported_at_ms = now_ms}))
  count(KEYS[5], {'irregularities', why.kind}, 1)
end
local reversed = {}
for i, w in ipairs(wagers) do
  local back = {}
  for j, c in ipairs(w.contributions) do
    local m = meters.by_id[c.meter_id]
    local from_meter = tonumber(c.to_meter_microcents)
    local from_reserve = tonumber(c.to_reserve_microcents)
    if from_reserve > m.reserve then
      from_meter = from_meter + (from_reserve - m.reserve)
      from_reserve = m.reserve
    end
    local operator_funded = 0
    if m.last_hit_seq > lockout_seq or c.mystery_hits then  -- paid out since (or by) it
      operator_funded = math.max(0, from_meter - math.max(0, m.value - m.reset))
    end
    from_meter = from_meter - operator_funded
    m.value, m.reserve = m.value - from_meter, m.reserve - from_reserve
    m.wagers = m.wagers + 1
    m.total = m.total + from_meter + from_reserve + operator_funded
    m.funded = (m.funded or 0) + operator_funded
    m.reversed = (m.reversed or 0) + from_meter + from_reserve
    journal(KEYS[2], KEYS[3], 'void', m.id, -from_meter, -from_reserve,
      {'table', table_id, 'round', round_id, 'seat', w.seat, 'wager', w.kind,
       'amount_cents', w.amount_cents, 'operator_seed_microcents', int(operator_funded),
       'reason', reason})
    back[j] = {meter_id = m.id, to_meter_microcents = int(from_meter),
      to_reserve_microcents = int(from_reserve)}
  end
  reversed[i] = {seat = w.seat, kind = w.kind, amount_cents = w.amount_cents,
    on_dealer_hand = w.on_dealer_hand, envy = w.envy, contributions = back}
end
count(KEYS[5], {'void_wagers', table_id}, #reversed)
journal(KEYS[2], KEYS[3], 'round_voided', '', 0, 0,
  {'table', table_id, 'round', round_id, 'wagers', int(#reversed), 'reason', reason})
for _, m in ipairs(meters.list) do
  if m.wagers > 0 then
    redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
      int(m.reserve))
    redis.call('HINCRBY', m.key, 'wagers_total', int(-m.wagers))
    redis.call('HINCRBY', m.key, 'contributions_microcents_total', int(-m.total))
    redis.call('HINCRBY', m.key, 'operator_seed_microcents_total', int(m.funded))
    count(KEYS[5], {'voids', m.id}, m.wagers)
    count(KEYS[5], {'void_contributions_microcents', m.id}, m.reversed)
  end
end
local reply = cjson.encode({table_id = table_id, round_id = round_id, reversed = reversed,
  meters = meter_values(meters)})
redis.call('HSET', KEYS[1], 'state', 'voided', 'void_fp', fp, 'void_reply', reply)
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('SREM', KEYS[6], table_id .. ':' .. round_id)
return {reply, 'new', epoch, redis.call('GET', KEYS[3]) or '0'}
