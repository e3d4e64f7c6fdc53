-- Cancel the change staged for a meter (stage_meter_change.lua) before a hit applied it;
-- journaled (meter_change_cancelled) with the staging entry's seq, who and why. Nothing else
-- changes. The same cancellation again (nothing staged any more, and the meter's last
-- cancellation, its field 'staged_cancelled', is this caller's with this reason) answers
-- 'unchanged'.
-- KEYS: 1 meter, 2 journal, 3 seq
-- ARGV: 1 meter_id, 2 actor, 3 actor certificate, 4 reason, 5 the staging entry's seq the
--       caller saw ('' when it saw none: then only a repeat is accepted)
-- Answers {'cancelled' | 'unchanged', the staging entry's seq}.
local meter_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'v', 'staged_change', 'staged_seq',
  'staged_cancelled')
if not stored[1] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, stored[1])
if not stored[2] then
  local last = stored_object('meter', meter_id, KEYS[1], 'staged_cancelled', stored[4])
  if last and last.by == ARGV[2] and last.reason == ARGV[4]
      and (ARGV[5] == '' or ARGV[5] == last.staged_seq) then
    return {'unchanged', last.staged_seq}
  end
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' has no staged change to cancel (a hit may '
    .. 'have applied it: jackpotctl meters list)')
end
if ARGV[5] ~= '' and ARGV[5] ~= stored[3] then
  refuse('CHANGED', 'the change staged for meter ' .. meter_id .. ' is journal #'
    .. tostring(stored[3]) .. ', not #' .. ARGV[5] .. '; look at it again')
end
local cancelled = '{"by":' .. cjson.encode(ARGV[2]) .. ',"reason":' .. cjson.encode(ARGV[4])
  .. ',"staged_seq":' .. cjson.encode(stored[3] or '') .. '}'
journal(KEYS[2], KEYS[3], 'meter_change_cancelled', meter_id, 0, 0,
  {'staged_seq', stored[3] or '', 'cancelled', cancelled, 'by', ARGV[2], 'by_cert', ARGV[3],
   'reason', ARGV[4]})
redis.call('HDEL', KEYS[1], 'staged_change', 'staged_seq')
redis.call('HSET', KEYS[1], 'staged_cancelled', cancelled)
return {'cancelled', stored[3] or ''}
