-- Lockout ("no more bets"): record a round's accepted wagers and apply their contributions.
-- KEYS: 1 round, 2 table, 3 meter, 4 journal, 5 seq
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint, 4 wagers JSON [{seat, kind, amount_cents}],
--       5 meter_id, 6 round retention seconds
local table_id, round_id, fp, meter_id = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
local where = 'round ' .. round_id .. ' of table ' .. table_id

local seen_fp = redis.call('HGET', KEYS[1], 'lockout_fp')
if seen_fp then
  if seen_fp == fp then
    return {redis.call('HGET', KEYS[1], 'lockout_reply'), 'replay'}
  end
  refuse('CONFLICT', where .. ' is already locked out with other wagers; a round is locked '
    .. 'out once, and a retry must repeat the original wagers exactly')
end
if redis.call('HEXISTS', KEYS[2], 'config') == 0 then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
if redis.call('EXISTS', KEYS[3]) == 0 then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
local last = num(redis.call('HGET', KEYS[2], 'last_round'))
if tonumber(round_id) <= last then
  refuse('STALE', where .. ' is not after the table\'s last locked-out round ' .. int(last)
    .. '; round ids must increase')
end

local m = redis.call('HMGET', KEYS[3], 'value_microcents', 'reserve_microcents', 'rate_ppm',
  'reserve_rate_ppm', 'ceiling_cents')
local value, reserve = num(m[1]), num(m[2])
local rate, reserve_rate, ceiling = num(m[3]), num(m[4]), num(m[5]) * MICRO
if ceiling == 0 or ceiling > MAX_EXACT then
  ceiling = MAX_EXACT
end

-- Compute every split first: above the ceiling, the meter's share goes to the reserve.
local wagers = cjson.decode(ARGV[4])
local accepted = {}
local total = 0
for i, w in ipairs(wagers) do
  local to_meter = w.amount_cents * rate
  local to_reserve = w.amount_cents * reserve_rate
  local room = math.max(ceiling - value, 0)
  if to_meter > room then
    to_reserve = to_reserve + (to_meter - room)
    to_meter = room
  end
  value = value + to_meter
  reserve = reserve + to_reserve
  total = total + to_meter + to_reserve
  accepted[i] = {seat = w.seat, kind = w.kind, amount_cents = int(w.amount_cents),
    meter_id = meter_id, to_meter_microcents = int(to_meter),
    to_reserve_microcents = int(to_reserve)}
end
check_exact('the reserve of meter ' .. meter_id, reserve)

-- Write: journal each contribution, then the meter and the round.
for _, a in ipairs(accepted) do
  journal(KEYS[4], KEYS[5], 'contribution', meter_id, a.to_meter_microcents,
    a.to_reserve_microcents, {'table', table_id, 'round', round_id, 'seat', a.seat,
    'amount_cents', a.amount_cents})
end
redis.call('HSET', KEYS[3], 'value_microcents', int(value), 'reserve_microcents', int(reserve))
redis.call('HINCRBY', KEYS[3], 'wagers_total', int(#accepted))
redis.call('HINCRBY', KEYS[3], 'contributions_microcents_total', int(total))

local reply = cjson.encode({table_id = table_id, round_id = round_id, accepted = accepted,
  meters = {meter_value(meter_id, value)}})
redis.call('HSET', KEYS[1], 'state', 'locked', 'meter', meter_id, 'lockout_fp', fp,
  'wagers', cjson.encode(accepted), 'lockout_reply', reply,
  'lockout_seq', redis.call('GET', KEYS[5]) or '0')
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('HSET', KEYS[2], 'last_round', round_id)
return {reply, 'new'}
