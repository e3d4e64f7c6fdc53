-- Move a table's round counter forward (an operator's decision, journaled with who and why):
-- the next round id the table may lock out is then above the new last round. Never back:
-- round ids must increase, so a retry that arrives late is refused, never applied twice.
-- The same rebase again changes nothing.
-- KEYS: 1 table, 2 journal, 3 seq
-- ARGV: 1 table_id, 2 new last round id, 3 reason, 4 actor, 5 highest allowed last round
local table_id, target = ARGV[1], tonumber(ARGV[2])
if redis.call('HEXISTS', KEYS[1], 'config') == 0 then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
local last = num(redis.call('HGET', KEYS[1], 'last_round'))
if target > tonumber(ARGV[5]) then
  refuse('BOUND', 'last_round_id ' .. ARGV[2] .. ' is above ' .. ARGV[5] .. ', the highest a '
    .. 'table may be rebased to')
end
if target < last then
  refuse('STALE', 'table ' .. table_id .. ' has locked out round ' .. int(last) .. '; its '
    .. 'rounds can only move forward, not back to ' .. ARGV[2])
end
if target == last then
  return {int(last), int(last), 'same'}
end
redis.call('HSET', KEYS[1], 'last_round', int(target))
journal(KEYS[2], KEYS[3], 'table_rebased', '', 0, 0, {'table', table_id, 'previous_last_round',
  int(last), 'last_round', int(target), 'reason', ARGV[3], 'by', ARGV[4]})
return {int(last), int(target), 'moved'}
