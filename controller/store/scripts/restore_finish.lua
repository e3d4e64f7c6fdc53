-- An operator ends the reconciliation of a restored link group (docs/journal.md, "Reconciling
-- tables after a restore"): once every table of the group had its outbox collected
-- (restore_collect.lua) and every missing step is applied (restore_apply.lua), the lineage
-- accepts the exported epoch up to where the restore numbered on from (every collected
-- answer) and the group serves its tables again. Journaled; a retry answers the same.
-- KEYS: 1 epoch, 2 journal, 3 seq, 4 restore steps, 5 restore tables, 6 the group's tables,
--       7 restore queue
-- ARGV: 1 link_group_id, 2 actor, 3 actor certificate
-- Answers the journal seq of the 'restore_reconciled' entry.
local link_group_id = ARGV[1]
local e = redis.call('HMGET', KEYS[1], 'id', 'lineage', 'stopped', 'reconcile_epoch',
  'reconcile_from', 'reconcile_above', 'reconciled_seq')
if not e[1] then
  refuse('NOT_FOUND', 'link group ' .. link_group_id .. ' has no state in Redis; restore it first')
end
if not e[4] or e[4] == '' then
  refuse('INVALID', 'link group ' .. link_group_id .. ' was not restored from an export; there '
    .. 'is nothing to reconcile')
end
if e[7] and e[7] ~= '' and (not e[3] or e[3] == '') then
  return tonumber(e[7])  -- finished before
end
local uncollected = {}
for _, table_id in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  if redis.call('HEXISTS', KEYS[5], table_id) == 0 then
    uncollected[#uncollected + 1] = table_id
  end
end
if #uncollected > 0 then
  table.sort(uncollected)
  refuse('PENDING', 'the outboxes of tables ' .. table.concat(uncollected, ', ') .. ' of link '
    .. 'group ' .. link_group_id .. ' are not collected (jackpotctl restore collect --link-group '
    .. link_group_id .. ' --outbox FILE); a table whose outbox is lost is reconciled by hand '
    .. '(jackpotctl link-groups resume)')
end
local open = redis.call('ZCARD', KEYS[7])
if open > 0 then
  refuse('PENDING', int(open) .. ' missing steps of link group ' .. link_group_id .. ' are not '
    .. 'applied yet (jackpotctl restore status --link-group ' .. link_group_id .. ')')
end
local lineage, from_item = {}, e[4] .. ':' .. e[5]
for item in string.gmatch(e[2] or '', '[^,]+') do
  lineage[#lineage + 1] = item == from_item and (e[4] .. ':' .. e[6]) or item
end
local seq = journal(KEYS[2], KEYS[3], 'restore_reconciled', '', 0, 0,
  {'link_group', link_group_id, 'previous_epoch', e[4], 'from_seq', e[5], 'accepted_to',
   e[6], 'steps', int(redis.call('HLEN', KEYS[4])), 'stopped_because', e[3] or '', 'by', ARGV[2],
   'by_cert', ARGV[3]})
redis.call('HSET', KEYS[1], 'lineage', table.concat(lineage, ','), 'stopped', '',
  'reconciled_seq', seq, 'reconciled_by', ARGV[2])
return seq
