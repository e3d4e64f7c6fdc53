-- A second identity (a supervisor or an operator, never the requester) approves a requested
-- correction of a settled round, which applies it in this one step, or rejects it (the
-- requester may withdraw it), moving nothing. Both are journaled with both identities.
-- Approval: each removed wager's recorded contribution leaves its meters exactly, each added
-- wager contributes at the meter's rate now (above the ceiling to the reserve, as a lockout),
-- one 'correction_contribution' entry per meter moved; then 'round_corrected' with the whole
-- difference (the slip: per line what was paid and what is due); then one 'correction_award'
-- per positive difference that awaits validation (a percentage award, or a fixed one above
-- the table's threshold), each a pending jackpot of no meter (the operator funds it, the
-- live meter never pays a correction) that the normal review and payment flow completes.
-- The round's record names the correction and who approved it.
-- The same decision by the same identity again answers the record unchanged; any other
-- decision on a decided correction is refused.
-- KEYS: 1 corrections, 2 round, 3 journal, 4 seq, 5 jackpots, 6 pending, 7.. the meters of
--       the wager changes (ARGV[6]'s order)
-- ARGV: 1 correction_id, 2 decision ('approved' | 'rejected'), 3 actor, 4 actor certificate,
--       5 note, 6 meter ids JSON
-- Answers the correction record (JSON).
local correction_id, decision, actor, cert = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local raw = redis.call('HGET', KEYS[1], correction_id)
if not raw then
  refuse('NOT_FOUND', 'correction ' .. correction_id .. ' does not exist')
end
local c = cjson.decode(raw)
check_version('correction ' .. correction_id, c.v)
if c.status ~= 'requested' then
  if c.status == decision and c.decided_by == actor then
    return raw
  end
  refuse('DECIDED', 'correction ' .. correction_id .. ' was already ' .. c.status .. ' by '
    .. c.decided_by .. '; a correction is decided once')
end
local where = 'round ' .. int(c.round_id) .. ' of table ' .. c.table_id
local function listed(value)  -- cjson: an empty array is {}
  if type(value) ~= 'table' then return {} end
  return value
end
if decision == 'rejected' then
  local seq = journal(KEYS[3], KEYS[4], 'correction_rejected', '', 0, 0,
    {'correction', correction_id, 'table', c.table_id, 'round', int(c.round_id),
     'requested_by', c.requested_by, 'by', actor, 'by_cert', cert, 'note', ARGV[5]})
  c.status, c.decided_by, c.decided_by_cert, c.note = 'rejected', actor, cert, ARGV[5]
  c.decided_at_ms, c.decision_seq = now_ms(), int(seq)
  raw = cjson.encode(c)
  redis.call('HSET', KEYS[1], correction_id, raw)
  return raw
end
if actor == c.requested_by or (cert ~= '' and cert == c.requested_by_cert) then
  refuse('SAME_PERSON', 'correction ' .. correction_id .. ' was requested by ' .. c.requested_by
    .. '; a correction needs two people: another supervisor or an operator approves it')
end
local round = redis.call('HMGET', KEYS[2], 'state', 'correction', 'settle_fp')
if not round[1] then
  refuse('NOT_FOUND', where .. ' of correction ' .. correction_id .. ' is no longer kept (its '
    .. 'record expired); reject the correction and use a meter adjustment')
end
if round[2] ~= correction_id or round[1] ~= 'settled' or round[3] ~= c.settle_fp then
  refuse('CONFLICT', where .. ' is not as correction ' .. correction_id .. ' found it; reject '
    .. 'the correction and request it again')
end

-- Compute every contribution first (nothing is written before every check has passed).
local meters = load_meters(KEYS, 7, cjson.decode(ARGV[6]))
for _, m in ipairs(meters.list) do
  if redis.call('HGET', m.key, 'kind') == 'must_hit_by' then
    refuse('ADJUSTMENT', 'meter ' .. m.id .. ' is a must-hit-by meter: a correction moves no '
      .. 'contribution of it (it could cross its hit point unpaid); reject the correction')
  end
end
local moves = {}
for _, w in ipairs(listed(c.wagers)) do
  local amount = tonumber(w.amount_cents)
  for j, meter_id in ipairs(listed(w.meter_ids)) do
    local m = meters.by_id[meter_id]
    local to_meter, to_reserve
    if w.removed then
      to_meter = -tonumber(listed(w.to_meter_microcents)[j])
      to_reserve = -tonumber(listed(w.to_reserve_microcents)[j])
    else
      to_meter, to_reserve = amount * m.rate, amount * m.reserve_rate
      local room = math.max(m.ceiling - m.value, 0)
      if to_meter > room then
        to_reserve, to_meter = to_reserve + to_meter - room, room
      end
    end
    m.value, m.reserve = m.value + to_meter, m.reserve + to_reserve
    m.total = m.total + to_meter + to_reserve
    if m.value < 0 or m.reserve < 0 then
      refuse('ADJUSTMENT', 'correction ' .. correction_id .. ' would take meter ' .. meter_id
        .. ' or its reserve below zero; reject it and use a meter adjustment')
    end
    check_exact('meter ' .. meter_id, m.value)
    check_exact('the reserve of meter ' .. meter_id, m.reserve)
    moves[#moves + 1] = {w = w, meter_id = meter_id, d_meter = to_meter, d_reserve = to_reserve}
  end
end

-- Write: the contributions, the difference, the jackpots, the meters, the record, the round.
for _, mv in ipairs(moves) do
  journal(KEYS[3], KEYS[4], 'correction_contribution', mv.meter_id, mv.d_meter, mv.d_reserve,
    {'correction', correction_id, 'table', c.table_id, 'round', int(c.round_id),
     'seat', int(mv.w.seat), 'wager', mv.w.kind, 'amount_cents', int(tonumber(mv.w.amount_cents)),
     'removed', mv.w.removed and '1' or '0'})
end
local seq = journal(KEYS[3], KEYS[4], 'round_corrected', '', 0, 0,
  {'correction', correction_id, 'table', c.table_id, 'round', int(c.round_id),
   'requested_by', c.requested_by, 'by', actor, 'by_cert', cert, 'note', ARGV[5],
   'pay_cents', int(tonumber(c.pay_cents)), 'recover_cents', int(tonumber(c.recover_cents)),
   'operator_funded_cents', int(tonumber(c.operator_funded_cents)),
   'lines', cjson.encode(listed(c.lines))})
local jackpot_ids = {}
local hit_at_ms = int(clock_ms())
for _, line in ipairs(listed(c.lines)) do
  local delta = tonumber(line.due_cents) - tonumber(line.paid_cents)
  if line.needs_validation and delta > 0 then
    local award_seq = journal(KEYS[3], KEYS[4], 'correction_award', '', 0, 0,
      {'correction', correction_id, 'table', c.table_id, 'round', int(c.round_id),
       'seat', int(line.seat), 'wager', line.kind, 'on_dealer', tostring(line.on_dealer_hand),
       'hand', line.hand, 'line', line.line, 'award', line.award_text,
       'amount_cents', int(delta)})
    local jackpot_id = c.link_group_id .. ':' .. int(award_seq)
    redis.call('HSET', KEYS[5], jackpot_id, cjson.encode({v = SCHEMA_VERSION,
      jackpot_id = jackpot_id, link_group_id = c.link_group_id, meter_id = '',
      table_id = c.table_id, round_id = c.round_id, seat = line.seat, hand = line.hand,
      wager = line.kind, wager_cents = int(tonumber(line.wager_cents)),
      on_dealer_hand = line.on_dealer_hand, envy_for_seat = line.envy_for_seat,
      cards = line.cards, line = line.line, award_kind = line.award_kind,
      award_text = 'correction ' .. correction_id .. ': ' .. line.award_text,
      amount_cents = int(delta), meter_before_cents = '0', meter_after_cents = '0',
      status = 'pending', journal_seq = int(award_seq), hit_at_ms = hit_at_ms}))
    redis.call('SADD', KEYS[6], jackpot_id)
    jackpot_ids[#jackpot_ids + 1] = jackpot_id
  end
end
for _, m in ipairs(meters.list) do
  redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
    int(m.reserve))
  redis.call('HINCRBY', m.key, 'contributions_microcents_total', int(m.total))
end
c.status, c.decided_by, c.decided_by_cert, c.note = 'approved', actor, cert, ARGV[5]
c.decided_at_ms, c.decision_seq, c.jackpot_ids = now_ms(), int(seq), jackpot_ids
raw = cjson.encode(c)
redis.call('HSET', KEYS[1], correction_id, raw)
redis.call('HSET', KEYS[2], 'corrected_by', actor, 'corrected_seq', int(seq))
return raw
