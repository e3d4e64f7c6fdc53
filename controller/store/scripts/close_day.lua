-- Close a gaming day of one link group: journal its statement (controller/actions/day_close.py
-- computed it from the journal and signed its digest), once. The closed days are a hash of
-- the group, gaming day (YYYY-MM-DD) -> '<seq of its day_closed entry> <digest>'.
-- Idempotent: a day closed with this digest answers its entry's seq and writes nothing; a
-- closed day and another digest is refused (a statement of a closed day never changes). A day
-- not yet ended by Redis's clock (before ARGV[3], the next day's first ms) is refused, and so
-- is a journal that moved on since the statement was computed (its seq is not ARGV[4]: the
-- entries after the day it names, ARGV[6], would be wrong): compute again.
-- KEYS: 1 closed days, 2 journal, 3 seq
-- ARGV: 1 gaming day, 2 digest, 3 the day's end (ms since the epoch), 4 the journal's seq
--       read, 5 the statement JSON, 6 the liability moved after the day up to seq ARGV[4]
--       JSON, 7 signature (hex), 8 signing key id, 9 zone, 10 start hour, 11 through seq,
--       12 who closes it
local day, digest = ARGV[1], ARGV[2]
if not string.match(day, '^%d%d%d%d%-%d%d%-%d%d$') or not string.match(digest, '^%x+$')
    or #digest ~= 64 then
  refuse('BOUND', 'a gaming day is YYYY-MM-DD and a digest 64 hex digits')
end
local closed = redis.call('HGET', KEYS[1], day)
if closed then
  local seq, held = string.match(closed, '^(%d+) (%x+)$')
  if held == digest then
    return tonumber(seq)
  end
  refuse('DECIDED', 'gaming day ' .. day .. ' was closed at journal #' .. tostring(seq)
    .. ' with statement ' .. string.sub(tostring(held), 1, 16) .. '...; this statement ('
    .. string.sub(digest, 1, 16) .. '...) differs: a closed day is never closed again '
    .. 'differently (jackpotctl day verify shows which is the journal\'s)')
end
local ends = tonumber(ARGV[3])
if not ends or clock_ms() < ends then
  refuse('NOT_ENDED', 'gaming day ' .. day .. ' has not ended (it ends at ' .. ARGV[3]
    .. ' ms since the epoch, Redis\'s clock is at ' .. int(clock_ms()) .. ')')
end
local seq = tonumber(redis.call('GET', KEYS[3]) or '0')
if seq ~= tonumber(ARGV[4]) then
  refuse('RETRY', 'the journal moved on to #' .. int(seq) .. ' while the statement was '
    .. 'computed at #' .. ARGV[4] .. '; compute it again')
end
local written = journal(KEYS[2], KEYS[3], 'day_closed', '', 0, 0,
  {'day', day, 'zone', ARGV[9], 'start_hour', ARGV[10], 'through_seq', ARGV[11], 'digest',
   digest, 'statement', ARGV[5], 'after_day', ARGV[6], 'signature', ARGV[7], 'signed_by',
   ARGV[8], 'by', ARGV[12]})
redis.call('HSET', KEYS[1], day, int(written) .. ' ' .. digest)
return written
