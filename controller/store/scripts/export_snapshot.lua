-- Read-only: one consistent instant of a link group for an export - everything a restore
-- needs besides the journal: the description, the epoch, the journal's last sequence number
-- and checkpoint, every meter's and table's hash (retired tables' too: their ids are never
-- registered again), the jackpots and the pending set, the irregularities, the maintenance,
-- the adjustments and the pending set, the retired meters. Never a meter's mystery key: the
-- export holds no secret hit point (restore_epoch.lua starts a new cycle instead).
-- KEYS: 1 info, 2 epoch, 3 seq, 4 checkpoint, 5 meters set, 6 tables set, 7 jackpots,
--       8 pending, 9 counters, 10 open rounds, 11 irregularities, 12 maintenance,
--       13 adjustments, 14 pending adjustments, 15 retired meters, 16 closed gaming days,
--       17 corrections, then the meter hashes
--       (ARGV[1]'s order), the table hashes (ARGV[2]'s), the open rounds' hashes (ARGV[3]'s)
--       and the retired tables' hashes (ARGV[4]'s)
-- ARGV: 1 meter ids JSON, 2 table ids JSON, 3 open round names JSON ("<table>:<round>"),
--       4 ids JSON of the group's tables not in its tables set (retired ones, or ones being
--       registered: only hashes with 'retired_seq' are answered)
-- 'same_sets' is false when the meters, tables or open rounds sets are no longer exactly the
-- ids read before the script (a round settled and another locked out meanwhile keeps the
-- sizes): the caller reads again, never exports a settled round as open.
local function map(flat)
  local m = {}
  for i = 1, #flat, 2 do
    m[flat[i]] = flat[i + 1]
  end
  return m
end
local FIXED = 17
local meter_ids, table_ids = cjson.decode(ARGV[1]), cjson.decode(ARGV[2])
local open_ids, retired_ids = cjson.decode(ARGV[3]), cjson.decode(ARGV[4])
local meters, tables, rounds, retired_tables = {}, {}, {}, {}
for i, meter_id in ipairs(meter_ids) do
  meters[meter_id] = map(redis.call('HGETALL', KEYS[FIXED + i]))
end
for i, table_id in ipairs(table_ids) do
  tables[table_id] = map(redis.call('HGETALL', KEYS[FIXED + #meter_ids + i]))
end
for i, name in ipairs(open_ids) do
  rounds[name] = map(redis.call('HGETALL', KEYS[FIXED + #meter_ids + #table_ids + i]))
end
local first_retired = FIXED + #meter_ids + #table_ids + #open_ids
for i, table_id in ipairs(retired_ids) do
  local fields = map(redis.call('HGETALL', KEYS[first_retired + i]))
  if fields.retired_seq and redis.call('SISMEMBER', KEYS[6], table_id) == 0 then
    retired_tables[table_id] = fields
  end
end
return cjson.encode({info = map(redis.call('HGETALL', KEYS[1])),
  epoch = map(redis.call('HGETALL', KEYS[2])), seq = redis.call('GET', KEYS[3]) or '0',
  checkpoint = map(redis.call('HGETALL', KEYS[4])),
  same_sets = same_members(KEYS[5], meter_ids) and same_members(KEYS[6], table_ids)
    and same_members(KEYS[10], open_ids),
  meters = meters, tables = tables, jackpots = map(redis.call('HGETALL', KEYS[7])),
  pending = redis.call('SMEMBERS', KEYS[8]), counters = map(redis.call('HGETALL', KEYS[9])),
  rounds = rounds,
  irregularities = map(redis.call('HGETALL', KEYS[11])),
  maintenance = map(redis.call('HGETALL', KEYS[12])),
  adjustments = map(redis.call('HGETALL', KEYS[13])),
  pending_adjustments = redis.call('SMEMBERS', KEYS[14]),
  retired_meters = map(redis.call('HGETALL', KEYS[15])), retired_tables = retired_tables,
  days_closed = map(redis.call('HGETALL', KEYS[16])),
  corrections = map(redis.call('HGETALL', KEYS[17]))})
