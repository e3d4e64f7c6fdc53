-- The last step of a restore (controller/journal_export.py): everything else of the link
-- group is written; this makes it a state again. A new epoch begins whose lineage holds the
-- exported epoch up to the export's sequence number (a table acknowledged more of it stops
-- the group: those steps are lost), and the restore is journaled with who, why and from what.
-- KEYS: 1 epoch, 2 journal, 3 seq
-- ARGV: 1 link_group_id, 2 new epoch id, 3 exported epoch id, 4 its lineage, 5 exported seq,
--       6 actor, 7 reason, 8 source (file and SHA-256)
if redis.call('EXISTS', KEYS[1]) == 1 then
  refuse('EXISTS', 'link group ' .. ARGV[1] .. ' has an epoch record; restore only into a '
    .. 'Redis that lost the link group')
end
if num(redis.call('GET', KEYS[3])) ~= tonumber(ARGV[5]) then
  refuse('INVALID', 'the restored journal does not end at #' .. ARGV[5])
end
local lineage = ARGV[4]
if lineage ~= '' then
  lineage = lineage .. ','
end
lineage = lineage .. ARGV[3] .. ':' .. ARGV[5]
local seq = journal(KEYS[2], KEYS[3], 'restored', '', 0, 0,
  {'link_group', ARGV[1], 'epoch', ARGV[2], 'previous_epoch', ARGV[3], 'from_seq', ARGV[5],
   'by', ARGV[6], 'reason', ARGV[7], 'source', ARGV[8]})
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'lineage', lineage, 'stopped', '', 'since_seq', seq)
return seq
