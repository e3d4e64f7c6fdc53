-- Retire a table while its link group is in maintenance and it has no open round: it leaves
-- the link group (its definition is kept as 'retired_config'; every later step of it is
-- refused as for an unknown table, and its id is never registered again). Journaled with who
-- and why; the same operator repeating the same retirement gets its answer again.
-- KEYS: 1 table, 2 tables set, 3 maintenance, 4 journal, 5 seq, 6 open rounds
-- ARGV: 1 table_id, 2 actor, 3 actor certificate, 4 reason, 5 link_group_id
-- Answers the journal seq of the entry.
local table_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'config', 'retired_seq', 'retired_by',
  'retired_reason')
if stored[2] then
  if stored[3] == ARGV[2] and stored[4] == ARGV[4] then
    return stored[2]
  end
  refuse('NOT_FOUND', 'table ' .. table_id .. ' was retired already (journal #' .. stored[2]
    .. ')')
end
if not stored[1] then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
require_maintenance(KEYS[3], ARGV[5], 'table ' .. table_id)
refuse_open_rounds(KEYS[6], table_id, 'table ' .. table_id .. ' cannot be retired now')
local seq = journal(KEYS[4], KEYS[5], 'table_retired', '', 0, 0,
  {'table', table_id, 'config', stored[1], 'by', ARGV[2], 'by_cert', ARGV[3],
   'reason', ARGV[4]})
redis.call('HSET', KEYS[1], 'retired_config', stored[1], 'retired_seq', seq, 'retired_by',
  ARGV[2], 'retired_by_cert', ARGV[3], 'retired_reason', ARGV[4], 'retired_at_ms', now_ms())
redis.call('HDEL', KEYS[1], 'config')
redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('SREM', KEYS[2], table_id)
return seq
