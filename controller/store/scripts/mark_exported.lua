-- Record that the journal up to ARGV[1] is written to an export (never moves back, never
-- beyond the journal). Answers the exported sequence number.
-- KEYS: 1 checkpoint, 2 seq      ARGV: 1 seq exported, 2 when (ms since the epoch, for people)
local seq, exported = tonumber(ARGV[1]), num(redis.call('HGET', KEYS[1], 'exported_seq'))
if seq > num(redis.call('GET', KEYS[2])) then
  refuse('INVALID', 'journal #' .. ARGV[1] .. ' does not exist yet')
end
if seq > exported then
  redis.call('HSET', KEYS[1], 'exported_seq', ARGV[1], 'exported_at_ms', ARGV[2])
  return ARGV[1]
end
return int(exported)
