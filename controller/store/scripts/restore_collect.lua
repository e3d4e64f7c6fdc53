-- After a restore (restore_epoch.lua), record what one table's outbox holds that the restored
-- state lacks (docs/journal.md, "Reconciling tables after a restore"): each acknowledged
-- answer of the lost epoch after the export's position is a step; the ones the restored state
-- already holds (a lockout of a round it has, a settlement of a round it has settled) are
-- counted, the others are kept as 'missing' for restore_request.lua / restore_apply.lua.
-- Nothing is recomputed: a step carries the amounts the table was answered. Journaled once
-- per collection that adds anything; collecting the same outbox again changes nothing.
-- A settlement's jackpot ids must be the ones the lost journal made (<group>:<the award's
-- seq>, after the export and within the step): an outbox cannot bring an id the restored
-- journal may issue.
-- KEYS: 1 epoch, 2 journal, 3 seq, 4 restore steps, 5 restore tables, 6 the table,
--       7 the group's tables, 8 restore queue, 9.. each step's round (ARGV[3]'s order)
-- ARGV: 1 link_group_id, 2 table_id, 3 steps JSON [{id, round_id, phase, epoch, seq, moves,
--       awards, wagers, answer, note}] (controller/actions/reconcile.py; money as decimal strings),
--       4 actor, 5 source (file and SHA-256), 6, 7 the outbox's last position (epoch, seq),
--       8 the most steps a link group keeps
-- Answers {missing, present, already collected}.
local link_group_id, table_id = ARGV[1], ARGV[2]
local e = redis.call('HMGET', KEYS[1], 'id', 'reconcile_epoch', 'reconcile_from',
  'reconcile_above')
if not e[1] then
  refuse('NOT_FOUND', 'link group ' .. link_group_id .. ' has no state in Redis; restore it first')
end
if not e[2] or e[2] == '' then
  refuse('INVALID', 'link group ' .. link_group_id .. ' was not restored from an export; there '
    .. 'is nothing to reconcile')
end
if redis.call('SISMEMBER', KEYS[7], table_id) == 0 then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not a table of link group ' .. link_group_id)
end
local from, above = num(e[3]), num(e[4])
local steps = cjson.decode(ARGV[3])
if #steps + redis.call('HLEN', KEYS[4]) > tonumber(ARGV[8]) then
  refuse('BOUND', 'link group ' .. link_group_id .. ' keeps at most ' .. ARGV[8] .. ' steps to '
    .. 'reconcile')
end
if ARGV[6] ~= '' and ARGV[6] ~= e[2] and ARGV[6] ~= e[1] then
  refuse('INVALID', 'the outbox of table ' .. table_id .. ' was last answered in epoch '
    .. ARGV[6] .. ', neither the exported epoch ' .. e[2] .. ' nor the restored one ' .. e[1]
    .. ': it is not an outbox of this link group\'s lost state')
end
local last_round = num(redis.call('HGET', KEYS[6], 'last_round'))
local missing_rounds = {}  -- rounds whose lockout is missing (kept, or in this batch)
for _, id in ipairs(redis.call('HKEYS', KEYS[4])) do
  local t, r, phase = string.match(id, '^(.*):(%d+):(%a+)$')
  if t == table_id and phase == 'lockout' then
    missing_rounds[r] = true
  end
end
local added, present, known = {}, 0, 0
for i, s in ipairs(steps) do
  local round_id = tostring(s.round_id)
  local id = table_id .. ':' .. round_id .. ':' .. s.phase
  if s.id ~= id or (s.phase ~= 'lockout' and s.phase ~= 'settle' and s.phase ~= 'void') then
    refuse('INVALID', 'step ' .. tostring(s.id) .. ' of table ' .. table_id .. ' is not a '
      .. 'lockout, settlement or void of one of its rounds')
  end
  if s.epoch ~= e[2] or not (s.seq > from) then
    refuse('INVALID', 'step ' .. id .. ' at #' .. int(s.seq) .. ' of epoch ' .. s.epoch
      .. ' is not after the export\'s #' .. int(from) .. ' of epoch ' .. e[2])
  end
  if s.seq > above then
    refuse('BOUND', 'table ' .. table_id .. ' was answered journal #' .. int(s.seq) .. ' (' .. id
      .. '), above #' .. int(above) .. ', where this restore numbered on from: sequence numbers '
      .. 'and jackpot ids after it would name two things. Restore again into an emptied Redis '
      .. 'with --outbox for every table (or --seq-above)')
  end
  for _, a in ipairs(s.awards or {}) do
    local award_seq = tonumber(a.journal_seq) or 0
    if award_seq <= from or award_seq > s.seq or (a.pending_validation
        and a.jackpot_id ~= link_group_id .. ':' .. a.journal_seq) then
      refuse('INVALID', 'step ' .. id .. ' holds an award at #' .. tostring(a.journal_seq)
        .. ' (jackpot ' .. tostring(a.jackpot_id) .. ') that the lost journal cannot have made '
        .. 'after #' .. int(from) .. ' within the step\'s #' .. int(s.seq))
    end
  end
  if redis.call('HEXISTS', KEYS[4], id) == 1 then
    known = known + 1
  else
    local round = redis.call('HMGET', KEYS[8 + i], 'state', 'lockout_fp')
    local lacks
    if s.phase == 'lockout' then
      lacks = not round[2] and s.round_id > last_round
      if lacks then missing_rounds[round_id] = true end
    else
      -- the restored round is still open (or its lockout is itself missing)
      lacks = missing_rounds[round_id] or round[1] == 'locked' or round[1] == 'irregular'
      lacks = lacks and true or false
    end
    if lacks then
      s.table_id, s.status, s.requested_by, s.approved_by = table_id, 'missing', '', ''
      s.applied_seq, s.collected_from = 0, ARGV[5]
      added[#added + 1] = {id, cjson.encode(s), s.seq}
    else
      present = present + 1
    end
  end
end
local before = redis.call('HGET', KEYS[5], table_id)
if #added == 0 and before then
  return {0, present, known}  -- collected before: nothing new
end
local seq = journal(KEYS[2], KEYS[3], 'restore_collected', '', 0, 0,
  {'table', table_id, 'link_group', link_group_id, 'source', ARGV[5], 'by', ARGV[4],
   'missing', int(#added), 'present', int(present), 'from_seq', int(from)})
for _, a in ipairs(added) do
  redis.call('HSET', KEYS[4], a[1], a[2])
  redis.call('ZADD', KEYS[8], a[3], a[1])
end
redis.call('HSET', KEYS[5], table_id, cjson.encode({table_id = table_id, collected_by = ARGV[4],
  source = ARGV[5], collect_seq = seq, last_epoch = ARGV[6], last_seq = ARGV[7],
  missing = #added + (before and cjson.decode(before).missing or 0)}))
return {#added, present, known}
