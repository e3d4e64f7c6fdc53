-- The last step of a restore (controller/journal/export.py): everything else of the link
-- group is written; this makes it a state again. A new epoch begins whose lineage holds the
-- exported epoch up to the export's sequence number (a table acknowledged more of it stops
-- the group: those steps are lost), and the restore is journaled with who, why and from what.
-- Must-hit-by meters (docs/mystery.md, "Restore"): an export holds no secret hit point, so
-- each must-hit-by meter whose mystery key is missing abandons its cycle unhit and starts the
-- next one here, journaled as a 'mystery_draw' with restart 'restore' and the cycle it
-- abandons. The new hit point is drawn uniformly in whole cents in (low, must-hit-by], low
-- being the larger of the reset and the meter's amount in whole cents: exactly the law of the
-- lost hit point given that the meter had not reached it, so the restore changes no one's
-- odds, and the meter stays below its hit point.
-- Numbering (docs/journal.md, "Numbering across a restore"): the lost epoch may have issued
-- sequence numbers (and so jackpot ids '<group>:<seq>') above the export's; ARGV[11] is the
-- highest one anything may hold (the tables' outboxes, with a margin). The restored journal
-- continues above it: the 'restored' entry is #ARGV[11] + 1 and records the jump
-- ('numbered_after'), the one gap the audit accepts. When it is above the export's, tables
-- hold answers the restored state lacks: the group starts stopped for their reconciliation
-- ('reconcile_above'; restore_steps.lua, finish_reconcile.lua) with the reason and commands.
-- KEYS: 1 epoch, 2 journal, 3 seq, then per must-hit-by meter (ARGV[9]'s order) its hash
--       and its mystery key
-- ARGV: 1 link_group_id, 2 new epoch id, 3 exported epoch id, 4 its lineage, 5 exported seq,
--       6 actor, 7 reason, 8 source (file and SHA-256), 9 must-hit-by meter ids JSON,
--       10 a fresh seed (64 hex digits of the controller's CSPRNG), 11 the highest sequence
--       number issued (>= ARGV[5])
if redis.call('EXISTS', KEYS[1]) == 1 then
  refuse('EXISTS', 'link group ' .. ARGV[1] .. ' has an epoch record; restore only into a '
    .. 'Redis that lost the link group')
end
if num(redis.call('GET', KEYS[3])) ~= tonumber(ARGV[5]) then
  refuse('INVALID', 'the restored journal does not end at #' .. ARGV[5])
end
local numbered_after = tonumber(ARGV[11])
if not numbered_after or numbered_after ~= math.floor(numbered_after)
    or numbered_after < tonumber(ARGV[5]) or numbered_after > MAX_EXACT / 2 then
  refuse('BOUND', 'the highest sequence number issued (' .. ARGV[11] .. ') is a whole number '
    .. 'from the export\'s #' .. ARGV[5])
end
-- Validate and draw before the first write.
local restarts = {}
for i, meter_id in ipairs(cjson.decode(ARGV[9])) do
  local meter_key, secret_key = KEYS[2 + 2 * i], KEYS[3 + 2 * i]
  local f = redis.call('HMGET', meter_key, 'kind', 'must_hit_by_cents', 'reset_cents',
    'value_microcents', 'mystery_cycle', 'mystery_commitment')
  if f[1] ~= 'must_hit_by' then
    refuse('INVALID', 'meter ' .. meter_id .. ' is not a restored must-hit-by meter')
  end
  if redis.call('EXISTS', secret_key) == 0 then
    local must_hit_by, reset = num(f[2]), num(f[3])
    local low = math.max(reset, math.floor(num(f[4]) / MICRO))
    if low >= must_hit_by then
      refuse('INVALID', 'must-hit-by meter ' .. meter_id .. ' holds ' .. f[4] .. ' microcents, '
        .. 'not below its must-hit-by amount of ' .. f[2] .. ' cents: the export is not a '
        .. 'state a meter can be in')
    end
    local m = {id = meter_id, key = meter_key, reset = reset * MICRO, must_hit_by = must_hit_by}
    local cycle = num(f[5]) + 1
    local hit, salt, commitment = mystery_draw(ARGV[10], meter_id, cycle, low, must_hit_by)
    restarts[#restarts + 1] = {m = m, secret_key = secret_key, low = low,
      abandoned_cycle = f[5] or '0', abandoned_commitment = f[6] or '',
      draw = {cycle = cycle, hit = hit, salt = salt, commitment = commitment}}
  end
end
local lineage = ARGV[4]
if lineage ~= '' then
  lineage = lineage .. ','
end
lineage = lineage .. ARGV[3] .. ':' .. ARGV[5]
local fields = {'link_group', ARGV[1], 'epoch', ARGV[2], 'previous_epoch', ARGV[3],
  'from_seq', ARGV[5], 'by', ARGV[6], 'reason', ARGV[7], 'source', ARGV[8]}
if numbered_after > tonumber(ARGV[5]) then
  fields[#fields + 1] = 'numbered_after'
  fields[#fields + 1] = int(numbered_after)
  redis.call('SET', KEYS[3], int(numbered_after))
end
local seq = journal(KEYS[2], KEYS[3], 'restored', '', 0, 0, fields)
for _, r in ipairs(restarts) do
  mystery_commit(KEYS[2], KEYS[3], r.secret_key, r.m, r.draw,
    {'restart', 'restore', 'restored_seq', int(seq), 'abandoned_cycle', r.abandoned_cycle,
     'abandoned_commitment', r.abandoned_commitment, 'drawn_above_cents', int(r.low)})
end
local stopped = ''
if numbered_after > tonumber(ARGV[5]) then
  stopped = 'link group ' .. ARGV[1] .. ' was restored (journal #' .. int(seq) .. ') from an '
    .. 'export at #' .. ARGV[5] .. ' of epoch ' .. ARGV[3] .. ', and its tables hold answers '
    .. 'up to #' .. int(numbered_after) .. ' that the restored state may lack: it serves no table '
    .. 'until they are reconciled (collect each table\'s outbox: jackpotctl restore collect '
    .. '--link-group ' .. ARGV[1] .. ' --outbox FILE; list what is missing: jackpotctl restore '
    .. 'status --link-group ' .. ARGV[1] .. '; apply it: jackpotctl restore request|approve; '
    .. 'then jackpotctl restore finish)'
end
redis.call('HSET', KEYS[1], 'id', ARGV[2], 'lineage', lineage, 'stopped', stopped,
  'since_seq', seq, 'reconcile_from', ARGV[5], 'reconcile_above', int(numbered_after),
  'reconcile_epoch', ARGV[3])
return seq
