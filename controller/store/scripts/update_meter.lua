-- Change a meter's parameters (reset amount, rate of progression, reserve rate, ceiling) while
-- its link group is in maintenance; journaled with every old and new value, who and why. The
-- caller validated the new parameters against the old ones it read (ARGV[3..6]): if the meter
-- changed meanwhile the change is refused, unless the meter already has the new parameters
-- (a retry: nothing more happens). A ceiling is never below the meter's current amount. No
-- money moves: a new reset applies at the next 100% award.
-- KEYS: 1 meter, 2 maintenance, 3 journal, 4 seq
-- ARGV: 1 meter_id, 2 link_group_id, 3-6 old reset_cents, rate_ppm, reserve_rate_ppm,
--       ceiling_cents, 7-10 the new ones, 11 actor, 12 actor certificate, 13 reason
-- Answers 'updated' or 'unchanged'.
local NAMES = {'reset_cents', 'rate_ppm', 'reserve_rate_ppm', 'ceiling_cents'}
local meter_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'reset_cents', 'rate_ppm', 'reserve_rate_ppm',
  'ceiling_cents', 'value_microcents', 'v')
if not stored[5] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, stored[6])
local same_as_old, same_as_new = true, true
for i = 1, 4 do
  same_as_old = same_as_old and stored[i] == ARGV[2 + i]
  same_as_new = same_as_new and stored[i] == ARGV[6 + i]
end
if same_as_new then
  return 'unchanged'
end
if not same_as_old then
  refuse('CHANGED', 'meter ' .. meter_id .. ' was changed by someone else meanwhile; look at '
    .. 'it again (jackpotctl meters list) and repeat the change')
end
require_maintenance(KEYS[2], ARGV[2], 'meter ' .. meter_id)
local ceiling = tonumber(ARGV[10])
local value = tonumber(stored[5])
if ceiling > 0 and ceiling * MICRO < value then
  refuse('CEILING', 'the ceiling ' .. dollars(ceiling) .. ' of meter ' .. meter_id .. ' would be '
    .. 'below its current amount ' .. dollars(math.floor(value / MICRO)) .. '; a ceiling is '
    .. 'never below the amount on the meter')
end
local fields = {'by', ARGV[11], 'by_cert', ARGV[12], 'reason', ARGV[13]}
for i, name in ipairs(NAMES) do
  fields[#fields + 1] = 'old_' .. name
  fields[#fields + 1] = ARGV[2 + i]
  fields[#fields + 1] = 'new_' .. name
  fields[#fields + 1] = ARGV[6 + i]
end
redis.call('HSET', KEYS[1], 'reset_cents', ARGV[7], 'rate_ppm', ARGV[8], 'reserve_rate_ppm',
  ARGV[9], 'ceiling_cents', ARGV[10])
journal(KEYS[3], KEYS[4], 'meter_updated', meter_id, 0, 0, fields)
return 'updated'
