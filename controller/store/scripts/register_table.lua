-- Register a table in a link group (idempotent; a different definition is refused).
-- KEYS: 1 table, 2 tables set, 3 journal, 4 seq, 5.. the meters its wagers feed
-- ARGV: 1 table_id, 2 config JSON, 3 meter ids JSON (KEYS[5..]'s order), 4 game, 5 actor
local table_id, config, game = ARGV[1], ARGV[2], ARGV[4]
for i, meter_id in ipairs(cjson.decode(ARGV[3])) do
  local meter_game = redis.call('HGET', KEYS[4 + i], 'game')
  if not meter_game then
    refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist in this link group')
  end
  if meter_game ~= game then
    refuse('INVALID', 'table ' .. table_id .. ' deals ' .. game .. ' but meter ' .. meter_id
      .. ' funds ' .. meter_game .. '; a meter links tables of one game')
  end
end
local existing = redis.call('HGET', KEYS[1], 'config')
local retired = redis.call('HGET', KEYS[1], 'retired_seq')
if retired then
  refuse('EXISTS', 'table ' .. table_id .. ' was retired (journal #' .. retired .. '); a table id '
    .. 'is never registered again: register the table under a new id')
end
if existing then
  if existing ~= config then
    refuse('EXISTS', 'table ' .. table_id .. ' is registered with another definition')
  end
  return 'exists'
end
redis.call('HSET', KEYS[1], 'config', config, 'last_round', '0')
redis.call('SADD', KEYS[2], table_id)
journal(KEYS[3], KEYS[4], 'table_registered', '', 0, 0, {'table', table_id, 'config', config, 'by', ARGV[5]})
return 'created'
