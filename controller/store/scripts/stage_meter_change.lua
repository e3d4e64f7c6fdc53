-- Stage a change of a meter's parameters (reset amount, rate of progression, reserve rate,
-- ceiling) to be applied by the step that pays its next hit ('hit') or its next reset
-- ('reset'), not now (docs/staged-changes.md; New Zealand and Swiss rules change a live
-- jackpot only after it is won). No maintenance is needed: nothing changes until that step,
-- which applies it atomically (_lib.lua staged_check, staged_write). The caller validated the
-- new parameters as an immediate change's (MeterConfig) against the old ones it read
-- (ARGV[2..5]); if the meter changed meanwhile the request is refused. One change waits per
-- meter: another is refused until it is applied, dropped or cancelled; the same request
-- again answers 'unchanged'. A must-hit-by meter's change keeps no ceiling and a reset below
-- its must-hit-by amount (re-checked when applied). Journaled (meter_change_staged) with the
-- staged record itself ('staged'), who and why.
-- KEYS: 1 meter, 2 journal, 3 seq
-- ARGV: 1 meter_id, 2-5 old reset_cents, rate_ppm, reserve_rate_ppm, ceiling_cents,
--       6-9 the new ones, 10 at ('hit' | 'reset'), 11 actor, 12 actor certificate, 13 reason
-- Answers {'staged' | 'unchanged', the staging entry's seq}.
local meter_id, at = ARGV[1], ARGV[10]
local stored = redis.call('HMGET', KEYS[1], 'reset_cents', 'rate_ppm', 'reserve_rate_ppm',
  'ceiling_cents', 'v', 'kind', 'must_hit_by_cents', 'staged_change', 'staged_seq',
  'wound_down_seq', 'value_microcents')
if not stored[5] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, stored[5])
if at ~= 'hit' and at ~= 'reset' then
  refuse('BOUND', 'a change is staged at the next \'hit\' or the next \'reset\', not '
    .. string.sub(at, 1, 20))
end
local record = {at = at, by = ARGV[11], reason = ARGV[13]}
local order = {'at'}
local same = true
for i, name in ipairs(STAGED_NAMES) do
  record['old_' .. name], record['new_' .. name] = ARGV[1 + i], ARGV[5 + i]
  order[#order + 1] = 'old_' .. name
  order[#order + 1] = 'new_' .. name
  same = same and ARGV[1 + i] == ARGV[5 + i]
end
order[#order + 1] = 'by'
order[#order + 1] = 'reason'
local parts = {}
for _, name in ipairs(order) do  -- in this order: the same request writes the same record
  parts[#parts + 1] = cjson.encode(name) .. ':' .. cjson.encode(record[name])
end
local staged = '{' .. table.concat(parts, ',') .. '}'
if stored[8] then
  if stored[8] == staged then
    return {'unchanged', stored[9] or '0'}
  end
  refuse('STAGED', 'meter ' .. meter_id .. ' already has a change staged (journal #'
    .. tostring(stored[9]) .. '); cancel it first (jackpotctl meters cancel-staged '
    .. meter_id .. ' --reason ...)')
end
if stored[10] then
  refuse('WOUND_DOWN', 'meter ' .. meter_id .. ' is winding down (journal #' .. stored[10]
    .. '): its parameters do not change any more')
end
for i = 1, 4 do
  if stored[i] ~= ARGV[1 + i] then
    refuse('CHANGED', 'meter ' .. meter_id .. ' was changed by someone else meanwhile; look at '
      .. 'it again (jackpotctl meters list) and repeat the change')
  end
end
if same then
  refuse('INVALID', 'the change staged for meter ' .. meter_id .. ' changes nothing')
end
if stored[6] == 'must_hit_by' then
  local must_hit_by = stored_int('meter', meter_id, KEYS[1], 'must_hit_by_cents', stored[7])
  if ARGV[9] ~= '0' then
    refuse('INVALID', 'meter ' .. meter_id .. ' is a must-hit-by meter: it has no ceiling (it '
      .. 'hits at most at its must-hit-by amount ' .. dollars(must_hit_by) .. ')')
  end
  if not (tonumber(ARGV[6]) < must_hit_by) then
    refuse('INVALID', 'the reset ' .. dollars(tonumber(ARGV[6])) .. ' of must-hit-by meter '
      .. meter_id .. ' must be below its must-hit-by amount ' .. dollars(must_hit_by)
      .. ' (reset < hit point <= must-hit-by)')
  end
end
local ceiling = tonumber(ARGV[9])
if at == 'hit' and ceiling > 0 and ceiling * MICRO < tonumber(stored[11]) then
  refuse('CEILING', 'the ceiling ' .. dollars(ceiling) .. ' staged for meter ' .. meter_id
    .. ' is below its current amount ' .. dollars(math.floor(tonumber(stored[11]) / MICRO))
    .. '; a ceiling is never below the amount on the meter')
end
local fields = {'staged', staged, 'at', at, 'by', ARGV[11], 'by_cert', ARGV[12], 'reason',
  ARGV[13]}
for i, name in ipairs(STAGED_NAMES) do
  fields[#fields + 1] = 'old_' .. name
  fields[#fields + 1] = ARGV[1 + i]
  fields[#fields + 1] = 'new_' .. name
  fields[#fields + 1] = ARGV[5 + i]
end
local seq = journal(KEYS[2], KEYS[3], 'meter_change_staged', meter_id, 0, 0, fields)
redis.call('HSET', KEYS[1], 'staged_change', staged, 'staged_seq', int(seq))
return {'staged', int(seq)}
