-- An operator requests that every missing step of a restored link group (restore_collect.lua)
-- be applied as a correction; a second, different operator approves each one
-- (restore_apply.lua). Journaled. The same operator requesting again gets the same answer.
-- KEYS: 1 epoch, 2 journal, 3 seq, 4 restore steps
-- ARGV: 1 link_group_id, 2 actor, 3 actor certificate
-- Answers the number of steps now requested by this operator.
local steps = redis.call('HGETALL', KEYS[4])  -- bounded: restore_collect.lua caps it
local requested, mine = {}, 0
for i = 1, #steps, 2 do
  local s = cjson.decode(steps[i + 1])
  if s.status == 'missing' then
    requested[#requested + 1] = {steps[i], s}
  elseif s.status == 'requested' and s.requested_by == ARGV[2] then
    mine = mine + 1
  end
end
if #requested == 0 then
  if mine > 0 then
    return mine  -- a retry
  end
  refuse('NOT_FOUND', 'link group ' .. ARGV[1] .. ' has no missing step to request (jackpotctl '
    .. 'restore status --link-group ' .. ARGV[1] .. ')')
end
local seq = journal(KEYS[2], KEYS[3], 'corrections_requested', '', 0, 0,
  {'link_group', ARGV[1], 'steps', int(#requested), 'by', ARGV[2], 'by_cert', ARGV[3]})
for _, r in ipairs(requested) do
  r[2].status, r[2].requested_by, r[2].requested_by_cert = 'requested', ARGV[2], ARGV[3]
  r[2].request_seq = seq
  redis.call('HSET', KEYS[4], r[1], cjson.encode(r[2]))
end
return #requested + mine
