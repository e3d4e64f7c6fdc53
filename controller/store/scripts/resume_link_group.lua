-- An operator resumes a stopped link group, having reconciled what Redis lost from the
-- tables' records: a new epoch begins, and every position a table may hold of the earlier
-- ones is accepted (lineage cutoff '*'). Journaled with who, their certificate and why; the
-- same operator repeating the same resume gets its answer again.
-- KEYS: 1 epoch, 2 journal, 3 seq
-- ARGV: 1 link_group_id, 2 new epoch id, 3 actor, 4 actor certificate, 5 reason,
--       6 the epoch the operator reviewed (the stopped one)
local f = redis.call('HMGET', KEYS[1], 'id', 'lineage', 'stopped', 'resumed_by',
  'resumed_reason', 'since_seq', 'resumed_from')
if not f[1] then
  refuse('NOT_FOUND', 'link group ' .. ARGV[1] .. ' has no state in Redis; restore it first '
    .. '(jackpotctl restore)')
end
if not f[3] or f[3] == '' then
  if f[4] == ARGV[3] and f[5] == ARGV[5] and f[7] == ARGV[6] then
    return {f[1], f[6]}  -- the same operator's retry of the same resume: its answer again
  end
  refuse('NOT_STOPPED', 'link group ' .. ARGV[1] .. ' is not stopped; there is nothing to resume')
end
if f[1] ~= ARGV[6] then
  refuse('NOT_STOPPED', 'link group ' .. ARGV[1] .. ' is in epoch ' .. f[1] .. ', not the epoch '
    .. ARGV[6] .. ' you reviewed; look at it again (jackpotctl link-groups list)')
end
local lineage = {}
for ancestor in string.gmatch(f[2] or '', '([^:,]+):[^,]+') do
  lineage[#lineage + 1] = ancestor .. ':*'
end
lineage[#lineage + 1] = f[1] .. ':*'
local seq = journal(KEYS[2], KEYS[3], 'link_group_resumed', '', 0, 0,
  {'link_group', ARGV[1], 'previous_epoch', f[1], 'epoch', ARGV[2], 'stopped_because', f[3],
   'reason', ARGV[5], 'by', ARGV[3], 'by_cert', ARGV[4]})
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'lineage', table.concat(lineage, ','), 'stopped', '',
  'since_seq', seq, 'resumed_by', ARGV[3], 'resumed_reason', ARGV[5], 'resumed_from', f[1])
return {ARGV[2], seq}
