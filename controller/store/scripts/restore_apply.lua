-- A second operator approves one requested correction (restore_request.lua) and it is applied
-- in one atomic step: what a table was answered before a restore, with the amounts it was
-- answered, never recomputed (docs/journal.md, "Reconciling tables after a restore").
-- Corrections are applied in the order the lost journal had them (every step of a lower
-- sequence number first), so that each meter moves as it did:
--   lockout: each contribution added to its meter and reserve (journaled 'contribution'), the
--            round recorded locked out, the table's last round moved on;
--   settle:  each award journaled as answered ('award' taking its amount from the meter, and
--            the meter's 'reset' after a 100% award, funded from the reserve first; or a
--            'fixed_award'), each award that needed validation held as a pending jackpot under
--            the id the table was answered; the round recorded settled with the answer, so it
--            is never settled again;
--   void:    each contribution taken back out ('void'), the round recorded voided.
-- Every entry carries 'corrects' (the lost position, epoch:seq: the step's, an award's own
-- entry) after a 'correction' entry naming who requested and who approved it.
-- A settlement or void of a round the restored state holds for a supervisor (a chip count
-- that differed) proves the lost resolution: the irregularity is journaled resolved by the
-- correction ('irregularity_resolved', confirm or void, by the approver).
-- KEYS: 1 epoch, 2 journal, 3 seq, 4 restore steps, 5 the step's round, 6 the table,
--       7 open rounds, 8 jackpots, 9 pending, 10 restore queue, 11 irregularities,
--       12.. the step's meters (ARGV[5]'s order)
-- ARGV: 1 link_group_id, 2 step id, 3 approver, 4 approver certificate, 5 meter ids JSON,
--       6 round retention seconds
-- Answers the step's record (JSON).
local link_group_id, step_id, approver = ARGV[1], ARGV[2], ARGV[3]
local raw = redis.call('HGET', KEYS[4], step_id)
if not raw then
  refuse('NOT_FOUND', 'link group ' .. link_group_id .. ' has no step ' .. step_id .. ' to '
    .. 'reconcile')
end
local s = cjson.decode(raw)
if s.status == 'applied' then
  if s.approved_by == approver then
    return raw  -- a retry
  end
  refuse('DECIDED', 'step ' .. step_id .. ' was applied at #' .. int(s.applied_seq) .. ' by '
    .. s.approved_by)
end
if s.status ~= 'requested' then
  refuse('PENDING', 'step ' .. step_id .. ' is not requested yet: a first operator requests it '
    .. '(jackpotctl restore request), a second one approves it')
end
if s.requested_by == approver then
  refuse('SAME_PERSON', 'step ' .. step_id .. ' was requested by ' .. approver .. ': a '
    .. 'correction is approved by a second, different operator')
end
if s.note and s.note ~= '' then
  refuse('INVALID', 'step ' .. step_id .. ' cannot be applied as a correction: ' .. s.note)
end
local first = redis.call('ZRANGE', KEYS[10], 0, 0, 'WITHSCORES')
if first[1] ~= step_id then
  refuse('PENDING', 'step ' .. tostring(first[1]) .. ' (#' .. tostring(first[2]) .. ') comes '
    .. 'before step ' .. step_id .. ' (#' .. int(s.seq) .. ') in the lost journal: apply it '
    .. 'first')
end
local meters = load_meters(KEYS, 12, cjson.decode(ARGV[5]))
local function meter(id)
  local m = meters.by_id[id]
  if not m then
    refuse('INVALID', 'step ' .. step_id .. ' moves meter ' .. tostring(id) .. ', not one given')
  end
  return m
end
local round = redis.call('HMGET', KEYS[5], 'state', 'lockout_fp')
local where = 'round ' .. tostring(s.round_id) .. ' of table ' .. s.table_id
local corrects = s.epoch .. ':' .. int(s.seq)
local jackpot_ids = {}

