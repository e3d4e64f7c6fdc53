-- Check a table's last acknowledged journal position against the link group's state (see
-- check_epoch); a table ahead of Redis stops the group. Answers {epoch id, journal seq}.
-- KEYS: 1 epoch, 2 journal, 3 seq
-- ARGV: 1 who (e.g. "table cs-1"), 2 epoch id, 3 seq (followed by '!' when verified)
local epoch = check_epoch(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
return {epoch, redis.call('GET', KEYS[3]) or '0'}
