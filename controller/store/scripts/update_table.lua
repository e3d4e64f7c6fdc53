-- Change a registered table's definition (its wagers, paytables, limits, meters, seats) while
-- its link group is in maintenance and the table has no open round (a round settles against
-- the table it was locked out with); journaled with the old and the new definition, who and
-- why. The caller read the old definition (ARGV[8]): if the table changed meanwhile the change
-- is refused, unless it already has the new definition (a retry: nothing more happens). The
-- table's revision ('rev') goes up, so a controller that cached the old definition is refused
-- at its next lockout and reads it again.
-- KEYS: 1 table, 2 maintenance, 3 journal, 4 seq, 5 open rounds, 6.. the meters it feeds
-- ARGV: 1 table_id, 2 new config JSON, 3 meter ids JSON (KEYS[6..]'s order), 4 game,
--       5 actor, 6 actor certificate, 7 reason, 8 the old config JSON, 9 link_group_id
-- Answers 'updated' or 'unchanged'.
local table_id, config = ARGV[1], ARGV[2]
local stored = redis.call('HMGET', KEYS[1], 'config', 'retired_seq')
if not stored[1] then
  if stored[2] then
    refuse('NOT_FOUND', 'table ' .. table_id .. ' was retired (journal #' .. stored[2] .. ')')
  end
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
if stored[1] == config then
  return 'unchanged'
end
if stored[1] ~= ARGV[8] then
  refuse('CHANGED', 'table ' .. table_id .. ' was changed by someone else meanwhile; look at it '
    .. 'again (jackpotctl tables list) and repeat the change')
end
require_maintenance(KEYS[2], ARGV[9], 'table ' .. table_id)
refuse_open_rounds(KEYS[5], table_id, 'table ' .. table_id .. ' cannot change now')
for i, meter_id in ipairs(cjson.decode(ARGV[3])) do
  local meter_game = redis.call('HGET', KEYS[5 + i], 'game')
  if not meter_game then
    refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist in this link group')
  end
  if meter_game ~= ARGV[4] then
    refuse('INVALID', 'table ' .. table_id .. ' deals ' .. ARGV[4] .. ' but meter ' .. meter_id
      .. ' funds ' .. meter_game .. '; a meter links tables of one game')
  end
end
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
-- the definition before, kept for a correction of a round played under it (corrections.md)
redis.call('HSET', KEYS[1], 'config', config, 'prev_config', stored[1], 'prev_rev', rev - 1)
journal(KEYS[3], KEYS[4], 'table_updated', '', 0, 0,
  {'table', table_id, 'old_config', stored[1], 'config', config, 'by', ARGV[5],
   'by_cert', ARGV[6], 'reason', ARGV[7]})
return 'updated'
