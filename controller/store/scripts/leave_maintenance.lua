-- An operator ends a link group's maintenance: its tables take progressive wagers again.
-- Journaled with who and why; the same operator repeating the same request gets its answer.
-- KEYS: 1 maintenance, 2 journal, 3 seq
-- ARGV: 1 link_group_id, 2 actor, 3 actor certificate, 4 reason
-- Answers the journal seq of the entry.
local m = redis.call('HMGET', KEYS[1], 'state', 'left_by', 'left_reason', 'left_seq',
  'entered_seq')
if m[1] ~= 'maintenance' then
  if m[2] == ARGV[2] and m[3] == ARGV[4] then
    return m[4]
  end
  refuse('NOT_IN_MAINTENANCE', 'link group ' .. ARGV[1] .. ' is not in maintenance')
end
local seq = journal(KEYS[2], KEYS[3], 'maintenance_left', '', 0, 0,
  {'link_group', ARGV[1], 'entered_seq', m[5], 'by', ARGV[2], 'by_cert', ARGV[3],
   'reason', ARGV[4]})
redis.call('HSET', KEYS[1], 'state', 'play', 'left_by', ARGV[2], 'left_by_cert', ARGV[3],
  'left_reason', ARGV[4], 'left_seq', seq, 'left_at_ms', now_ms())
return seq
