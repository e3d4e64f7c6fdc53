-- Stage a change of a table's definition (its wagers, paytables, limits, meters, seats; same
-- id, game and link group) to be applied by the step that pays the next hit ('hit') or the
-- next reset ('reset') of one of the meters the table feeds (docs/staged-changes.md;
-- _staged_tables.lua applies it). No maintenance is needed: nothing changes until that
-- step. The caller validated the new definition as an immediate update's, against the old
-- one it read (ARGV[3]); if the table changed meanwhile the request is refused. One change
-- waits per table: another is refused until it is applied, dropped or cancelled; the same
-- request again answers 'unchanged'. Journaled (table_change_staged) with the staged record
-- itself ('staged'), who and why.
-- KEYS: 1 table, 2 the meter it waits for, 3 journal, 4 seq, 5.. the new definition's meters
-- ARGV: 1 table_id, 2 new config JSON, 3 old config JSON, 4 the new meter ids JSON
--       (KEYS[5..]'s order), 5 game, 6 meter_id, 7 at ('hit' | 'reset'), 8 actor,
--       9 actor certificate, 10 reason
-- Answers {'staged' | 'unchanged', the staging entry's seq}.
local table_id, config, old, meter_id, at = ARGV[1], ARGV[2], ARGV[3], ARGV[6], ARGV[7]
local stored = redis.call('HMGET', KEYS[1], 'config', 'retired_seq', 'staged_change',
  'staged_seq')
if not stored[1] then
  if stored[2] then
    refuse('NOT_FOUND', 'table ' .. table_id .. ' was retired (journal #' .. stored[2] .. ')')
  end
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
if at ~= 'hit' and at ~= 'reset' then
  refuse('BOUND', 'a change is staged at the next \'hit\' or the next \'reset\', not '
    .. string.sub(at, 1, 20))
end
local meters = cjson.decode(ARGV[4])
local parts = {}
for _, pair in ipairs({{'meter', meter_id}, {'at', at}, {'old_config', old},
    {'config', config}, {'game', ARGV[5]}, {'meters', meters}, {'by', ARGV[8]},
    {'reason', ARGV[10]}}) do  -- in this order: the same request writes the same record
  local value = pair[2]
  local encoded = type(value) == 'table' and (#value == 0 and '[]' or cjson.encode(value))
    or cjson.encode(value)
  parts[#parts + 1] = cjson.encode(pair[1]) .. ':' .. encoded
end
local staged = '{' .. table.concat(parts, ',') .. '}'
if stored[3] then
  if stored[3] == staged then
    return {'unchanged', stored[4] or '0'}
  end
  refuse('STAGED', 'table ' .. table_id .. ' already has a change staged (journal #'
    .. tostring(stored[4]) .. '); cancel it first (jackpotctl tables cancel-staged '
    .. table_id .. ' --reason ...)')
end
if stored[1] ~= old then
  refuse('CHANGED', 'table ' .. table_id .. ' was changed by someone else meanwhile; look at it '
    .. 'again (jackpotctl tables list) and repeat the change')
end
if config == old then
  refuse('INVALID', 'the change staged for table ' .. table_id .. ' changes nothing')
end
local meter = redis.call('HMGET', KEYS[2], 'game', 'kind', 'staged_tables')
if not meter[1] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist in this link group')
end
if meter[2] == 'must_hit_by' then
  refuse('INVALID', 'meter ' .. meter_id .. ' is a must-hit-by meter: it hits at a lockout, '
    .. 'while that round is in flight; stage the table change at the next hit of a meter its '
    .. 'paytable pays a percentage of')
end
for i, id in ipairs(meters) do
  local game = redis.call('HGET', KEYS[4 + i], 'game')
  if not game then
    refuse('NOT_FOUND', 'meter ' .. id .. ' does not exist in this link group')
  end
  if game ~= ARGV[5] then
    refuse('INVALID', 'table ' .. table_id .. ' deals ' .. ARGV[5] .. ' but meter ' .. id
      .. ' funds ' .. game .. '; a meter links tables of one game')
  end
end
local seq = journal(KEYS[3], KEYS[4], 'table_change_staged', '', 0, 0,
  {'table', table_id, 'at_meter', meter_id, 'at', at, 'old_config', old, 'config', config,
   'staged', staged, 'by', ARGV[8], 'by_cert', ARGV[9], 'reason', ARGV[10]})
local waiting = {}
if meter[3] then
  local ok, ids = pcall(cjson.decode, meter[3])
  if ok and type(ids) == 'table' then
    for _, id in ipairs(ids) do
      if id ~= table_id then
        waiting[#waiting + 1] = id
      end
    end
  end
end
waiting[#waiting + 1] = table_id
redis.call('HSET', KEYS[2], 'staged_tables', cjson.encode(waiting))
redis.call('HSET', KEYS[1], 'staged_change', staged, 'staged_seq', int(seq))
return {'staged', int(seq)}
