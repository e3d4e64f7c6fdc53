-- Give a link group of an earlier release its epoch record, once (journaled); a group that
-- has one keeps it. Answers the epoch id.
-- KEYS: 1 info, 2 epoch, 3 journal, 4 seq      ARGV: 1 link_group_id, 2 new epoch id, 3 actor
local existing = redis.call('HGET', KEYS[2], 'id')
if existing then
  return existing
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  refuse('NOT_FOUND', 'link group ' .. ARGV[1] .. ' does not exist')
end
local seq = journal(KEYS[3], KEYS[4], 'epoch_created', '', 0, 0,
  {'link_group', ARGV[1], 'epoch', ARGV[2], 'by', ARGV[3],
   'from_seq', redis.call('GET', KEYS[4]) or '0'})
redis.call('HSET', KEYS[2], 'id', ARGV[2], 'lineage', '', 'stopped', '', 'since_seq', seq)
return ARGV[2]
