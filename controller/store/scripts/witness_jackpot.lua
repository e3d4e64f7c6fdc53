-- A second person records that it witnessed the hand-pay of an approved jackpot (payout
-- compliance, docs/payout-compliance.md): before the payment is recorded, approved stays
-- approved and the slip gains who witnessed it (the caller's certificate identity and its
-- fingerprint), when (Redis's clock, ms) and a note; journaled as 'jackpot_witnessed'. No
-- money moves. The payer may not be its own witness (pay_jackpot.lua refuses a payment by the
-- recorded witness). The same witness repeating it gets the record unchanged (also once it is
-- paid); another witness once one is recorded, or a jackpot not approved, is refused.
-- KEYS: 1 jackpots, 2 journal, 3 seq
-- ARGV: 1 jackpot_id, 2 witness identity, 3 witness certificate fingerprint, 4 note
local jackpot_id, witness, note = ARGV[1], ARGV[2], ARGV[4]
local raw = redis.call('HGET', KEYS[1], jackpot_id)
if not raw then
  refuse('NOT_FOUND', 'jackpot ' .. jackpot_id .. ' does not exist')
end
local jackpot = cjson.decode(raw)
check_version('jackpot ' .. jackpot_id, jackpot.v)
local recorded = jackpot.witnessed_by or ''
if recorded == witness then
  return raw
end
if recorded ~= '' then
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already witnessed by ' .. recorded
    .. '; a hand-pay has one witness')
end
if jackpot.status == 'paid' then
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already paid by ' .. jackpot.paid_by
    .. '; a witness is recorded before the payment')
end
if jackpot.status == 'pending' then
  refuse('NOT_APPROVED', 'jackpot ' .. jackpot_id .. ' awaits a supervisor\'s validation; '
    .. 'its hand-pay is witnessed only once approved')
end
if jackpot.status ~= 'approved' then
  refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' is ' .. tostring(jackpot.status)
    .. '; only an approved jackpot\'s hand-pay is witnessed')
end
jackpot.witnessed_by, jackpot.witnessed_by_cert, jackpot.witness_note = witness, ARGV[3], note
jackpot.witnessed_at_ms = int(clock_ms())
local seq = journal(KEYS[2], KEYS[3], 'jackpot_witnessed', jackpot.meter_id, 0, 0,
  {'jackpot', jackpot_id, 'amount_cents', jackpot.amount_cents, 'witness', witness,
   'witness_cert', ARGV[3], 'note', note, 'table', jackpot.table_id, 'round', jackpot.round_id})
jackpot.witness_seq = seq
raw = cjson.encode(jackpot)
redis.call('HSET', KEYS[1], jackpot_id, raw)
return raw
