"""Export and restore: a link group's state at one instant, written back into a Redis that
lost it, served again in a new epoch; never over a group that has state."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.store.redis_store import RedisStore
from jackpot.errors import AlreadyExists, NotFound
from tests.integration.store.conftest import ACTOR, GROUP, METER, NOTHING, play


async def test_an_export_restores_into_a_redis_that_lost_it(
    store: RedisStore, table: TableConfig
) -> None:
    await play(store, table, 1, NOTHING)
    meter = await store.catalog.get_meter(METER)
    snapshot = await store.snapshots.export_snapshot(GROUP)
    assert snapshot["link_group_id"] == GROUP and set(snapshot["meters"]) == {METER}
    assert snapshot["installation"]["id"]
    entries = [
        {"id": entry.entry_id, "fields": entry.fields}
        async for entry in store.journal.entries(GROUP)
    ]
    lost_epoch, _ = await store.epochs.epoch_ids(GROUP)
    await store.client.flushall()
    store.tables.forget_table("t1")

    await store.snapshots.restore_state(snapshot, entries)
    seq = await store.snapshots.restore_epoch(snapshot, actor=ACTOR, reason="drill", source="x")
    assert seq == len(entries) + 1  # the restored entry follows the journal
    restored = await store.catalog.get_meter(METER)
    assert restored.amount_microcents == meter.amount_microcents
    assert (await store.tables.get_table("t1")) == table
    epoch, lineage = await store.epochs.epoch_ids(GROUP)
    assert epoch != lost_epoch and lost_epoch in lineage
    assert (await store.catalog.installation() or {})["id"] == snapshot["installation"]["id"]
    with pytest.raises(AlreadyExists, match="has state in this Redis"):
        await store.snapshots.restore_state(snapshot, entries)


async def test_an_unknown_group_has_no_export(store: RedisStore) -> None:
    with pytest.raises(NotFound, match="link group ghost does not exist"):
        await store.snapshots.export_snapshot("ghost")
