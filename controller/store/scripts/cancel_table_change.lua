-- Cancel the change staged for a table (stage_table_change.lua) before a hit applied it;
-- journaled (table_change_cancelled) with the staging entry's seq, who and why; the meter it
-- waited for no longer lists the table. The same cancellation again (nothing staged any
-- more, and the table's last cancellation, its field 'staged_cancelled', is this caller's
-- with this reason) answers 'unchanged'.
-- KEYS: 1 table, 2 the meter the change waits for, 3 journal, 4 seq
-- ARGV: 1 table_id, 2 actor, 3 actor certificate, 4 reason, 5 the staging entry's seq the
--       caller saw ('' when it saw none: then only a repeat is accepted), 6 meter_id
-- Answers {'cancelled' | 'unchanged', the staging entry's seq}.
local table_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'config', 'staged_change', 'staged_seq',
  'staged_cancelled')
if not stored[1] then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
if not stored[2] then
  local last = stored_object('table', table_id, KEYS[1], 'staged_cancelled', stored[4])
  if last and last.by == ARGV[2] and last.reason == ARGV[4]
      and (ARGV[5] == '' or ARGV[5] == last.staged_seq) then
    return {'unchanged', last.staged_seq}
  end
  refuse('NOT_FOUND', 'table ' .. table_id .. ' has no staged change to cancel (a hit may '
    .. 'have applied it: jackpotctl tables list)')
end
if ARGV[5] ~= '' and ARGV[5] ~= stored[3] then
  refuse('CHANGED', 'the change staged for table ' .. table_id .. ' is journal #'
    .. tostring(stored[3]) .. ', not #' .. ARGV[5] .. '; look at it again')
end
local ok, s = pcall(cjson.decode, stored[2])
if ok and type(s) == 'table' and s.meter ~= ARGV[6] then
  refuse('CHANGED', 'the change staged for table ' .. table_id .. ' waits for meter '
    .. tostring(s.meter) .. '; look at it again')
end
local raw = redis.call('HGET', KEYS[2], 'staged_tables')
local waiting = {}
local listed, ids = pcall(cjson.decode, raw or '[]')
for _, id in ipairs(listed and type(ids) == 'table' and ids or {}) do
  if id ~= table_id then
    waiting[#waiting + 1] = id
  end
end
if #waiting > 0 then
  redis.call('HSET', KEYS[2], 'staged_tables', cjson.encode(waiting))
else
  redis.call('HDEL', KEYS[2], 'staged_tables')
end
local cancelled = '{"by":' .. cjson.encode(ARGV[2]) .. ',"reason":' .. cjson.encode(ARGV[4])
  .. ',"staged_seq":' .. cjson.encode(stored[3] or '') .. '}'
journal(KEYS[3], KEYS[4], 'table_change_cancelled', '', 0, 0,
  {'table', table_id, 'at_meter', ARGV[6], 'staged_seq', stored[3] or '', 'cancelled', cancelled,
   'by', ARGV[2], 'by_cert', ARGV[3], 'reason', ARGV[4]})
redis.call('HDEL', KEYS[1], 'staged_change', 'staged_seq')
redis.call('HSET', KEYS[1], 'staged_cancelled', cancelled)
return {'cancelled', stored[3] or ''}
