"""Reconciling a restore: a group restored behind its tables is stopped until each table's
outbox is collected; one not restored has nothing to reconcile."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.store.redis_store import RedisStore
from jackpot.epochs import JournalPosition
from jackpot.errors import FailedPrecondition, InvalidConfiguration, NotFound
from tests.integration.store.conftest import ACTOR, GROUP, NOTHING, play

CERT = "dd" * 32


async def test_a_group_never_restored_has_nothing_to_reconcile(
    store: RedisStore, table: TableConfig
) -> None:
    steps, tables, table_ids, epoch = await store.reconciliation.records(GROUP)
    assert (steps, tables, table_ids) == ({}, {}, ["t1"]) and epoch["id"]
    with pytest.raises(InvalidConfiguration, match="was not restored from an export"):
        await store.reconciliation.finish(GROUP, actor=ACTOR, actor_cert=CERT)
    with pytest.raises(NotFound, match="no missing step"):
        await store.reconciliation.request(GROUP, actor=ACTOR, actor_cert=CERT)


async def test_a_restore_behind_its_tables_waits_for_their_outboxes(
    store: RedisStore, table: TableConfig
) -> None:
    await play(store, table, 1, NOTHING)
    snapshot = await store.snapshots.export_snapshot(GROUP)
    entries = [{"id": e.entry_id, "fields": e.fields} async for e in store.journal.entries(GROUP)]
    exported_epoch, _ = await store.epochs.epoch_ids(GROUP)
    await store.client.flushall()
    store.tables.forget_table("t1")
    await store.snapshots.restore_state(snapshot, entries)
    seq_above = int(snapshot["seq"]) + 5  # the tables may have seen five entries more
    await store.snapshots.restore_epoch(
        snapshot, actor=ACTOR, reason="drill", source="x", seq_above=seq_above
    )
    with pytest.raises(FailedPrecondition, match="outboxes of tables t1"):
        await store.reconciliation.finish(GROUP, actor=ACTOR, actor_cert=CERT)
    last = JournalPosition(exported_epoch, int(snapshot["seq"]))
    collected = await store.reconciliation.collect(
        GROUP, "t1", [], actor=ACTOR, source="outbox", last=last, max_steps=100
    )
    assert collected == (0, 0, 0)
    _, tables, _, _ = await store.reconciliation.records(GROUP)
    assert set(tables) == {"t1"}
    assert await store.reconciliation.finish(GROUP, actor=ACTOR, actor_cert=CERT) > seq_above
