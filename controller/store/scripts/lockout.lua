-- Lockout ("no more bets"): record a round's accepted wagers and apply their contributions.
-- A wager contributes to every meter it feeds, at that meter's rate of progression (and
-- reserve rate); above a meter's ceiling its share goes to that meter's reserve.
-- A contribution that reaches a must-hit-by meter's hit point wins it (the mystery section);
-- a change staged for the meter's next hit or reset is applied (or dropped) by that hit,
-- before its reset and its next draw (docs/staged-changes.md): only a hit reads it.
-- While the link group is in maintenance (an operator changes its meters or tables), a
-- lockout with a progressive wager (one feeding a meter) is refused; one without is accepted.
-- The table's revision (ARGV[12], of the definition the controller used) must be the stored
-- one: a definition changed since is refused so that the controller reads it again.
-- KEYS: 1 round, 2 table, 3 journal, 4 seq, 5 epoch, 6 counters, 7 open rounds,
--       8 maintenance, 9.. the table's meters (ARGV[5]'s order), then jackpots, pending, then
--       each meter's mystery key (ARGV[5]'s order)
-- ARGV: 1 table_id, 2 round_id, 3 fingerprint,
--       4 wagers JSON [{seat, kind, amount_cents, on_dealer_hand, envy, meters = [meter ids]}],
--       5 meter ids JSON, 6 round retention seconds, 7 max round step,
--       8, 9 the table's last acknowledged journal position (epoch id, seq),
--       10 a fresh seed for the mystery draws (64 hex digits of the controller's CSPRNG),
--       11 link_group_id, 12 table revision
-- Answers {reply JSON, 'new' | 'replay', epoch id, journal seq}.
local table_id, round_id, fp = ARGV[1], ARGV[2], ARGV[3]
local where = 'round ' .. round_id .. ' of table ' .. table_id
local epoch = check_epoch(KEYS[5], KEYS[3], KEYS[4], 'table ' .. table_id, ARGV[8], ARGV[9])

local seen = redis.call('HMGET', KEYS[1], 'lockout_fp', 'v')
local seen_fp = seen[1]
if seen_fp then
  check_version(where, seen[2])
  if seen_fp == fp then
    return {redis.call('HGET', KEYS[1], 'lockout_reply'), 'replay', epoch,
      redis.call('GET', KEYS[4]) or '0'}
  end
  refuse('CONFLICT', where .. ' is already locked out with other wagers; a round is locked '
    .. 'out once, and a retry must repeat the original wagers exactly')
end
if redis.call('HEXISTS', KEYS[2], 'config') == 0 then
  refuse('NOT_FOUND', 'table ' .. table_id .. ' is not registered')
end
-- the table's revision and last round, read at once (last_round is checked below)
local table_fields = redis.call('HMGET', KEYS[2], 'rev', 'last_round')
if (table_fields[1] or '0') ~= ARGV[12] then
  refuse('TABLE_CHANGED', 'the definition of table ' .. table_id .. ' was changed by an operator; '
    .. 'retry the same request')
end
local wagers = cjson.decode(ARGV[4])
local maintenance = redis.call('HMGET', KEYS[8], 'state', 'entered_reason')
if maintenance[1] == 'maintenance' then
  for _, w in ipairs(wagers) do
    if #w.meters > 0 then
      refuse('MAINTENANCE', 'no progressive wagers now: the progressive meters of table '
        .. table_id .. ' are in maintenance (' .. maintenance[2] .. '); return the progressive '
        .. 'wagers to the players and lock out the round without them, or wait until the '
        .. 'maintenance ends')
    end
  end
end
local meters = load_meters(KEYS, 9, cjson.decode(ARGV[5]))
local last = stored_int('table', table_id, KEYS[2], 'last_round', table_fields[2])
if tonumber(round_id) <= last then
  refuse('STALE', where .. ' is not after the table\'s last locked-out round ' .. int(last)
    .. '; round ids must increase')
end
if tonumber(round_id) - last > tonumber(ARGV[7]) then
  refuse('BOUND', 'round_id ' .. round_id .. ' is more than ' .. ARGV[7] .. ' above the last '
    .. 'locked-out round ' .. int(last) .. ' of table ' .. table_id .. '; the next round is '
    .. int(last + 1) .. ' (an operator can rebase the table\'s rounds, journaled)')
end

-- Must-hit-by mystery meters (docs/mystery.md). The contribution that reaches a meter's hit
-- point wins exactly the hit point (a pending jackpot of its seat); the meter resets (funded
-- from the reserve first, the shortfall by the operator), the rest of that contribution starts
-- the next cycle, whose hit point is drawn from ARGV[10] (_lib.lua mystery_next) and committed
-- at once; the hit's value and salt are revealed in its journal entry and in the answer.
local mystery = {by_contribution = {}, hits = {}, seed = ARGV[10], count = 0}
-- Hits one lockout may pay: each needs a contribution of at least a cent (a valid hit point
-- is above the reset), so only a corrupt draw could reach this; it is refused, never paid.
local MAX_MYSTERY_HITS = 1000

-- What the mystery loop trusts, checked before it runs (a few comparisons, mystery meters
-- only): a must-hit-by amount above the reset, a cycle from 1, a hit point in (reset,
-- must_hit_by] that the meter has not reached yet, a salt and a commitment of 64 hex digits.
-- The stored hit point opening its commitment is checked when it is paid (mystery_cross;
-- the draws made here are right by construction).
local function mystery_check(m)
  local d, reset = m.draw, m.reset / MICRO
  local why
  if m.must_hit_by <= reset then
    why = 'must_hit_by_cents ' .. int(m.must_hit_by) .. ' is not above its reset '
      .. int(reset)
  elseif d.cycle < 1 then
    why = 'its cycle is ' .. int(d.cycle)
  elseif d.hit <= reset or d.hit > m.must_hit_by then
    why = 'its hit point ' .. int(d.hit) .. ' is outside (' .. int(reset) .. ', '
      .. int(m.must_hit_by) .. ']'
  elseif m.value >= d.hit * MICRO then
    why = 'its hit point ' .. int(d.hit) .. ' is below the meter (' .. int(m.value)
      .. ' microcents), which would have paid it'
  elseif not (d.salt and string.match(d.salt, '^' .. string.rep('%x', 64) .. '$')) then
    why = 'its salt is not 64 hex digits'
  elseif not (d.commitment and string.match(d.commitment, '^' .. string.rep('%x', 64) .. '$'))
  then
    why = 'its commitment is not 64 hex digits'
  end
  if why then
    refuse_corrupt('meter', m.id, m.secret_key, 'the must-hit-by draw of cycle '
      .. int(d.cycle) .. ' is unusable: ' .. why .. '; nothing was paid')
  end
end
local mystery_first_key = 10 + #meters.list  -- KEYS: jackpots, pending, then mystery keys
for i, m in ipairs(meters.list) do
  local f = redis.call('HMGET', m.key, 'kind', 'must_hit_by_cents', 'mystery_commitment')
  if f[1] == 'must_hit_by' then
    m.secret_key = KEYS[mystery_first_key + i]
    local s = redis.call('HMGET', m.secret_key, 'hit_cents', 'salt', 'cycle')
    if not s[1] then
      refuse('LOST', 'the hit point of must-hit-by meter ' .. m.id .. ' is missing from Redis; '
        .. 'restore the state (RUNBOOK: "Redis lost its data")')
    end
    m.must_hit_by = stored_int('meter', m.id, m.key, 'must_hit_by_cents', f[2])
    m.draw = {cycle = stored_int('meter', m.id, m.secret_key, 'cycle', s[3]),
      hit = stored_int('meter', m.id, m.secret_key, 'hit_cents', s[1]), salt = s[2],
      commitment = f[3], stored = true}
    mystery_check(m)
  end
end

-- Compute: the hits of contribution c (already added to m.value) and the next cycles' draws.
local function mystery_cross(m, c)
  while m.draw and m.value >= m.draw.hit * MICRO do
    local draw = m.draw
    mystery.count = mystery.count + 1
    if mystery.count > MAX_MYSTERY_HITS then
      refuse('BOUND', 'more than ' .. MAX_MYSTERY_HITS .. ' must-hit-by hits in one lockout of '
        .. where .. '; nothing was paid')
    end
    if draw.stored and sha256_hex(int(draw.hit) .. ':' .. draw.salt) ~= draw.commitment then
      refuse_corrupt('meter', m.id, m.secret_key, 'the hit point of cycle ' .. int(draw.cycle)
        .. ' does not open its commitment; nothing was paid')
    end
    local remainder = m.value - draw.hit * MICRO
    local staged = staged_check(m, 'reset')  -- a staged change: the hit resets to its reset
    local from_reserve = math.min(m.reserve, m.reset)
    m.reserve = m.reserve - from_reserve
    m.value = m.reset + remainder
    m.draw = mystery_next(m, mystery.seed, draw.cycle + 1)
    local list = mystery.by_contribution[c] or {}
    list[#list + 1] = {draw = draw, next = m.draw, from_reserve = from_reserve,
      after = m.value, staged = staged}
    mystery.by_contribution[c] = list
    c.mystery_hits = #list  -- void_round.lua: this contribution was (in part) paid out
  end
end

-- Write: after contribution c of wager a is journaled, its hits, resets and next draws.
local function mystery_write(c, a)
  local list = mystery.by_contribution[c]
  if not list then
    return
  end
  local m = meters.by_id[c.meter_id]
  local hit_at_ms = clock_ms()
  for _, h in ipairs(list) do
    local amount = h.draw.hit
    local fields = {'amount_cents', int(amount), 'cycle', int(h.draw.cycle), 'hit_cents',
      int(amount), 'salt', h.draw.salt, 'commitment', h.draw.commitment, 'table', table_id,
      'round', round_id, 'seat', a.seat, 'wager', a.kind, 'wager_cents', a.amount_cents}
    if a.player_token then  -- the seat's player token (docs/staged-changes.md)
      fields[#fields + 1] = 'player'
      fields[#fields + 1] = a.player_token
    end
    local seq = journal(KEYS[3], KEYS[4], 'mystery_hit', m.id, -amount * MICRO, 0, fields)
    local seed = m.reset - h.from_reserve
    journal(KEYS[3], KEYS[4], 'reset', m.id, m.reset, -h.from_reserve,
      {'operator_seed_microcents', int(seed), 'reset_cents', int(m.reset / MICRO), 'table',
       table_id, 'round', round_id})
    mystery_commit(KEYS[3], KEYS[4], m.secret_key, m, h.next, {'table', table_id, 'round',
      round_id})
    if h.staged then
      staged_write(KEYS[3], KEYS[4], h.staged, {'table', table_id, 'round', round_id,
        'hit_seq', int(seq)})
    end
    local jackpot_id = ARGV[11] .. ':' .. seq
    local after_cents = int(math.floor(h.after / MICRO))
    redis.call('HSET', KEYS[mystery_first_key - 1], jackpot_id, cjson.encode({
      v = SCHEMA_VERSION, jackpot_id = jackpot_id, link_group_id = ARGV[11], meter_id = m.id,
      table_id = table_id, round_id = round_id, seat = a.seat, hand = '', wager = a.kind,
      wager_cents = a.amount_cents, on_dealer_hand = a.on_dealer_hand, envy_for_seat = 0,
      cards = '', line = 'must_hit_by', award_kind = 'must_hit_by',
      award_text = 'must-hit-by mystery', amount_cents = int(amount),
      meter_before_cents = int(amount), meter_after_cents = after_cents, status = 'pending',
      journal_seq = seq, hit_at_ms = int(hit_at_ms), reset_topup_microcents = int(m.reset),
      reset_from_reserve_microcents = int(h.from_reserve), player_token = a.player_token}))
    redis.call('SADD', KEYS[mystery_first_key], jackpot_id)
    c.mystery_jackpots = c.mystery_jackpots or {}  -- void_round.lua reverses these hits
    c.mystery_jackpots[#c.mystery_jackpots + 1] = jackpot_id
    redis.call('HINCRBY', m.key, 'hits_total', 1)
    redis.call('HINCRBY', m.key, 'awards_cents_total', int(amount))
    redis.call('HINCRBY', m.key, 'pending_jackpots', 1)
    redis.call('HINCRBY', m.key, 'operator_seed_microcents_total', int(seed))
    redis.call('HSET', m.key, 'last_hit_seq', int(seq))
    count(KEYS[6], {'hits', m.id, 'must_hit_by'}, 1)
    count(KEYS[6], {'meter_awards_cents', m.id}, amount)
    count(KEYS[6], {'awards', a.kind, 'must_hit_by'}, 1)
    count(KEYS[6], {'awards_cents', a.kind, 'must_hit_by'}, amount)
    mystery.hits[#mystery.hits + 1] = {meter_id = m.id, seat = a.seat, kind = a.kind,
      amount_cents = int(amount), jackpot_id = jackpot_id, journal_seq = int(seq),
      cycle = int(h.draw.cycle), hit_cents = int(amount), salt = h.draw.salt,
      commitment = h.draw.commitment, meter_after_cents = after_cents}
  end
end

-- Compute every split first (nothing is written before every check has passed).
local accepted = {}
local overflows = {}  -- per contribution, in order: the part above the ceiling (journal only)
for i, w in ipairs(wagers) do
  local contributions = {}
  for j, meter_id in ipairs(w.meters) do
    local m = meters.by_id[meter_id]
    local to_meter = w.amount_cents * m.rate
    local to_reserve = w.amount_cents * m.reserve_rate
    local room = math.max(m.ceiling - m.value, 0)
    local overflow = 0
    if to_meter > room then
      overflow = to_meter - room
      to_reserve = to_reserve + overflow
      to_meter = room
    end
    m.value, m.reserve = m.value + to_meter, m.reserve + to_reserve
    m.wagers, m.total = m.wagers + 1, m.total + to_meter + to_reserve
    check_exact('the reserve of meter ' .. meter_id, m.reserve)
    contributions[j] = {meter_id = meter_id, to_meter_microcents = int(to_meter),
      to_reserve_microcents = int(to_reserve)}
    overflows[#overflows + 1] = overflow
    mystery_cross(m, contributions[j])
  end
  accepted[i] = {seat = w.seat, kind = w.kind, amount_cents = int(w.amount_cents),
    on_dealer_hand = w.on_dealer_hand, envy = w.envy, contributions = contributions,
    player_token = w.player_token}  -- nil (absent) for a wager without one
end

-- Write: journal the handle (every accepted wager by kind, whether or not it feeds a meter:
-- count and cents, the regulator's reports read it) and count it (the metrics show it per
-- table and wager kind), each contribution, then the meters and the round.
if #accepted > 0 then
  local kinds, by_kind, total = {}, {}, 0
  for _, a in ipairs(accepted) do
    local k = by_kind[a.kind]
    if not k then
      k = {count = 0, cents = 0}
      by_kind[a.kind] = k
      kinds[#kinds + 1] = a.kind
    end
    k.count, k.cents = k.count + 1, k.cents + tonumber(a.amount_cents)
    total = total + tonumber(a.amount_cents)
  end
  local fields = {'table', table_id, 'round', round_id, 'wagers', int(#accepted),
    'amount_cents', int(total)}
  for _, kind in ipairs(kinds) do
    fields[#fields + 1] = 'count:' .. kind
    fields[#fields + 1] = int(by_kind[kind].count)
    fields[#fields + 1] = 'cents:' .. kind
    fields[#fields + 1] = int(by_kind[kind].cents)
    count(KEYS[6], {'handle', table_id, kind}, by_kind[kind].count)
    count(KEYS[6], {'handle_cents', table_id, kind}, by_kind[kind].cents)
  end
  journal(KEYS[3], KEYS[4], 'wagers_accepted', '', 0, 0, fields)
end
local n = 0
for _, a in ipairs(accepted) do
  for _, c in ipairs(a.contributions) do
    n = n + 1
    local fields = {'table', table_id, 'round', round_id, 'seat', a.seat, 'wager', a.kind,
      'amount_cents', a.amount_cents}
    if overflows[n] > 0 then  -- the part above the ceiling, sent to the reserve (in d_reserve)
      fields[#fields + 1] = 'overflow_microcents'
      fields[#fields + 1] = int(overflows[n])
    end
    journal(KEYS[3], KEYS[4], 'contribution', c.meter_id, c.to_meter_microcents,
      c.to_reserve_microcents, fields)
    mystery_write(c, a)
  end
end
for _, m in ipairs(meters.list) do
  redis.call('HSET', m.key, 'value_microcents', int(m.value), 'reserve_microcents',
    int(m.reserve))
  if m.wagers > 0 then
    redis.call('HINCRBY', m.key, 'wagers_total', int(m.wagers))
    redis.call('HINCRBY', m.key, 'contributions_microcents_total', int(m.total))
    count(KEYS[6], {'wagers', m.id}, m.wagers)
    count(KEYS[6], {'contributions_microcents', m.id}, m.total)
  end
end

local reply = cjson.encode({table_id = table_id, round_id = round_id, accepted = accepted,
  meters = meter_values(meters), mystery_hits = mystery.hits})
local seq_now = redis.call('GET', KEYS[4]) or '0'
redis.call('HSET', KEYS[1], 'v', SCHEMA_VERSION, 'state', 'locked', 'lockout_fp', fp,
  'wagers', cjson.encode(accepted), 'lockout_reply', reply,
  'lockout_seq', seq_now, 'table_rev', ARGV[12])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('HSET', KEYS[2], 'last_round', round_id, 'last_round_ms', int(clock_ms()))
redis.call('SADD', KEYS[7], table_id .. ':' .. round_id)  -- exported until settled or voided
return {reply, 'new', epoch, seq_now}
