"""The tables: a definition cached with its revision, forgotten and read again, the last
round and its rebase, when an agent was last heard."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint
from controller.store import keys
from controller.store.redis_store import RedisStore
from controller.store.tables import MAX_REBASE_ROUND_ID
from jackpot.errors import CorruptRecord, InvalidArgument, NotFound
from tests.integration.store.conftest import ACTOR, GROUP, wagers


async def test_a_definition_is_cached_until_forgotten(
    store: RedisStore, table: TableConfig
) -> None:
    assert await store.tables.get_table("t1") is table  # registered: cached as given
    assert store.tables.revisions["t1"] == 0
    await store.client.hset(keys.LinkGroupKeys(GROUP).table("t1"), "rev", 3)
    assert await store.tables.get_table("t1") is table  # still the cached one
    store.tables.forget_table("t1")
    read = await store.tables.get_table("t1")
    assert read == table and read is not table and store.tables.revisions["t1"] == 3
    assert [t.table_id for t in await store.tables.list_tables()] == ["t1"]
    with pytest.raises(NotFound, match="table t9 is not registered"):
        await store.tables.get_table("t9")


async def test_the_last_round_moves_with_lockouts_and_rebases(
    store: RedisStore, table: TableConfig
) -> None:
    assert await store.tables.last_round(table) == 0
    assert await store.tables.last_rounds(GROUP, ["t1"]) == {}
    placed = wagers(1)
    await store.rounds.lockout(table, 4, placed, lockout_fingerprint(placed))
    assert await store.tables.last_round(table) == 4
    [(round_id, at_ms)] = (await store.tables.last_rounds(GROUP, ["t1"])).values()
    assert round_id == 4 and at_ms > 0
    assert await store.tables.rebase_table_rounds(table, 100, reason="r", actor=ACTOR) == (4, 100)
    assert await store.tables.rebase_table_rounds(table, 100, reason="r", actor=ACTOR) == (100, 100)
    with pytest.raises(InvalidArgument):
        await store.tables.rebase_table_rounds(
            table, MAX_REBASE_ROUND_ID + 1, reason="r", actor=ACTOR
        )


async def test_a_corrupt_last_round_is_reported_and_skipped(
    store: RedisStore, table: TableConfig
) -> None:
    await store.client.hset(keys.LinkGroupKeys(GROUP).table("t1"), "last_round", "x")
    skipped: list[CorruptRecord] = []
    assert await store.tables.last_rounds(GROUP, ["t1"], skipped=skipped) == {}
    assert [error.name for error in skipped] == ["t1"]


async def test_a_time_heard_never_goes_back(store: RedisStore, table: TableConfig) -> None:
    await store.tables.record_tables_heard({"t1": 2000, "t2": 1000})
    await store.tables.record_tables_heard({"t1": 1500})  # another replica heard it later
    await store.client.hset(keys.TABLE_SEEN, "t3", "garbage")
    assert await store.tables.tables_heard(["t1", "t2", "t3", "t4"]) == {"t1": 2000, "t2": 1000}


async def test_nothing_heard_is_written_without_the_installation(store: RedisStore) -> None:
    await store.tables.record_tables_heard({"t1": 2000})
    assert await store.client.exists(keys.TABLE_SEEN) == 0
