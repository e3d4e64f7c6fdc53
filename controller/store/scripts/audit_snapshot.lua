-- Read-only: one consistent instant of a link group for the audit. Returns JSON with the
-- journal's last sequence number, whether the meter set is still exactly ARGV (else the
-- caller reads again), and each named meter's value, reserve and pending count, plus the
-- meter of every pending jackpot. The audit then sums the journal up to that sequence
-- number only, so live play does not cause false differences.
-- With a trimmed journal, the checkpoint (KEYS[5]) gives what the trimmed entries summed to.
-- The stream id of the journal's last entry tells the entries written later (a sequence
-- number could be forged) from those the audit checks. A pending jackpot whose record does
-- not read is answered in 'corrupt_jackpots' (its id and why), never stops the audit.
-- KEYS: 1 seq, 2 meters set, 3 pending, 4 jackpots, 5 checkpoint, 6.. meter hashes, then
--       the journal
-- ARGV: meter ids
local meters = {}
for i, meter_id in ipairs(ARGV) do
  local m = redis.call('HMGET', KEYS[5 + i], 'value_microcents', 'reserve_microcents',
    'pending_jackpots')
  meters[i] = {meter_id = meter_id, value = m[1] or '0', reserve = m[2] or '0',
    pending = m[3] or '0'}
end
local pending_meters = {}
local corrupt_jackpots = {}
for i, jackpot_id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local raw = redis.call('HGET', KEYS[4], jackpot_id)
  pending_meters[i] = ''
  if raw then
    local ok, jackpot = pcall(cjson.decode, raw)
    if not ok or type(jackpot) ~= 'table' then
      corrupt_jackpots[#corrupt_jackpots + 1] = {id = jackpot_id, why = 'its JSON does not parse'}
    elseif tonumber(jackpot.v) ~= SCHEMA_VERSION then
      corrupt_jackpots[#corrupt_jackpots + 1] = {id = jackpot_id,
        why = 'its schema version is ' .. tostring(jackpot.v)}
    elseif type(jackpot.meter_id) ~= 'string' then
      corrupt_jackpots[#corrupt_jackpots + 1] = {id = jackpot_id, why = 'it names no meter'}
    else
      pending_meters[i] = jackpot.meter_id
    end
  end
end
local checkpoint = {}
local flat = redis.call('HGETALL', KEYS[5])
for i = 1, #flat, 2 do
  checkpoint[flat[i]] = flat[i + 1]
end
local last = redis.call('XREVRANGE', KEYS[6 + #ARGV], '+', '-', 'COUNT', 1)[1]
return cjson.encode({seq = redis.call('GET', KEYS[1]) or '0',
  last_entry_id = last and last[1] or '',
  same_meters = same_members(KEYS[2], ARGV), meters = meters,
  pending_meters = pending_meters, checkpoint = checkpoint, corrupt_jackpots = corrupt_jackpots})
