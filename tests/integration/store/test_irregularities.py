"""Irregularities: a held round confirmed by a supervisor settles; the records read and
filtered; an unknown one named."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint
from controller.store import keys
from controller.store.irregularities import Resolution
from controller.store.redis_store import RedisStore
from jackpot.errors import CorruptRecord, NotFound
from jackpot.kinds import IrregularityKind
from tests.integration.store.conftest import GROUP, NOTHING, NOTHING_TOO, play, wagers

SUPERVISOR = Resolution("jackpot://supervisor/sue", "ab" * 32, "counted again: 2 chips")


async def _held(store: RedisStore, table: TableConfig, round_id: int) -> None:
    placed = wagers(1, 2)
    await store.rounds.lockout(table, round_id, placed, lockout_fingerprint(placed))
    assert not (await store.rounds.report_chip_count(table, round_id, 5)).matched


async def test_a_confirmed_chip_count_lets_the_round_settle(
    store: RedisStore, table: TableConfig
) -> None:
    await _held(store, table, 1)
    held = await store.irregularities.get_irregularity(table, 1, IrregularityKind.CHIP_COUNT)
    assert (held.status, held.chips, held.accepted) == ("open", 5, 2)
    confirmed = await store.irregularities.confirm_irregularity(table, 1, SUPERVISOR)
    assert confirmed.status != "open"
    settled = await play(store, table, 1, NOTHING, NOTHING_TOO)
    assert sorted(r.seat for r in settled.results) == [1, 2]


async def test_the_records_are_listed_filtered_and_a_corrupt_one_skipped(
    store: RedisStore, table: TableConfig
) -> None:
    await _held(store, table, 1)
    await _held(store, table, 2)
    await store.irregularities.confirm_irregularity(table, 1, SUPERVISOR)
    pending = await store.irregularities.list_irregularities(GROUP, status="open")
    assert [r.round_id for r in pending] == [2]
    assert await store.irregularities.list_irregularities(table_id="t9") == []
    await store.client.hset(keys.LinkGroupKeys(GROUP).irregularities, "t1:2:chip_count", "{")
    skipped: list[CorruptRecord] = []
    listed = await store.irregularities.list_irregularities(GROUP, skipped=skipped)
    assert [r.round_id for r in listed] == [1] and [e.name for e in skipped] == ["t1:2:chip_count"]
    with pytest.raises(NotFound, match="round 3 of table t1 has no chip_count irregularity"):
        await store.irregularities.get_irregularity(table, 3, IrregularityKind.CHIP_COUNT)
