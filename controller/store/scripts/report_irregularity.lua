-- Record a seeded irregularity whose effect leaves the round to be settled: at Texas Hold 'Em
-- Bonus (§ 647a.13(a), (d)) the rest of the round is void and the Texas Hold 'Em Bonus Wagers
-- settle (the table then settles with rest_of_round_void). One whose effect is a void is
-- applied by void_round.lua instead. Journaled with its kind, effect and section, kept in the
-- irregularities hash and counted. Idempotent per (round, kind): the same report again is a
-- replay. A settled or voided round is refused.
-- KEYS: 1 round, 2 journal, 3 seq, 4 epoch, 5 counters, 6 irregularities
-- ARGV: 1 table_id, 2 round_id, 3 kind, 4 effect, 5 section, 6 reason, 7 link_group_id,
--       8, 9 the table's last acknowledged journal position (epoch id, seq)
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, kind = ARGV[1], ARGV[2], ARGV[3]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local epoch = check_epoch(KEYS[4], KEYS[2], KEYS[3], 'table ' .. table_id, ARGV[8], ARGV[9])

local round = redis.call('HMGET', KEYS[1], 'state', 'v', 'irregularity_reply:' .. kind)
local state = round[1]
if not state then
  refuse('NOT_LOCKED', where .. ' was never locked out (or its record has expired); an '
    .. 'irregularity is reported for a locked-out round')
end
check_version(where, round[2])
if round[3] then
  return {round[3], 'replay', epoch, redis.call('GET', KEYS[3]) or '0'}
end
if state == 'settled' then
  refuse('SETTLED', where .. ' is already settled; an irregularity is reported before '
    .. 'settlement')
end
if state == 'voided' then
  refuse('VOIDED', where .. ' was voided; its wagers were returned')
end

local seq = journal(KEYS[2], KEYS[3], 'irregularity', '', 0, 0,
  {'table', table_id, 'round', round_id, 'kind', kind, 'effect', ARGV[4], 'section', ARGV[5],
   'reason', ARGV[6]})
local record = {v = SCHEMA_VERSION, link_group_id = ARGV[7], table_id = table_id,
  round_id = round_id, kind = kind, effect = ARGV[4], section = ARGV[5], status = 'applied',
  journal_seq = int(seq),
  reported_at_ms = int(clock_ms())}
redis.call('HSET', KEYS[6], table_id .. ':' .. round_id .. ':' .. kind, cjson.encode(record))
count(KEYS[5], {'irregularities', kind}, 1)
local reply = cjson.encode({table_id = table_id, round_id = round_id, kind = kind,
  effect = ARGV[4], section = ARGV[5], reason = ARGV[6]})
redis.call('HSET', KEYS[1], 'irregularity_reply:' .. kind, reply)
if ARGV[4] == 'bonus_settles' then  -- settle.lua then refuses a settlement of the whole round
  redis.call('HSET', KEYS[1], 'rest_void', ARGV[6])
end
return {reply, 'new', epoch, int(seq)}
