-- Shared prelude, prepended to every script by controller/store/scripts.py.
--
-- Money: meters and reserves are integers of microcents (1 cent = 1,000,000). Lua numbers
-- are doubles, exact below 2^53; every stored value is checked against MAX_EXACT before it
-- is written, and every integer is written with '%d', never with tostring (which would
-- print 1e+15). Each script validates everything before its first write, because a Redis
-- script is atomic but does not roll back writes made before an error.

local MICRO = 1000000
local MAX_EXACT = 9007199254740991

local function int(x)
  return string.format('%d', x)
end

local function num(value)
  return tonumber(value) or 0
end

-- Refuse the request: an error reply "CODE message"; the store maps CODE to an error class.
local function refuse(code, message)
  error({err = code .. ' ' .. message})
end

-- Append one journal entry (flat field list) with the next sequence number; return it.
local function journal(journal_key, seq_key, entry_type, meter_id, d_meter, d_reserve, fields)
  local seq = redis.call('INCR', seq_key)
  redis.call('XADD', journal_key, '*', 'seq', seq, 'type', entry_type, 'meter', meter_id,
    'd_meter', int(d_meter), 'd_reserve', int(d_reserve), unpack(fields))
  return seq
end

local function meter_value(meter_id, microcents)
  return {meter_id = meter_id, amount_microcents = int(microcents)}
end

local function check_exact(what, value)
  if value > MAX_EXACT or value < -MAX_EXACT then
    refuse('OVERFLOW', what .. ' would leave the range this controller keeps exactly')
  end
end

-- The meters of a table: KEYS[first..] in the order of ids; refuse a missing one.
-- Each is {id, key, value, reserve, rate, reserve_rate, ceiling, reset, last_hit_seq} in
-- microcents (rates in ppm), plus counters the script adds to (wagers, total).
local function load_meters(keys, first, ids)
  local meters = {list = {}, by_id = {}}
  for i, meter_id in ipairs(ids) do
    local key = keys[first + i - 1]
    local f = redis.call('HMGET', key, 'value_microcents', 'reserve_microcents', 'rate_ppm',
      'reserve_rate_ppm', 'ceiling_cents', 'reset_cents', 'last_hit_seq')
    if not f[1] then
      refuse('NOT_FOUND', 'meter ' .. meter_id .. ' does not exist')
    end
    local ceiling = num(f[5]) * MICRO
    if ceiling == 0 or ceiling > MAX_EXACT then
      ceiling = MAX_EXACT
    end
    local m = {id = meter_id, key = key, value = num(f[1]), reserve = num(f[2]),
      rate = num(f[3]), reserve_rate = num(f[4]), ceiling = ceiling, reset = num(f[6]) * MICRO,
      last_hit_seq = num(f[7]), wagers = 0, total = 0}
    meters.list[i] = m
    meters.by_id[meter_id] = m
  end
  return meters
end

local function meter_values(meters)
  local values = {}
  for i, m in ipairs(meters.list) do
    values[i] = meter_value(m.id, m.value)
  end
  return values
end
