-- Shared by the scripts of meter and table controls (controller/store/scripts.py prepends it
-- after _lib.lua to those scripts only): maintenance, the tables feeding a meter, a table's
-- open rounds, Redis's clock.

-- Redis's clock, ms since the Unix epoch.
local function now_ms()
  return int(clock_ms())
end

-- Cents as dollars for a message: 123456 -> '$1234.56' (exact: integer arithmetic).
local function dollars(cents)
  local sign = ''
  if cents < 0 then
    sign, cents = '-', -cents
  end
  return sign .. '$' .. int(math.floor(cents / 100)) .. '.' .. string.format('%02d', cents % 100)
end

-- Refuse unless the link group is in maintenance: its meters and tables change only then.
local function require_maintenance(maintenance_key, link_group_id, what)
  if redis.call('HGET', maintenance_key, 'state') ~= 'maintenance' then
    refuse('NOT_IN_MAINTENANCE', what .. ' changes only while link group ' .. link_group_id
      .. ' is in maintenance (its tables refuse progressive wagers meanwhile): enter it first '
      .. '(jackpotctl link-groups maintenance enter ' .. link_group_id .. ' --reason ...)')
  end
end

-- The rounds of a table locked out and neither settled nor voided (their round ids, sorted).
local function open_rounds_of(open_rounds_key, table_id)
  local found = {}
  local prefix = table_id .. ':'
  for _, name in ipairs(redis.call('SMEMBERS', open_rounds_key)) do
    if string.sub(name, 1, #prefix) == prefix then
      found[#found + 1] = tonumber(string.sub(name, #prefix + 1))
    end
  end
  table.sort(found)
  return found
end

-- Refuse a change to a table while it has open rounds: a round settles against the table it
-- was locked out with.
local function refuse_open_rounds(open_rounds_key, table_id, what)
  local open = open_rounds_of(open_rounds_key, table_id)
  if #open > 0 then
    local shown = {}
    for i = 1, math.min(#open, 5) do
      shown[i] = int(open[i])
    end
    refuse('OPEN_ROUNDS', what .. ': table ' .. table_id .. ' has ' .. int(#open)
      .. ' open rounds (' .. table.concat(shown, ', ') .. (#open > 5 and ', ...' or '')
      .. '); its dealer settles or voids them first (that works in maintenance)')
  end
end

-- The ids of the tables (KEYS[first..], ids in ARGV-order list `ids`) whose wagers feed
-- `meter_id`. `ids` must be the group's whole table set (else refuse RETRY: it changed).
local function tables_feeding(keys, first, ids, tables_key, meter_id)
  if redis.call('SCARD', tables_key) ~= #ids then
    refuse('RETRY', 'the tables of the link group changed meanwhile')
  end
  local feeding = {}
  for i, table_id in ipairs(ids) do
    if redis.call('SISMEMBER', tables_key, table_id) == 0 then
      refuse('RETRY', 'the tables of the link group changed meanwhile')
    end
    local config = redis.call('HGET', keys[first + i - 1], 'config')
    if config then
      for _, offer in ipairs(cjson.decode(config).wagers or {}) do
        for _, fed in ipairs(offer.meter_ids or {}) do
          if fed == meter_id and feeding[#feeding] ~= table_id then
            feeding[#feeding + 1] = table_id
          end
        end
      end
    end
  end
  return feeding
end
