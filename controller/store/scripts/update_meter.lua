-- Change a meter's parameters (reset amount, rate of progression, reserve rate, ceiling) while
-- its link group is in maintenance; journaled with every old and new value, who and why. The
-- caller validated the new parameters against the old ones it read (ARGV[3..6]): if the meter
-- changed meanwhile the change is refused, unless the meter already has the new parameters
-- (a retry: nothing more happens). A ceiling is never below the meter's current amount. No
-- money moves: a new reset applies at the next 100% award.
-- A must-hit-by meter (docs/mystery.md, "Changing a must-hit-by meter") keeps no ceiling and a
-- reset below its must-hit-by amount; a new reset abandons the current cycle unrevealed and
-- starts the next one in this step, its hit point drawn from ARGV[14] in (L, must-hit-by],
-- L the larger of the new reset and the meter's amount in whole cents, so that
-- reset < hit point <= must-hit-by and the meter below its hit point hold (as at a restore).
-- KEYS: 1 meter, 2 maintenance, 3 journal, 4 seq, 5 the meter's mystery key
-- ARGV: 1 meter_id, 2 link_group_id, 3-6 old reset_cents, rate_ppm, reserve_rate_ppm,
--       ceiling_cents, 7-10 the new ones, 11 actor, 12 actor certificate, 13 reason,
--       14 a fresh seed (64 hex digits) for a must-hit-by meter's new draw
-- Answers 'updated' or 'unchanged'.
local NAMES = {'reset_cents', 'rate_ppm', 'reserve_rate_ppm', 'ceiling_cents'}
local meter_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'reset_cents', 'rate_ppm', 'reserve_rate_ppm',
  'ceiling_cents', 'value_microcents', 'v', 'kind', 'must_hit_by_cents', 'mystery_cycle',
  'mystery_commitment', 'staged_seq', 'wound_down_seq')
if not stored[5] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, stored[6])
if stored[11] then  -- docs/staged-changes.md: one change at a time
  refuse('STAGED', 'meter ' .. meter_id .. ' has a change staged for its next hit (journal #'
    .. stored[11] .. '); cancel it first (jackpotctl meters cancel-staged ' .. meter_id
    .. ' --reason ...)')
end
if stored[12] then
  refuse('WOUND_DOWN', 'meter ' .. meter_id .. ' is winding down (journal #' .. stored[12]
    .. '): its parameters do not change any more')
end
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
local restart
if stored[7] == 'must_hit_by' then
  local must_hit_by = stored_int('meter', meter_id, KEYS[1], 'must_hit_by_cents', stored[8])
  local reset = tonumber(ARGV[7])
  if ceiling ~= 0 then
    refuse('INVALID', 'meter ' .. meter_id .. ' is a must-hit-by meter: it has no ceiling (it '
      .. 'hits at most at its must-hit-by amount ' .. dollars(must_hit_by) .. ')')
  end
  if not (reset and reset >= 0 and reset < must_hit_by) then
    refuse('INVALID', 'the reset ' .. dollars(reset or 0) .. ' of must-hit-by meter '
      .. meter_id .. ' must be below its must-hit-by amount ' .. dollars(must_hit_by))
  end
  if ARGV[7] ~= stored[1] then
    local low = math.max(reset, math.floor(value / MICRO))
    if low >= must_hit_by then  -- the meter is below its hit point <= must-hit-by: never
      refuse('INVALID', 'must-hit-by meter ' .. meter_id .. ' holds '
        .. dollars(math.floor(value / MICRO)) .. ', not below its must-hit-by amount '
        .. dollars(must_hit_by) .. '; nothing was changed')
    end
    local cycle = stored_int('meter', meter_id, KEYS[1], 'mystery_cycle', stored[9]) + 1
    local hit, salt, commitment = mystery_draw(ARGV[14], meter_id, cycle, low, must_hit_by)
    restart = {m = {id = meter_id, key = KEYS[1], reset = reset * MICRO,
      must_hit_by = must_hit_by}, low = low, abandoned_cycle = cycle - 1,
      abandoned_commitment = stored[10] or '',
      draw = {cycle = cycle, hit = hit, salt = salt, commitment = commitment}}
  end
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
local seq = journal(KEYS[3], KEYS[4], 'meter_updated', meter_id, 0, 0, fields)
if restart then
  mystery_commit(KEYS[3], KEYS[4], KEYS[5], restart.m, restart.draw,
    {'restart', 'update', 'updated_seq', int(seq), 'abandoned_cycle',
     int(restart.abandoned_cycle), 'abandoned_commitment', restart.abandoned_commitment,
     'drawn_above_cents', int(restart.low)})
end
return 'updated'
