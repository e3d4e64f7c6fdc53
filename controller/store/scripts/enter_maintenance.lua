-- An operator takes a link group into maintenance, to change its meters or tables: from this
-- step until it leaves, a lockout with a progressive wager (one feeding a meter) is refused
-- (lockout.lua); rounds locked out before still settle and void. Journaled with who and why;
-- the same operator repeating the same request gets its answer again.
-- KEYS: 1 info, 2 maintenance, 3 journal, 4 seq
-- ARGV: 1 link_group_id, 2 actor, 3 actor certificate, 4 reason
-- Answers the journal seq of the entry.
if redis.call('EXISTS', KEYS[1]) == 0 then
  refuse('NOT_FOUND', 'link group ' .. ARGV[1] .. ' does not exist')
end
local m = redis.call('HMGET', KEYS[2], 'state', 'entered_by', 'entered_reason', 'entered_seq')
if m[1] == 'maintenance' then
  if m[2] == ARGV[2] and m[3] == ARGV[4] then
    return m[4]
  end
  refuse('MAINTENANCE', 'link group ' .. ARGV[1] .. ' is already in maintenance since journal #'
    .. m[4] .. ' (' .. m[2] .. ': ' .. m[3] .. ')')
end
local seq = journal(KEYS[3], KEYS[4], 'maintenance_entered', '', 0, 0,
  {'link_group', ARGV[1], 'by', ARGV[2], 'by_cert', ARGV[3], 'reason', ARGV[4]})
redis.call('HSET', KEYS[2], 'state', 'maintenance', 'entered_by', ARGV[2], 'entered_by_cert',
  ARGV[3], 'entered_reason', ARGV[4], 'entered_seq', seq, 'entered_at_ms', now_ms(),
  'left_by', '', 'left_reason', '', 'left_seq', '0', 'left_at_ms', '0')
return seq
