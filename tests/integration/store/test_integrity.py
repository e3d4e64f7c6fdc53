"""The audit's walk of a link group's records: every one that does not read is named, each
aggregate's records alike, and a sound group has none."""

from __future__ import annotations

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint
from controller.store import keys
from controller.store.redis_store import RedisStore
from tests.integration.store.conftest import GROUP, METER, wagers


async def test_every_corrupt_record_is_named(store: RedisStore, table: TableConfig) -> None:
    assert await store.integrity.corrupt_records(GROUP) == []
    placed = wagers(1)
    await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))
    group = keys.LinkGroupKeys(GROUP)
    await store.client.hset(group.meter(METER), "value_microcents", "x")
    await store.client.hset(group.table("t1"), "last_round", "y")
    await store.client.hset(group.round("t1", 1), "wagers", "[")
    await store.client.hset(group.jackpots, "floor:1", "{")
    found = await store.integrity.corrupt_records(GROUP)
    assert sorted((e.kind, e.name) for e in found) == sorted(
        [("meter", METER), ("table", "t1"), ("round", "1 of table t1"), ("jackpot", "floor:1")]
    )