-- Check everything before the first write.
if s.phase == 'lockout' then
  if round[2] then
    refuse('CONFLICT', where .. ' is already locked out in the restored state')
  end
  for _, c in ipairs(s.moves) do
    local m = meter(c.meter_id)
    m.value, m.reserve = m.value + tonumber(c.to_meter), m.reserve + tonumber(c.to_reserve)
    check_exact('meter ' .. m.id, m.value)
    check_exact('the reserve of meter ' .. m.id, m.reserve)
  end
else
  if round[1] ~= 'locked' and round[1] ~= 'irregular' then
    refuse('CONFLICT', where .. ' is ' .. tostring(round[1] or 'not locked out') .. ' in the '
      .. 'restored state: its ' .. s.phase .. ' cannot be applied')
  end
  if s.phase == 'void' then
    for _, c in ipairs(s.moves) do
      local m = meter(c.meter_id)
      m.value, m.reserve = m.value - tonumber(c.to_meter), m.reserve - tonumber(c.to_reserve)
      if m.value < 0 or m.reserve < 0 then
        refuse('ADJUSTMENT', 'the void of ' .. where .. ' would take meter ' .. m.id .. ' below '
          .. 'zero: a step it followed is missing (an adjustment lost with Redis?)')
      end
    end
  else
    for _, a in ipairs(s.awards) do
      if a.pending_validation then
        if a.jackpot_id == '' or redis.call('HEXISTS', KEYS[8], a.jackpot_id) == 1
            or jackpot_ids[a.jackpot_id] then
          refuse('EXISTS', 'jackpot id ' .. tostring(a.jackpot_id) .. ' of ' .. where .. ' already '
            .. 'names a jackpot (or none was answered): an id never names two things')
        end
        jackpot_ids[a.jackpot_id] = true
      end
      if a.award_kind == 'percent_of_meter' then
        local m = meter(a.meter_id)
        local amount = tonumber(a.amount_cents)
        a.before = math.floor(m.value / MICRO)  -- the meter as it stands here, as settle.lua
        m.value = m.value - amount * MICRO
        a.after = math.floor(m.value / MICRO)
        if m.value < 0 then
          refuse('ADJUSTMENT', 'the award of ' .. dollars(amount) .. ' to seat ' .. a.seat
            .. ' of ' .. where .. ' would take meter ' .. m.id .. ' below zero: a step it '
            .. 'followed is missing (an adjustment lost with Redis?)')
        end
        if amount == tonumber(a.meter_before_cents) and amount > 0 then  -- 100%: it reset
          local topup = math.max(m.reset - m.value, 0)
          local from_reserve = math.min(m.reserve, topup)
          a.topup, a.from_reserve = topup, from_reserve
          m.reserve, m.value = m.reserve - from_reserve, m.value + topup
        end
        a.after_reset = math.floor(m.value / MICRO)  -- the slip's meter after (settle.lua)
      end
    end
  end
end

-- Write.
local seq = journal(KEYS[2], KEYS[3], 'correction', '', 0, 0,
  {'table', s.table_id, 'round', tostring(s.round_id), 'phase', s.phase, 'corrects', corrects,
   'requested_by', s.requested_by, 'by', approver, 'by_cert', ARGV[4]})
local common = {'table', s.table_id, 'round', tostring(s.round_id), 'corrects', corrects}
if round[1] == 'irregular' then
  local held_id = s.table_id .. ':' .. tostring(s.round_id) .. ':chip_count'
  local held_raw = redis.call('HGET', KEYS[11], held_id)
  if held_raw then
    local held = cjson.decode(held_raw)
    if held.status == 'open' then
      local decision = s.phase == 'settle' and 'confirm' or 'void'
      local note = 'the table was answered its ' .. s.phase .. ' before the restore ('
        .. corrects .. ')'
      local resolved = journal(KEYS[2], KEYS[3], 'irregularity_resolved', '', 0, 0,
        {'table', s.table_id, 'round', tostring(s.round_id), 'kind', 'chip_count', 'decision',
         decision, 'supervisor', approver, 'supervisor_cert', ARGV[4], 'note', note,
         'corrects', corrects})
      held.status = s.phase == 'settle' and 'confirmed' or 'voided'
      held.resolved_by, held.resolved_by_cert, held.note = approver, ARGV[4], note
      held.resolved_at_ms, held.resolved_seq = int(clock_ms()), int(resolved)
      redis.call('HSET', KEYS[11], held_id, cjson.encode(held))
    end
  end
