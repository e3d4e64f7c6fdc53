"""The journal: its entries in order, a bounded window, its position and checkpoint, the
audit's snapshot at one instant, the export mark."""

from __future__ import annotations

import pytest

from controller.domain.config import MeterConfig, TableConfig
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.errors import CorruptRecord, InvalidArgument
from tests.integration.store.conftest import (
    GROUP,
    METER,
    NOTHING,
    RESET_CENTS,
    play,
    step_between_reads,
)

SETUP = ["link_group_created", "meter_created", "table_registered"]


async def test_the_entries_are_in_order_and_numbered(store: RedisStore, table: TableConfig) -> None:
    await play(store, table, 1, NOTHING)
    entries = [entry async for entry in store.journal.entries(GROUP, batch=2)]
    assert [e.type for e in entries][:3] == SETUP
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert await store.journal.seq(GROUP) == len(entries) == await store.journal.length(GROUP)
    assert any(e.meter_id == METER and e.delta_meter_microcents > 0 for e in entries)
    window = await store.journal.window(GROUP, 0, 0, len(entries))
    assert [e.entry_id for e in window] == [e.entry_id for e in entries]
    with pytest.raises(InvalidArgument, match="holds more than 2 entries"):
        await store.journal.window(GROUP, 0, 0, 2)
    with pytest.raises(InvalidArgument, match="empty or negative"):
        await store.journal.window(GROUP, 10, 5, 100)


async def test_an_entry_that_does_not_read_is_corrupt_or_yielded_to_the_audit(
    store: RedisStore, table: TableConfig
) -> None:
    stream = keys.LinkGroupKeys(GROUP).journal
    forged = await store.client.xadd(stream, {"seq": "x", "type": "forged"})
    with pytest.raises(CorruptRecord, match="journal entry"):
        _ = [entry async for entry in store.journal.entries(GROUP)]
    read = [entry async for entry in store.journal.entries(GROUP, unreadable=True)]
    assert read[-1].entry_id == forged and read[-1].problem


async def test_the_checkpoint_and_the_export_mark(store: RedisStore, table: TableConfig) -> None:
    checkpoint = await store.journal.checkpoint(GROUP)
    assert checkpoint.seq == 0 == await store.journal.checkpoint_seq(GROUP)
    seq = await store.journal.seq(GROUP)
    assert await store.journal.mark_exported(GROUP, seq) == seq
    assert await store.journal.days_closed(GROUP) == {}
    snapshot = await store.journal.audit_snapshot(GROUP)
    assert snapshot.meters_unchanged and snapshot.seq == seq


async def test_the_counters_count_rounds(store: RedisStore, table: TableConfig) -> None:
    await play(store, table, 1, NOTHING)
    counters = await store.journal.counters(GROUP)
    assert counters and all(value >= 0 for value in counters.values())


async def test_the_audit_snapshot_reads_again_when_a_meter_is_swapped_meanwhile(
    store: RedisStore, table: TableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between listing the meters and reading them, one meter retires and another is created:
    the set keeps its size but not its members. The audit reads again rather than check the
    journal against a meter list that no longer holds (the new meter's seed unchecked)."""
    await store.catalog.create_meter(
        MeterConfig("spare", GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor="test"
    )

    async def swap_a_meter() -> None:
        await store.controls.enter_maintenance(GROUP, actor="a", actor_cert="a", reason="x")
        await store.controls.retire_meter(
            "spare", METER, actor="a", actor_cert="a", reason="unused", approval="t-1"
        )
        await store.catalog.create_meter(
            MeterConfig("fresh", GROUP, "caribbean-stud", RESET_CENTS, 150_000), actor="a"
        )

    calls = step_between_reads(monkeypatch, store.journal, swap_a_meter)
    snapshot = await store.journal.audit_snapshot(GROUP)
    assert calls == [2], "the audit did not read again after the meters changed"
    assert {m.meter_id for m in snapshot.meters} == {METER, "fresh"}
