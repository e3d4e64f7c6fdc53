-- Create a link group (idempotent: the same description again returns it unchanged).
-- KEYS: 1 info, 2 journal, 3 seq      ARGV: 1 link_group_id, 2 description, 3 actor
local existing = redis.call('HGET', KEYS[1], 'description')
if existing then
  if existing ~= ARGV[2] then
    refuse('EXISTS', 'link group ' .. ARGV[1] .. ' exists with another description')
  end
  return existing
end
redis.call('HSET', KEYS[1], 'link_group_id', ARGV[1], 'description', ARGV[2])
journal(KEYS[2], KEYS[3], 'link_group_created', '', 0, 0,
  {'link_group', ARGV[1], 'description', ARGV[2], 'by', ARGV[3]})
return ARGV[2]
