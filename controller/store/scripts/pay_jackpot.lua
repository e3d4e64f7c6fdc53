-- The cage or floor records that an approved jackpot was paid by hand: approved -> paid.
-- No money moves here (the award left the meter, or was fixed, when it was hit); the step
-- completes the hand-pay slip with who paid, when (Redis's clock, ms) and the payer's note
-- (e.g. a receipt number), and journals it. The payer is the caller's certificate identity
-- and is never the approver (two people: one validates, another pays; not checked for the one
-- development identity of an insecure controller, ARGV[5] empty). The same payer
-- repeating it gets the record unchanged; paying a jackpot not approved, or paid by another,
-- is refused.
-- Payout compliance (docs/payout-compliance.md; ARGV[6] the policy's name, '' when none
-- applies: then nothing below is checked or written): the controller's policy said what this
-- jackpot (of ARGV[15] cents, won on a wager of ARGV[16] cents: both must be the record's)
-- requires. A required tax form needs its reference (ARGV[13]) or, where the policy lets the
-- prompt be overridden (ARGV[9] '1'), a stated reason (ARGV[14]); a required witness needs a
-- jackpot_witnessed step recorded before (witness_jackpot.lua); the payer is never its own
-- witness. What is missing is refused in one message naming each thing; the payment's entry
-- carries the policy, what it required and what satisfied it, so the audit checks it again.
-- A repeat by the same payer with another tax-form reference or override is refused.
-- KEYS: 1 jackpots, 2 journal, 3 seq
-- ARGV: 1 jackpot_id, 2 payer identity, 3 payer certificate fingerprint, 4 note,
--       5 'two_people' (the payer must not be the approver) or '',
--       6 policy name or '', 7 tax-form threshold cents or '', 8 tax-form wager multiple,
--       9 tax form overridable '1'/'0', 10 witness threshold cents or '',
--       11 tax form required '1'/'0', 12 witness required '1'/'0', 13 tax-form reference,
--       14 tax-form override reason, 15 amount cents, 16 wager cents, 17 tax-form reason,
--       18 witness reason
local jackpot_id, payer, note = ARGV[1], ARGV[2], ARGV[4]
local policy = ARGV[6] or ''  -- absent: no payout compliance policy
local raw = redis.call('HGET', KEYS[1], jackpot_id)
if not raw then
  refuse('NOT_FOUND', 'jackpot ' .. jackpot_id .. ' does not exist')
end
local jackpot = cjson.decode(raw)
check_version('jackpot ' .. jackpot_id, jackpot.v)
if jackpot.status == 'paid' then
  if jackpot.paid_by == payer then
    local ref, override = jackpot.tax_form_ref or '', jackpot.tax_form_override or ''
    if policy ~= '' and (ref ~= ARGV[13] or override ~= ARGV[14]) then
      refuse('DECIDED', 'jackpot ' .. jackpot_id .. ' was already paid by ' .. payer
        .. ' with tax-form reference \'' .. ref .. '\' and override \'' .. override
        .. '\'; a payment is recorded once')
    end
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
local witness = jackpot.witnessed_by or ''
if ARGV[5] == 'two_people' and witness ~= '' and witness == payer then
  refuse('SAME_PERSON', 'jackpot ' .. jackpot_id .. ' was witnessed by ' .. payer
    .. '; the payer is not its own witness: another identity records the payment')
end
local compliance = {}
if policy ~= '' then
  if int(num(jackpot.amount_cents)) ~= ARGV[15] or int(num(jackpot.wager_cents)) ~= ARGV[16] then
    refuse('STALE_POLICY', 'jackpot ' .. jackpot_id .. ' is not the jackpot of '
      .. ARGV[15] .. ' cents on a ' .. ARGV[16] .. '-cent wager its requirements were computed '
      .. 'for; try again')
  end
  local missing = {}
  if ARGV[11] == '1' and ARGV[13] == '' then
    if ARGV[14] == '' then
      local how = ARGV[9] == '1' and ' (or the reason it is overridden)' or ''
      missing[#missing + 1] = 'the W-2G tax-form reference' .. how .. ': ' .. ARGV[17]
    elseif ARGV[9] ~= '1' then
      missing[#missing + 1] = 'the W-2G tax-form reference: under ' .. policy
        .. ' the tax-form prompt is not overridable'
    end
  end
  if ARGV[12] == '1' and witness == '' then
    missing[#missing + 1] = 'a witness (another supervisor or cashier, by its own certificate: '
      .. 'jackpotctl jackpots witness ' .. jackpot_id .. '): ' .. ARGV[18]
  end
  if #missing > 0 then
    refuse('COMPLIANCE', 'jackpot ' .. jackpot_id .. ' cannot be recorded as paid yet: missing '
      .. table.concat(missing, '; and '))
  end
  jackpot.payout_compliance = policy
  jackpot.tax_form_required, jackpot.witness_required = ARGV[11] == '1', ARGV[12] == '1'
  jackpot.tax_form_overridable = ARGV[9] == '1'
  jackpot.tax_form_reason, jackpot.witness_reason = ARGV[17], ARGV[18]
  jackpot.tax_form_ref, jackpot.tax_form_override = ARGV[13], ARGV[14]
  compliance = {'compliance', policy, 'tax_form_from_cents', ARGV[7], 'tax_form_multiple',
    ARGV[8], 'tax_form_overridable', ARGV[9], 'witness_from_cents', ARGV[10], 'wager_cents',
    ARGV[16], 'tax_form_required', ARGV[11], 'witness_required', ARGV[12], 'tax_form_ref',
    ARGV[13], 'tax_form_override', ARGV[14], 'witness', witness, 'witness_seq',
    int(jackpot.witness_seq or 0)}
end
jackpot.status, jackpot.paid_by, jackpot.paid_by_cert, jackpot.paid_note = 'paid', payer,
  ARGV[3], note
jackpot.paid_at_ms = int(clock_ms())
raw = cjson.encode(jackpot)
redis.call('HSET', KEYS[1], jackpot_id, raw)
local fields = {'jackpot', jackpot_id, 'amount_cents', jackpot.amount_cents, 'payer', payer,
  'payer_cert', ARGV[3], 'note', note, 'table', jackpot.table_id, 'round', jackpot.round_id}
for i = 1, #compliance do
  fields[#fields + 1] = compliance[i]
end
journal(KEYS[2], KEYS[3], 'jackpot_paid', jackpot.meter_id, 0, 0, fields)
return raw
