-- Read-only: one consistent instant of a link group for an export - everything a restore
-- needs besides the journal: the description, the epoch, the journal's last sequence number
-- and checkpoint, every meter's and table's hash, the jackpots and the pending set.
-- KEYS: 1 info, 2 epoch, 3 seq, 4 checkpoint, 5 meters set, 6 tables set, 7 jackpots,
--       8 pending, 9 counters, 10 open rounds, then the meter hashes (ARGV[1]'s order), the
--       table hashes (ARGV[2]'s) and the open rounds' hashes (ARGV[3]'s)
-- ARGV: 1 meter ids JSON, 2 table ids JSON, 3 open round names JSON ("<table>:<round>")
local function map(flat)
  local m = {}
  for i = 1, #flat, 2 do
    m[flat[i]] = flat[i + 1]
  end
  return m
end
local meter_ids, table_ids = cjson.decode(ARGV[1]), cjson.decode(ARGV[2])
local open_ids = cjson.decode(ARGV[3])
local meters, tables, rounds = {}, {}, {}
for i, meter_id in ipairs(meter_ids) do
  meters[meter_id] = map(redis.call('HGETALL', KEYS[10 + i]))
end
for i, table_id in ipairs(table_ids) do
  tables[table_id] = map(redis.call('HGETALL', KEYS[10 + #meter_ids + i]))
end
for i, name in ipairs(open_ids) do
  rounds[name] = map(redis.call('HGETALL', KEYS[10 + #meter_ids + #table_ids + i]))
end
return cjson.encode({info = map(redis.call('HGETALL', KEYS[1])),
  epoch = map(redis.call('HGETALL', KEYS[2])), seq = redis.call('GET', KEYS[3]) or '0',
  checkpoint = map(redis.call('HGETALL', KEYS[4])),
  meter_count = redis.call('SCARD', KEYS[5]), table_count = redis.call('SCARD', KEYS[6]),
  meters = meters, tables = tables, jackpots = map(redis.call('HGETALL', KEYS[7])),
  pending = redis.call('SMEMBERS', KEYS[8]), counters = map(redis.call('HGETALL', KEYS[9])),
  open_count = redis.call('SCARD', KEYS[10]), rounds = rounds})
