-- Lockout ("no more bets"): record a round's accepted wagers and apply their contributions.
-- A wager contributes to every meter it feeds, at that meter's rate of progression (and
-- reserve rate); above a meter's ceiling its share goes to that meter's reserve.
-- While the link group is in maintenance (an operator changes its meters or tables), a
-- lockout with a progressive wager (one feeding a meter) is refused; one without is accepted.
-- The table's revision (ARGV[10], of the definition the controller used) must be the stored
-- one: a definition changed since is refused so that the controller reads it again.
-- KEYS: 1 round, 2 table, 3 journal, 4 seq, 5 epoch, 6 counters, 7 open rounds,
--       8 maintenance, 9.. the table's meters (ARGV[5]'s order)
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint,
--       4 wagers JSON [{seat, kind, amount_cents, on_dealer_hand, envy, meters = [meter ids]}],
--       5 meter ids JSON, 6 round retention seconds, 7 max round step,
--       8, 9 the table's last acknowledged journal position (epoch id, seq), 10 table revision
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, fp = ARGV[1], ARGV[2], ARGV[3]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local epoch = check_epoch(KEYS[5], KEYS[3], KEYS[4], 'table ' .. table_id, ARGV[8], ARGV[9])

local seen = redis.call('HMGET', KEYS[1], 'lockout_fp', 'v')
local seen_fp = seen[1]
if seen_fp then
  check_version(where, seen[2])
  if seen_fp == fp then
    return {redis.call('HGET', KEYS[1], 'lockout_reply'), 'replay', epoch,
      redis.call('GET', KEYS[4]) or '0'}
  end
  refuse('CONFLICT', where .. ' is already locked out with other wagers; a round is locked '
    .. 'out once, and a retry must repeat the original wagers exactly')
end
if redis.call('HEXISTS', KEYS[2], 'config') == 0 then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
if (redis.call('HGET', KEYS[2], 'rev') or '0') ~= ARGV[10] then
  refuse('TABLE_CHANGED', 'the definition of table ' .. table_id .. ' was changed by an operator; '
    .. 'retry the same request')
end
local wagers = cjson.decode(ARGV[4])
local maintenance = redis.call('HMGET', KEYS[8], 'state', 'entered_reason')
if maintenance[1] == 'maintenance' then
  for _, w in ipairs(wagers) do
    if #w.meters > 0 then
      refuse('MAINTENANCE', 'no progressive wagers now: the progressive meters of table '
        .. table_id .. ' are in maintenance (' .. maintenance[2] .. '); return the progressive '
        .. 'wagers to the players and lock out the round without them, or wait until the '
        .. 'maintenance ends')
    end
  end
end
local meters = load_meters(KEYS, 9, cjson.decode(ARGV[5]))
local last = num(redis.call('HGET', KEYS[2], 'last_round'))
if tonumber(round_id) <= last then
  refuse('STALE', where .. ' is not after the table\'s last locked-out round ' .. int(last)
    .. '; round ids must increase')
end
if tonumber(round_id) - last > tonumber(ARGV[7]) then
  refuse('BOUND', 'round_id ' .. round_id .. ' is more than ' .. ARGV[7] .. ' above the last '
    .. 'locked-out round ' .. int(last) .. ' of table ' .. table_id .. '; the next round is '
    .. int(last + 1) .. ' (an operator can rebase the table\'s rounds, journaled)')
end

-- Compute every split first (nothing is written before every check has passed).
local accepted = {}
for i, w in ipairs(wagers) do
  local contributions = {}
  for j, meter_id in ipairs(w.meters) do
    local m = meters.by_id[meter_id]
    local to_meter = w.amount_cents * m.rate
    local to_reserve = w.amount_cents * m.reserve_rate
    local room = math.max(m.ceiling - m.value, 0)
    if to_meter > room then
      to_reserve = to_reserve + (to_meter - room)
      to_meter = room
    end
    m.value, m.reserve = m.value + to_meter, m.reserve + to_reserve
    m.wagers, m.total = m.wagers + 1, m.total + to_meter + to_reserve
    check_exact('the reserve of meter ' .. meter_id, m.reserve)
    contributions[j] = {meter_id = meter_id, to_meter_microcents = int(to_meter),
      to_reserve_microcents = int(to_reserve)}
  end
  accepted[i] = {seat = w.seat, kind = w.kind, amount_cents = int(w.amount_cents),
    on_dealer_hand = w.on_dealer_hand, envy = w.envy, contributions = contributions}
end

-- Write: journal each contribution, then the meters and the round.
for _, a in ipairs(accepted) do
  for _, c in ipairs(a.contributions) do
    journal(KEYS[3], KEYS[4], 'contribution', c.meter_id, c.to_meter_microcents,
      c.to_reserve_microcents, {'table', table_id, 'round', round_id, 'seat', a.seat,
      'wager', a.kind, 'amount_cents', a.amount_cents})
  end
end
for _, m in ipairs(meters.list) do
  redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
    int(m.reserve))
  if m.wagers > 0 then
    redis.call('HINCRBY', m.key, 'wagers_total', int(m.wagers))
    redis.call('HINCRBY', m.key, 'contributions_microcents_total', int(m.total))
    count(KEYS[6], {'wagers', m.id}, m.wagers)
    count(KEYS[6], {'contributions_microcents', m.id}, m.total)
  end
end

local reply = cjson.encode({table_id = table_id, round_id = round_id, accepted = accepted,
  meters = meter_values(meters)})
redis.call('HSET', KEYS[1], 'v', SCHEMA_VERSION, 'state', 'locked', 'lockout_fp', fp,
  'wagers', cjson.encode(accepted), 'lockout_reply', reply,
  'lockout_seq', redis.call('GET', KEYS[4]) or '0', 'table_rev', ARGV[10])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('HSET', KEYS[2], 'last_round', round_id)
redis.call('SADD', KEYS[7], table_id .. ':' .. round_id)  -- exported until settled or voided
return {reply, 'new', epoch, redis.call('GET', KEYS[4]) or '0'}
