-- Register a table in a link group (idempotent; a different definition is refused).
-- KEYS: 1 table, 2 tables set, 3 meter, 4 journal, 5 seq
-- ARGV: 1 table_id, 2 config JSON, 3 meter_id, 4 game
local table_id, config, meter_id, game = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local meter_game = redis.call('HGET', KEYS[3], 'game')
if not meter_game then
  refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist in this link group')
end
if meter_game ~= game then
  refuse('INVALID', 'table ' .. table_id .. ' deals ' .. game .. ' but meter ' .. meter_id
    .. ' funds ' .. meter_game .. '; a meter links tables of one game')
end
local existing = redis.call('HGET', KEYS[1], 'config')
if existing then
  if existing ~= config then
    refuse('EXISTS', 'table ' .. table_id .. ' is registered with another definition')
  end
  return 'exists'
end
redis.call('HSET', KEYS[1], 'config', config, 'last_round', '0')
redis.call('SADD', KEYS[2], table_id)
journal(KEYS[4], KEYS[5], 'table_registered', meter_id, 0, 0,
  {'table', table_id, 'config', config})
return 'created'