end
local function with(fields)
  for _, v in ipairs(common) do fields[#fields + 1] = v end
  return fields
end
local retention = ARGV[6]
if s.phase == 'lockout' then  -- the handle, as lockout.lua journals it (the reports read it)
  local accepted = cjson.decode(s.wagers)
  if #accepted > 0 then
    local kinds, by_kind, total = {}, {}, 0
    for _, a in ipairs(accepted) do
      local k = by_kind[a.kind]
      if not k then
        k = {count = 0, cents = 0}
        by_kind[a.kind] = k
        kinds[#kinds + 1] = a.kind
      end
      k.count, k.cents = k.count + 1, k.cents + tonumber(a.amount_cents)
      total = total + tonumber(a.amount_cents)
    end
    local fields = with({'wagers', int(#accepted), 'amount_cents', int(total)})
    for _, kind in ipairs(kinds) do
      fields[#fields + 1], fields[#fields + 2] = 'count:' .. kind, int(by_kind[kind].count)
      fields[#fields + 1], fields[#fields + 2] = 'cents:' .. kind, int(by_kind[kind].cents)
    end
    journal(KEYS[2], KEYS[3], 'wagers_accepted', '', 0, 0, fields)
  end
end
if s.phase == 'lockout' or s.phase == 'void' then
  local entry = s.phase == 'lockout' and 'contribution' or 'void'
  local sign = s.phase == 'lockout' and 1 or -1
  for _, c in ipairs(s.moves) do
    journal(KEYS[2], KEYS[3], entry, c.meter_id, sign * tonumber(c.to_meter),
      sign * tonumber(c.to_reserve), with({'seat', c.seat, 'wager', c.kind, 'amount_cents',
      c.amount_cents}))
    local m = meters.by_id[c.meter_id]
    m.wagers, m.total = m.wagers + sign, m.total + sign * (tonumber(c.to_meter)
      + tonumber(c.to_reserve))
  end
  if s.phase == 'lockout' then
    redis.call('HSET', KEYS[5], 'v', SCHEMA_VERSION, 'state', 'locked', 'lockout_fp',
      'correction:' .. corrects, 'wagers', s.wagers, 'lockout_reply', s.answer, 'lockout_seq',
      int(seq), 'table_rev', redis.call('HGET', KEYS[6], 'rev') or '0')
    if tonumber(s.round_id) > num(redis.call('HGET', KEYS[6], 'last_round')) then
      redis.call('HSET', KEYS[6], 'last_round', tostring(s.round_id))
    end
    redis.call('SADD', KEYS[7], s.table_id .. ':' .. tostring(s.round_id))
  else
    redis.call('HSET', KEYS[5], 'state', 'voided', 'void_fp', 'correction:' .. corrects,
      'void_reply', s.answer)
    redis.call('SREM', KEYS[7], s.table_id .. ':' .. tostring(s.round_id))
  end
  redis.call('EXPIRE', KEYS[5], retention)
else
  for _, a in ipairs(s.awards) do
    -- an award names the lost entry it makes again (its answered journal_seq)
    local fields = {'table', s.table_id, 'round', tostring(s.round_id), 'corrects',
      s.epoch .. ':' .. a.journal_seq, 'seat', a.seat, 'wager', a.kind, 'on_dealer',
      tostring(a.on_dealer_hand), 'hand', a.hand, 'line', a.line, 'award', a.award_text,
      'amount_cents', a.amount_cents}
    if a.pending_validation then  -- the id it makes again (journal_restore.py reads it)
      fields[#fields + 1], fields[#fields + 2] = 'jackpot', a.jackpot_id
    end
    local award_seq
    if a.award_kind == 'percent_of_meter' then
      local m = meters.by_id[a.meter_id]
      -- the meter around the award as it moves here (as settle.lua journals it), and as the
      -- table was answered
      fields[#fields + 1], fields[#fields + 2] = 'meter_before_cents', int(a.before)
      fields[#fields + 1], fields[#fields + 2] = 'meter_after_cents', int(a.after)
      fields[#fields + 1], fields[#fields + 2] = 'answered_meter_before_cents',
        a.meter_before_cents
      fields[#fields + 1], fields[#fields + 2] = 'answered_meter_after_cents', a.meter_after_cents
      award_seq = journal(KEYS[2], KEYS[3], 'award', m.id, -tonumber(a.amount_cents) * MICRO, 0,
        fields)
      if a.topup then
        journal(KEYS[2], KEYS[3], 'reset', m.id, a.topup, -a.from_reserve,
          with({'operator_seed_microcents', int(a.topup - a.from_reserve), 'reset_cents',
            int(m.reset / MICRO)}))
        m.seeded = (m.seeded or 0) + a.topup - a.from_reserve
      end
      m.hits, m.awarded = (m.hits or 0) + 1, (m.awarded or 0) + tonumber(a.amount_cents)
      m.held = (m.held or 0) + (a.pending_validation and 1 or 0)
      m.last_hit = award_seq
    else
      award_seq = journal(KEYS[2], KEYS[3], 'fixed_award', '', 0, 0, fields)
    end
    if a.pending_validation then
      redis.call('HSET', KEYS[8], a.jackpot_id, cjson.encode({v = SCHEMA_VERSION,
        jackpot_id = a.jackpot_id, link_group_id = link_group_id, meter_id = a.meter_id,
        table_id = s.table_id, round_id = tostring(s.round_id), seat = tonumber(a.seat),
        hand = a.hand, wager = a.kind, wager_cents = a.wager_cents or '0',
        on_dealer_hand = a.on_dealer_hand, envy_for_seat = tonumber(a.envy_for_seat), cards = a.cards or '', line = a.line,
        award_kind = a.award_kind, award_text = a.award_text, amount_cents = a.amount_cents,
        meter_before_cents = a.before and int(a.before) or '0',
        meter_after_cents = a.before and int(a.after_reset) or '0',
        reset_topup_microcents = a.before and int(a.topup or 0) or '',
        reset_from_reserve_microcents = a.before and int(a.from_reserve or 0) or '',
        status = 'pending', journal_seq = award_seq, hit_at_ms = int(clock_ms()),
        corrects = s.epoch .. ':' .. a.journal_seq,
        answered_meter_before_cents = a.meter_before_cents,
        answered_meter_after_cents = a.meter_after_cents}))
      redis.call('SADD', KEYS[9], a.jackpot_id)
    end
  end
  redis.call('HSET', KEYS[5], 'state', 'settled', 'settle_fp', 'correction:' .. corrects,
    'settle_reply', s.answer)
  redis.call('EXPIRE', KEYS[5], retention)
  redis.call('SREM', KEYS[7], s.table_id .. ':' .. tostring(s.round_id))
end
for _, m in ipairs(meters.list) do
  redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
    int(m.reserve))
  if m.wagers ~= 0 then
    redis.call('HINCRBY', m.key, 'wagers_total', int(m.wagers))
    redis.call('HINCRBY', m.key, 'contributions_microcents_total', int(m.total))
  end
  if m.hits then
    redis.call('HSET', m.key, 'last_hit_seq', int(m.last_hit))
    redis.call('HINCRBY', m.key, 'hits_total', int(m.hits))
    redis.call('HINCRBY', m.key, 'awards_cents_total', int(m.awarded))
    redis.call('HINCRBY', m.key, 'pending_jackpots', int(m.held))
    redis.call('HINCRBY', m.key, 'operator_seed_microcents_total', int(m.seeded or 0))
  end
end
s.status, s.approved_by, s.approved_by_cert, s.applied_seq = 'applied', approver, ARGV[4], seq
raw = cjson.encode(s)
redis.call('HSET', KEYS[4], step_id, raw)
redis.call('ZREM', KEYS[10], step_id)
return raw
