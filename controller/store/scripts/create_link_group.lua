-- Create a link group and its epoch record (idempotent: the same description again returns
-- it unchanged). The epoch's random id is made by the caller (scripts have no good source).
-- KEYS: 1 info, 2 journal, 3 seq, 4 epoch
-- ARGV: 1 link_group_id, 2 description, 3 actor, 4 the new epoch's id
local stored = redis.call('HMGET', KEYS[1], 'description', 'v')
local existing = stored[1]
if existing then
  check_version('link group ' .. ARGV[1], stored[2])
  if existing ~= ARGV[2] then
    refuse('EXISTS', 'link group ' .. ARGV[1] .. ' exists with another description')
  end
  return existing
end
redis.call('HSET', KEYS[1], 'v', SCHEMA_VERSION, 'link_group_id', ARGV[1], 'description',
  ARGV[2])
local seq = journal(KEYS[2], KEYS[3], 'link_group_created', '', 0, 0,
  {'link_group', ARGV[1], 'description', ARGV[2], 'by', ARGV[3], 'epoch', ARGV[4]})
redis.call('HSET', KEYS[4], 'id', ARGV[4], 'lineage', '', 'stopped', '', 'since_seq', seq)
return ARGV[2]
