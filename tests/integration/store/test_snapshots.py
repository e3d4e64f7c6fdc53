"""Export and restore: a link group's state at one instant, written back into a Redis that
lost it, served again in a new epoch; never over a group that has state."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint, settle_fingerprint
from controller.domain.settlement import plan_settlement
from controller.store.redis_store import RedisStore
from jackpot.errors import AlreadyExists, NotFound
from tests.integration.store.conftest import (
    ACTOR,
    GROUP,
    METER,
    NOTHING,
    cards,
    play,
    step_between_reads,
    wagers,
)


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


async def test_an_export_never_holds_a_round_settled_while_it_was_read(
    store: RedisStore, table: TableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between listing the open rounds and reading them, one round settles and another locks
    out: the open set keeps its size but not its members. The export reads again; it never
    writes the settled round as open (a restore would refuse the export, or settle it twice)."""
    placed = wagers(1)
    await store.rounds.lockout(table, 1, placed, lockout_fingerprint(placed))

    async def settle_one_lock_another() -> None:
        locked = await store.rounds.locked_round(table, 1)
        assert locked is not None
        dealt = cards(NOTHING)
        await store.rounds.settle(
            table,
            1,
            plan_settlement(table, locked.wagers, dealt),
            locked.lockout_fingerprint,
            settle_fingerprint(dealt),
        )
        await store.rounds.lockout(table, 2, placed, lockout_fingerprint(placed))

    calls = step_between_reads(monkeypatch, store.snapshots, settle_one_lock_another)
    snapshot = await store.snapshots.export_snapshot(GROUP)
    assert calls == [2], "the export did not read again after the open rounds changed"
    assert set(snapshot["rounds"]) == {"t1:2"}
