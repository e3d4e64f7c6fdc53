-- Read-only: a link group's epoch record and journal seq at one instant (the state guard's
-- read, followed on the same connection by the replica wait).
-- KEYS: 1 epoch, 2 seq      Answers {{id, lineage, stopped}, seq}.
return {redis.call('HMGET', KEYS[1], 'id', 'lineage', 'stopped'), redis.call('GET', KEYS[2])}
