-- The cage or floor records that an approved jackpot was paid by hand: approved -> paid.
-- No money moves here (the award left the meter, or was fixed, when it was hit); the step
-- completes the hand-pay slip with who paid, when (Redis's clock, ms) and the payer's note
-- (e.g. a receipt number), and journals it. The payer is the caller's certificate identity
-- and is never the approver (two people: one validates, another pays; not checked for the one
-- development identity of an insecure controller, ARGV[5] empty). The same payer
-- repeating it gets the record unchanged; paying a jackpot not approved, or paid by another,
-- is refused.
-- KEYS: 1 jackpots, 2 journal, 3 seq
-- ARGV: 1 jackpot_id, 2 payer identity, 3 payer certificate fingerprint, 4 note,
--       5 'two_people' (the payer must not be the approver) or 
local jackpot_id, payer, note = ARGV[1], ARGV[2], ARGV[4]
local raw = redis.call('HGET', KEYS[1], jackpot_id)
if not raw then
  refuse('NOT_FOUND', 'jackpot ' .. jackpot_id .. ' does not exist')
end
local jackpot = cjson.decode(raw)
check_version('jackpot ' .. jackpot_id, jackpot.v)
if jackpot.status == 'paid' then
  if jackpot.paid_by == payer then
    return raw
  end
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already paid by ' .. jackpot.paid_by
    .. '; a jackpot is paid once')
end
if jackpot.status == 'pending' then
  refuse('NOT_APPROVED', 'jackpot ' .. jackpot_id .. ' awaits a supervisor\'s validation; '
    .. 'it is paid only once approved')
end
if jackpot.status == 'rejected' then
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was rejected by ' .. jackpot.reviewed_by
    .. ' (' .. jackpot.note .. '); a rejected jackpot is not paid')
end
if jackpot.status ~= 'approved' then
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' is ' .. tostring(jackpot.status)
    .. '; only an approved jackpot is paid')
end
if ARGV[5] == 'two_people' and jackpot.reviewed_by == payer then
  refuse('SAME_PERSON', 'jackpot ' .. jackpot_id .. ' was approved by ' .. payer
    .. '; its payment is recorded by another identity (one validates, another pays)')
end
jackpot.status, jackpot.paid_by, jackpot.paid_by_cert, jackpot.paid_note = 'paid', payer,
  ARGV[3], note
jackpot.paid_at_ms = int(clock_ms())
raw = cjson.encode(jackpot)
redis.call('HSET', KEYS[1], jackpot_id, raw)
journal(KEYS[2], KEYS[3], 'jackpot_paid', jackpot.meter_id, 0, 0,
  {'jackpot', jackpot_id, 'amount_cents', jackpot.amount_cents, 'payer', payer,
   'payer_cert', ARGV[3], 'note', note, 'table', jackpot.table_id, 'round', jackpot.round_id})
return raw
