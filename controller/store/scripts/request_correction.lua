-- A supervisor (or, inside the dealer's window, the table's console) requests the correction
-- of a settled round: the wagers and cards as they should have been and why. The controller
-- has computed the difference (controller/domain/corrections.py) against this settlement
-- (its fingerprint, ARGV[9]) and these jackpot statuses (ARGV[10]); nothing moves until a
-- second identity approves it (review_correction.lua). Journaled with the whole difference.
-- Idempotent by its request id on the round: the same id again answers the same record when
-- the content is the same, and is refused (CONFLICT) when it is not.
-- Refused: an unknown (or expired) round, one not settled, one with a correction pending or
-- applied (a round is corrected once), a settlement or jackpot changed since the difference
-- was computed, and from a table a round after which the table locked out another.
-- KEYS: 1 round, 2 corrections, 3 journal, 4 seq, 5 jackpots, 6 table
-- ARGV: 1 table_id, 2 round_id, 3 link_group_id, 4 request id, 5 the correction JSON
--       (lines, wagers, corrected, totals, reason, content_fp), 6 actor, 7 actor certificate,
--       8 '1' when a table asks (the dealer's window), 9 the settle fingerprint,
--       10 JSON [[jackpot id, status], ...] of the round's jackpots
-- Answers the correction record (JSON).
local table_id, round_id, link_group_id, request_id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local asked = cjson.decode(ARGV[5])
local round = redis.call('HMGET', KEYS[1], 'state', 'settle_fp', 'correction', 'v',
  'correction_req:' .. request_id)
if not round[1] then
  refuse('NOT_FOUND', where .. ' is unknown: never locked out, or its record expired (a '
    .. 'round is corrected while the controller keeps it; later, use a meter adjustment)')
end
check_version(where, round[4])
if round[5] then
  local raw = redis.call('HGET', KEYS[2], round[5])
  if raw then
    local known = cjson.decode(raw)
    if known.content_fp == asked.content_fp and known.requested_by == ARGV[6] then
      return raw
    end
  end
  refuse('CONFLICT', 'request id ' .. request_id .. ' is correction ' .. round[5] .. ' of '
    .. where .. ' with other content; a new correction needs a new request id')
end
if round[1] ~= 'settled' then
  refuse('NOT_SETTLED', where .. ' is ' .. round[1] .. ', not settled; only a settled round '
    .. 'is corrected (an open round is settled or voided)')
end
if round[3] then
  local raw = redis.call('HGET', KEYS[2], round[3])
  local known = raw and cjson.decode(raw) or {status = 'lost'}
  if known.status == 'requested' then
    refuse('PENDING', where .. ' already has correction ' .. round[3] .. ' pending (requested '
      .. 'by ' .. known.requested_by .. '); approve or reject it first')
  elseif known.status ~= 'rejected' then
    refuse('CORRECTED', where .. ' was already corrected (correction ' .. round[3] .. ', '
      .. known.status .. '); a round is corrected once')
  end
end
if round[2] ~= ARGV[9] then
  refuse('CONFLICT', where .. ' changed while the correction was computed; retry the request')
end
for _, pair in ipairs(cjson.decode(ARGV[10])) do
  local raw = redis.call('HGET', KEYS[5], pair[1])
  local status = raw and cjson.decode(raw).status or 'missing'
  if status ~= pair[2] then
    refuse('CONFLICT', 'jackpot ' .. pair[1] .. ' of ' .. where .. ' changed while the '
      .. 'correction was computed; retry the request')
  end
end
if ARGV[8] == '1' then
  local last = redis.call('HGET', KEYS[6], 'last_round') or '0'
  if last ~= round_id then
    refuse('WINDOW', 'the dealer\'s window of ' .. where .. ' is closed: the table locked out '
      .. 'round ' .. last .. ' since; a supervisor requests it with jackpotctl rounds correct')
  end
end
local seq = journal(KEYS[3], KEYS[4], 'correction_requested', '', 0, 0,
  {'table', table_id, 'round', round_id, 'by', ARGV[6], 'by_cert', ARGV[7],
   'reason', asked.reason, 'request_id', request_id, 'from_table', ARGV[8] == '1' and '1' or '0',
   'pay_cents', int(asked.pay_cents), 'recover_cents', int(asked.recover_cents),
   'operator_funded_cents', int(asked.operator_funded_cents),
   'lines', cjson.encode(asked.lines), 'wagers', cjson.encode(asked.wagers)})
local correction_id = link_group_id .. ':' .. int(seq)
asked.v, asked.correction_id, asked.link_group_id = SCHEMA_VERSION, correction_id, link_group_id
asked.table_id, asked.round_id, asked.status = table_id, tonumber(round_id), 'requested'
asked.requested_by, asked.requested_by_cert = ARGV[6], ARGV[7]
asked.requested_at_ms, asked.request_seq, asked.request_id = now_ms(), int(seq), request_id
asked.from_table = ARGV[8] == '1'
asked.decided_by, asked.decided_by_cert, asked.decided_at_ms = '', '', 0
asked.decision_seq, asked.note, asked.jackpot_ids = 0, '', {}
local raw = cjson.encode(asked)
redis.call('HSET', KEYS[2], correction_id, raw)
redis.call('HSET', KEYS[1], 'correction', correction_id, 'correction_req:' .. request_id,
  correction_id)
return raw
