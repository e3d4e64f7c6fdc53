-- Wind a meter down, the first step of ending a link (docs/staged-changes.md, "Ending a
-- link"): from now on it takes no contributions - its rate of progression and reserve rate
-- become 0, so a lockout adds nothing and reads nothing more - while progressive wagers are
-- still accepted and its paytable still pays it: the meter stays until won (NJ 13:69D-1.52(f),
-- N.M. 15.1.24.12(E): never decreased but by a win), or its money moves to another meter of
-- the link group by retire_meter.lua under an approval reference. In maintenance; journaled
-- (meter_wound_down, with the old rates, who and why). A must-hit-by meter is refused: without
-- contributions it would never reach its hit point (retire it to another meter instead). The
-- same request again answers 'unchanged'.
-- KEYS: 1 meter, 2 maintenance, 3 journal, 4 seq
-- ARGV: 1 meter_id, 2 link_group_id, 3 actor, 4 actor certificate, 5 reason
-- Answers {'wound_down' | 'unchanged', the meter_wound_down entry's seq}.
local meter_id = ARGV[1]
local stored = redis.call('HMGET', KEYS[1], 'v', 'rate_ppm', 'reserve_rate_ppm', 'kind',
  'wound_down_seq', 'staged_seq')
if not stored[1] then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
end
check_version('meter ' .. meter_id, stored[1])
if stored[5] then
  return {'unchanged', stored[5]}
end
if stored[4] == 'must_hit_by' then
  refuse('INVALID', 'meter ' .. meter_id .. ' is a must-hit-by meter: without contributions it '
    .. 'would never reach its hit point; retire it to another meter instead (jackpotctl meters '
    .. 'retire ' .. meter_id .. ' --to METER --approval ...)')
end
if stored[6] then
  refuse('STAGED', 'meter ' .. meter_id .. ' has a change staged for its next hit (journal #'
    .. stored[6] .. '); cancel it first (jackpotctl meters cancel-staged)')
end
require_maintenance(KEYS[2], ARGV[2], 'meter ' .. meter_id)
local seq = journal(KEYS[3], KEYS[4], 'meter_wound_down', meter_id, 0, 0,
  {'old_rate_ppm', stored[2], 'old_reserve_rate_ppm', stored[3], 'rate_ppm', '0',
   'reserve_rate_ppm', '0', 'by', ARGV[3], 'by_cert', ARGV[4], 'reason', ARGV[5]})
redis.call('HSET', KEYS[1], 'rate_ppm', '0', 'reserve_rate_ppm', '0', 'wound_down_seq', int(seq))
return {'wound_down', int(seq)}
