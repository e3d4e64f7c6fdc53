-- Create a meter at its reset amount; the initial amount is journaled as operator seed.
-- A must-hit-by meter also draws its first hit point from the seed (_lib.lua
-- mystery_start_cycle): the secret stays in its mystery key, the commitment is journaled.
-- Idempotent: the same parameters again change nothing; other parameters are refused.
-- A retired meter's id is never used again.
-- KEYS: 1 link group info, 2 meter, 3 meters set, 4 journal, 5 seq, 6 retired meters,
--       7 the meter's mystery key
-- ARGV: 1 meter_id, 2 link_group_id, 3 game, 4 reset_cents, 5 rate_ppm, 6 reserve_rate_ppm,
--       7 ceiling_cents, 8 actor, 9 kind ('progressive' | 'must_hit_by'),
--       10 must_hit_by_cents ('0' for a progressive meter), 11 seed (64 hex digits)
local meter_id, link_group_id = ARGV[1], ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 0 then
  refuse('NOT_FOUND', 'link group ' .. link_group_id .. ' does not exist; create it first')
end
if redis.call('HEXISTS', KEYS[6], meter_id) == 1 then
  refuse('EXISTS', 'meter ' .. meter_id .. ' was retired; a meter id is never used again')
end
if redis.call('SISMEMBER', KEYS[3], meter_id) == 1 and redis.call('EXISTS', KEYS[2]) == 0 then
  refuse('LOST', 'meter ' .. meter_id .. ' existed in link group ' .. link_group_id .. ' but its '
    .. 'record is missing from Redis; a meter is never created again: restore the state '
    .. '(RUNBOOK: "Redis lost its data")')
end
local params = {'game', ARGV[3], 'reset_cents', ARGV[4], 'rate_ppm', ARGV[5],
  'reserve_rate_ppm', ARGV[6], 'ceiling_cents', ARGV[7], 'kind', ARGV[9],
  'must_hit_by_cents', ARGV[10]}
local stored_default = {kind = 'progressive', must_hit_by_cents = '0'}  -- older meters
if redis.call('EXISTS', KEYS[2]) == 1 then
  check_version('meter ' .. meter_id, redis.call('HGET', KEYS[2], 'v'))
  for i = 1, #params, 2 do
    local stored = redis.call('HGET', KEYS[2], params[i]) or stored_default[params[i]]
    if stored ~= params[i + 1] then
      refuse('EXISTS', 'meter ' .. meter_id .. ' exists with another ' .. params[i])
    end
  end
  return 'exists'
end
local seed = tonumber(ARGV[4]) * MICRO
check_exact('the reset amount of meter ' .. meter_id, seed)
local mystery, draw = nil, nil
if ARGV[9] == 'must_hit_by' then  -- drawn before the first write (a bad seed is refused)
  mystery = {id = meter_id, key = KEYS[2], reset = seed, must_hit_by = tonumber(ARGV[10])}
  draw = mystery_next(mystery, ARGV[11], 1)
end
redis.call('HSET', KEYS[2], 'v', SCHEMA_VERSION, 'meter_id', meter_id, 'link_group_id',
  link_group_id, 'value_microcents', int(seed), 'reserve_microcents', '0', 'pending_jackpots', '0',
  'wagers_total', '0', 'contributions_microcents_total', '0', 'hits_total', '0',
  'awards_cents_total', '0', 'operator_seed_microcents_total', int(seed), unpack(params))
redis.call('SADD', KEYS[3], meter_id)
journal(KEYS[4], KEYS[5], 'meter_created', meter_id, seed, 0,
  {'operator_seed_microcents', int(seed), 'by', ARGV[8], unpack(params)})
if mystery then
  mystery_commit(KEYS[4], KEYS[5], KEYS[7], mystery, draw, {})
end
return 'created'
