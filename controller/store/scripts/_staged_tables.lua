-- Staged table changes (docs/staged-changes.md; stage_table_change.lua stages one). A change
-- of a table's definition waits in the table's fields 'staged_change' (JSON: meter, at =
-- 'hit' | 'reset', old_config, config, game, meters, by, reason) and 'staged_seq' (its
-- table_change_staged entry); the meter it waits for lists the table in its field
-- 'staged_tables' (a JSON array of table ids). The step that pays that meter's next hit
-- (settle.lua: a percentage-of-meter award; a 100% award resets it) applies it: only that
-- branch reads the meter's 'staged_tables' (with staged_check's HMGET of the meter just before
-- in the same step, else one HGET; once per meter per call, cached in m): an ordinary round
-- reads nothing more. Applied means the table's config becomes the new
-- one and its revision goes up, so the next lockout with the old definition is refused and
-- read again: a round locked out before settles wholly under the old definition, a round
-- locked out after locks out wholly under the new one. Re-checked when applied: a table that
-- changed since (another definition, retired), a round of it still in flight (other than
-- the one this step settles), or a meter of the new definition gone or of another game
-- drops the change, journaled with why; the payment never waits.
local function staged_tables_apply(m, event, journal_key, seq_key, open_rounds_key, settling,
    fields)
  if m.staged_tables == false then
    return
  end
  local raw = m.staged_tables_read  -- read by staged_check just before (nil: not read)
  m.staged_tables_read = nil
  if raw == nil then
    raw = redis.call('HGET', m.key, 'staged_tables')
  end
  if not raw then
    m.staged_tables = false
    return
  end
  local ok, ids = pcall(cjson.decode, raw)
  if not ok or type(ids) ~= 'table' then
    ids = {}
  end
  local prefix = string.match(m.key, '^(.*:)meter:[^:]*$') or ''
  local waiting, open = {}, nil
  for _, table_id in ipairs(ids) do
    local key = prefix .. 'table:' .. tostring(table_id)
    local f = redis.call('HMGET', key, 'config', 'staged_change', 'staged_seq', 'retired_seq')
    local read, s = false, nil
    if f[2] then
      read, s = pcall(cjson.decode, f[2])
      read = read and type(s) == 'table' and s.meter == m.id
    end
    if f[2] and read and s.at == 'reset' and event ~= 'reset' then
      waiting[#waiting + 1] = table_id  -- at the next reset: this hit does not reset it
    elseif f[2] then
      local why
      if not read or type(s.config) ~= 'string' or type(s.meters) ~= 'table' then
        why = 'its record does not read'
      elseif f[4] or not f[1] then
        why = 'table ' .. table_id .. ' was retired'
      elseif f[1] ~= s.old_config then
        why = 'table ' .. table_id .. ' was changed since the change was staged'
      else
        open = open or redis.call('SMEMBERS', open_rounds_key)
        local mine = table_id .. ':'
        for _, name in ipairs(open) do
          if name ~= settling and string.sub(name, 1, #mine) == mine then
            why = 'round ' .. string.sub(name, #mine + 1) .. ' of table ' .. table_id
              .. ' was in flight (locked out with the old definition, it settles with it)'
            break
          end
        end
        for _, meter_id in ipairs(why and {} or s.meters) do
          local game = redis.call('HGET', prefix .. 'meter:' .. tostring(meter_id), 'game')
          if game ~= s.game then
            why = 'meter ' .. tostring(meter_id) .. ' of the new definition does not fund '
              .. tostring(s.game) .. ' any more'
            break
          end
        end
      end
      local entry = {'staged_seq', f[3] or '', 'table', table_id, 'at_meter', m.id}
      if why then
        entry[#entry + 1] = 'reason'
        entry[#entry + 1] = 'dropped: ' .. why
      else
        local rev = redis.call('HINCRBY', key, 'rev', 1)
        -- the definition before, kept for a correction of a round played under it
        redis.call('HSET', key, 'config', s.config, 'prev_config', s.old_config, 'prev_rev',
          rev - 1)
        for _, value in ipairs({'at', s.at, 'old_config', s.old_config, 'config', s.config}) do
          entry[#entry + 1] = value
        end
      end
      for i = 1, #fields do
        entry[#entry + 1] = fields[i]
      end
      redis.call('HDEL', key, 'staged_change', 'staged_seq')
      journal(journal_key, seq_key, why and 'table_change_dropped' or 'table_change_applied',
        '', 0, 0, entry)
    end
  end
  if #waiting > 0 then
    if #waiting ~= #ids then
      redis.call('HSET', m.key, 'staged_tables', cjson.encode(waiting))
    end
  else
    redis.call('HDEL', m.key, 'staged_tables')
  end
  if #waiting == 0 then
    m.staged_tables = false  -- a later reset in this step reads them again otherwise
  end
end
