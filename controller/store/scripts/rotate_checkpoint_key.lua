-- Hand a link group's checkpoint key over to a new key (controller/journal/export.py
-- rotate_key; docs/journal.md "Key handling"). The old key signed the handover (ARGV[6]),
-- naming the new key, this epoch and the sequence number of the entry written here; the new
-- key signed the checkpoint anew over the handover list (ARGV[5]). Applied only if nothing
-- moved since they were signed: the checkpoint still at #ARGV[1] with the handovers ARGV[2],
-- the epoch ARGV[3], the journal's next entry #ARGV[4], and the exported position signed
-- (ARGV[11]) not above the export marker. Then, in one atomic step: the journal entry
-- 'checkpoint_key_rotated' and the checkpoint's handovers and signature. Answers the entry's
-- sequence number.
-- KEYS: 1 journal, 2 seq, 3 checkpoint, 4 epoch
-- ARGV: 1 checkpoint seq as read, 2 handovers as read ("" none), 3 epoch id, 4 the entry's
--       seq, 5 the new handover list (JSON), 6 the handover (JSON), 7 old key id,
--       8 new key id, 9 who, 10 the checkpoint's new signature ("" at #0),
--       11 exported seq signed, 12 signed message domain, 13 handovers signed (count)
local function moved(why)
  refuse('CHECKPOINT', 'the checkpoint moved while the key handover was signed (' .. why
    .. '); nothing was written: rotate again')
end
local f = redis.call('HMGET', KEYS[3], 'seq', 'key_handovers', 'exported_seq')
if int(num(f[1])) ~= ARGV[1] then
  moved('it is at #' .. int(num(f[1])))
end
if (f[2] or '') ~= ARGV[2] then
  moved('another handover was written')
end
if redis.call('HGET', KEYS[4], 'id') ~= ARGV[3] then
  moved('the link group is not in epoch ' .. ARGV[3] .. ' any more')
end
if int(num(redis.call('GET', KEYS[2])) + 1) ~= ARGV[4] then
  moved('the journal is not at #' .. ARGV[4] .. ' any more')
end
if ARGV[10] ~= '' and num(ARGV[11]) > num(f[3]) then
  moved('the journal is exported to #' .. int(num(f[3])) .. ', not #' .. ARGV[11])
end
local seq = journal(KEYS[1], KEYS[2], 'checkpoint_key_rotated', '', 0, 0,
  {'from_key', ARGV[7], 'to_key', ARGV[8], 'handover', ARGV[6], 'by', ARGV[9]})
local fields = {'key_handovers', ARGV[5]}
if ARGV[10] ~= '' then
  fields = {'key_handovers', ARGV[5], 'signature', ARGV[10], 'signed_by', ARGV[8],
    'signed_as', ARGV[12], 'epoch', ARGV[3], 'signed_exported_seq', ARGV[11],
    'signed_handovers', ARGV[13]}
end
redis.call('HSET', KEYS[3], unpack(fields))
return seq
