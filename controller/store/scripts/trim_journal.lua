-- Trim the oldest journal entries into the link group's signed checkpoint
-- (controller/journal/export.py trim; docs/journal.md). The trimmer read the entries, checked
-- their hash chain from the checkpoint, computed the checkpoint they lead to and signed it;
-- this applies it only if it is exactly that: the first ARGV[2] entries, each exported
-- (seq <= the exported position signed, ARGV[10], itself <= the checkpoint's exported_seq) and
-- older than the retention window (stream id time < ARGV[1] ms), never the stream's last entry
-- (the head the next entry chains to), running on from the checkpoint's seq, ending at ARGV[4]
-- with hash ARGV[5], and summing per meter to ARGV[6], in the epoch signed (ARGV[9], the
-- group's epoch now) with the key handovers signed (ARGV[11], unchanged). Then, in this one
-- atomic step, the entries go and the checkpoint holds the new seq, hash, sums and signature.
-- Anything else (another trim ran, an entry changed) is refused and nothing is written.
-- Answers how many entries were trimmed.
-- KEYS: 1 journal, 2 checkpoint, 3 epoch
-- ARGV: 1 cutoff (ms since the epoch), 2 entry count, 3 the checkpoint's seq now, 4 new seq,
--       5 new hash, 6 new sums JSON {"value:<meter>": "<microcents>", "reserve:<meter>": ..},
--       7 signature (hex), 8 signing key id, 9 epoch id, 10 exported seq signed,
--       11 the key handovers as read ("" none), 12 how many the signature covers,
--       13 the signed message's domain
local function map(flat)
  local m = {}
  for i = 1, #flat, 2 do
    m[flat[i]] = flat[i + 1]
  end
  return m
end
local function moved(why)
  refuse('CHECKPOINT', 'the journal is not as the signed checkpoint was computed from ('
    .. why .. '); nothing was trimmed: trim again')
end
local checkpoint = map(redis.call('HGETALL', KEYS[2]))
local exported = tonumber(ARGV[10])
if not exported or exported > num(checkpoint.exported_seq) then
  moved('the journal is exported to #' .. int(num(checkpoint.exported_seq)) .. ', not #'
    .. ARGV[10])
end
if redis.call('HGET', KEYS[3], 'id') ~= ARGV[9] then
  moved('the link group is not in epoch ' .. ARGV[9] .. ' any more')
end
if (checkpoint.key_handovers or '') ~= ARGV[11] then
  moved('the signing key was handed over meanwhile')
end
local cutoff, count, through = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local expected = num(checkpoint.seq)
if not count or count < 1 then
  refuse('INVALID', 'a trim takes at least one entry')
end
if expected ~= tonumber(ARGV[3]) then
  moved('the checkpoint is at #' .. int(expected) .. ', not #' .. ARGV[3])
end
local sums = {}
for name, value in pairs(checkpoint) do
  if string.find(name, '^value:') or string.find(name, '^reserve:') then
    sums[name] = tonumber(value)
  end
end
local rows = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', count)
local head = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local ids, hash = {}, nil
for _, row in ipairs(rows) do
  local id, f = row[1], map(row[2])
  local seq = tonumber(f.seq)
  local due = expected + 1
  if f.type == 'restored' and tonumber(f.from_seq) == expected
      and tonumber(f.numbered_after or '') and tonumber(f.numbered_after) > expected then
    due = tonumber(f.numbered_after) + 1  -- a restore's recorded jump (journal_chain.py)
  end
  if seq ~= due then
    moved('entry ' .. id .. ' has seq ' .. tostring(f.seq) .. ' where #' .. int(expected + 1)
      .. ' was due')
  end
  if seq > exported or tonumber(string.match(id, '^(%d+)-')) >= cutoff or id == head[1] then
    moved('#' .. int(seq) .. ' is not exported, too young, or the last entry')
  end
  if f.meter and f.meter ~= '' then
    for _, part in ipairs({{'value:', f.d_meter}, {'reserve:', f.d_reserve}}) do
      local name = part[1] .. f.meter
      sums[name] = (sums[name] or 0) + tonumber(part[2])
      check_exact('the checkpoint of meter ' .. f.meter, sums[name])
    end
  end
  ids[#ids + 1] = id
  expected, hash = seq, f.hash
end
if #ids ~= count or expected ~= through or hash ~= ARGV[5] then
  moved('the entries end at #' .. int(expected) .. ', not #' .. ARGV[4] .. ' with the hash signed')
end
local signed = cjson.decode(ARGV[6])
for name, value in pairs(sums) do
  if signed[name] ~= int(value) then
    moved(name .. ' sums to ' .. int(value))
  end
end
for name, _ in pairs(signed) do
  if not sums[name] then
    moved(name .. ' is not in the checkpoint')
  end
end
local fields = {'seq', int(through), 'hash', hash, 'signature', ARGV[7], 'signed_by', ARGV[8],
  'signed_as', ARGV[13], 'epoch', ARGV[9], 'signed_exported_seq', int(exported),
  'signed_handovers', ARGV[12]}
for name, value in pairs(sums) do
  fields[#fields + 1] = name
  fields[#fields + 1] = int(value)
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('XDEL', KEYS[1], unpack(ids))
return #ids
