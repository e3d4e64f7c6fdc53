-- Stop a link group whose state the controller found suspect (its journal went back, or its
-- epoch changed outside a restore or resume); journaled. Only while the epoch is still
-- ARGV[2], the one judged; a group already stopped keeps its first reason.
-- KEYS: 1 epoch, 2 journal, 3 seq      ARGV: 1 reason, 2 the epoch id judged
local f = redis.call('HMGET', KEYS[1], 'id', 'stopped')
if not f[1] then
  refuse('LOST', 'the link group has no epoch record in Redis: its state is missing')
end
if f[1] ~= ARGV[2] or (f[2] and f[2] ~= '') then
  return f[2] or ''
end
redis.call('HSET', KEYS[1], 'stopped', ARGV[1])
journal(KEYS[2], KEYS[3], 'link_group_stopped', '', 0, 0, {'reason', ARGV[1]})
return ARGV[1]
