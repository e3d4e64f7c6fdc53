-- Trim the oldest journal entries that are exported (seq <= the checkpoint's exported_seq)
-- and older than the retention window (stream id time < ARGV[1] ms), at most ARGV[2] of
-- them, in order: their meter and reserve deltas are added to the checkpoint (exact int64
-- sums, HINCRBY) and the checkpoint's seq moves to the last one trimmed, in the same atomic
-- step, so that the audit still proves every meter from the checkpoint. Answers how many
-- entries were trimmed (0: nothing more may go now).
-- KEYS: 1 journal, 2 checkpoint      ARGV: 1 cutoff (ms since the epoch), 2 batch size
local exported = num(redis.call('HGET', KEYS[2], 'exported_seq'))
local cutoff = tonumber(ARGV[1])
local rows = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', tonumber(ARGV[2]))
local trimmed, last_seq = {}, nil
for _, row in ipairs(rows) do
  local id, flat = row[1], row[2]
  local f = {}
  for i = 1, #flat, 2 do
    f[flat[i]] = flat[i + 1]
  end
  local ms = tonumber(string.match(id, '^(%d+)-'))
  if tonumber(f.seq) > exported or ms >= cutoff then
    break
  end
  if f.meter and f.meter ~= '' then
    redis.call('HINCRBY', KEYS[2], 'value:' .. f.meter, f.d_meter)
    redis.call('HINCRBY', KEYS[2], 'reserve:' .. f.meter, f.d_reserve)
  end
  trimmed[#trimmed + 1] = id
  last_seq = f.seq
end
if #trimmed == 0 then
  return 0
end
redis.call('XDEL', KEYS[1], unpack(trimmed))
redis.call('HSET', KEYS[2], 'seq', last_seq)
return #trimmed
