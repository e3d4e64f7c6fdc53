"""Jackpots: a hit waits for validation, is approved by one and paid by another, each step
once; an unknown or malformed id is named; a corrupt record is left out and reported."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.errors import CorruptRecord, FailedPrecondition, NotFound
from tests.integration.store.conftest import GROUP, METER, NOTHING, ROYAL, play

SUE = ("jackpot://supervisor/sue", "aa" * 32)
CAL = ("jackpot://cashier/cal", "bb" * 32)


async def _hit(store: RedisStore, table: TableConfig, round_id: int = 1) -> str:
    settled = await play(store, table, round_id, ROYAL, NOTHING)
    [jackpot_id] = [result.jackpot_id for result in settled.results if result.jackpot_id]
    return jackpot_id


async def test_a_hit_is_approved_then_paid_by_another(
    store: RedisStore, table: TableConfig
) -> None:
    jackpot_id = await _hit(store, table)
    [pending] = await store.jackpots.list_pending_jackpots(GROUP)
    assert (pending.jackpot_id, pending.meter_id, pending.status) == (jackpot_id, METER, "pending")
    approved = await store.jackpots.review_jackpot(
        jackpot_id, approve=True, reviewer=SUE[0], reviewer_cert=SUE[1], note="ok"
    )
    assert approved.status == "approved" and approved.reviewed_by == SUE[0]
    assert await store.jackpots.list_pending_jackpots() == []
    with pytest.raises(FailedPrecondition):
        await store.jackpots.pay_jackpot(
            jackpot_id, payer=SUE[0], payer_cert=SUE[1], note="", two_people=True
        )
    paid = await store.jackpots.pay_jackpot(
        jackpot_id, payer=CAL[0], payer_cert=CAL[1], note="", two_people=True
    )
    again = await store.jackpots.pay_jackpot(
        jackpot_id, payer=CAL[0], payer_cert=CAL[1], note="", two_people=True
    )
    assert paid.status == again.status == "paid"
    assert (await store.jackpots.get_jackpot(jackpot_id)).status == "paid"
    assert [j.jackpot_id for j in await store.jackpots.list_jackpots(status="paid")] == [jackpot_id]
    assert await store.jackpots.list_jackpots(table_id="t9") == []


async def test_an_unknown_or_malformed_id_is_named(store: RedisStore, table: TableConfig) -> None:
    with pytest.raises(NotFound, match=r"jackpot floor:999 does not exist$"):
        await store.jackpots.get_jackpot("floor:999")
    with pytest.raises(NotFound, match="ids look like 'group:17'"):
        await store.jackpots.get_jackpot("nonsense")


async def test_a_corrupt_jackpot_is_left_out_and_reported(
    store: RedisStore, table: TableConfig
) -> None:
    first = await _hit(store, table, 1)
    second = await _hit(store, table, 2)
    await store.client.hset(keys.LinkGroupKeys(GROUP).jackpots, first, "{")
    skipped: list[CorruptRecord] = []
    listed = await store.jackpots.list_pending_jackpots(GROUP, skipped=skipped)
    assert [j.jackpot_id for j in listed] == [second] and [e.name for e in skipped] == [first]
    with pytest.raises(CorruptRecord):
        await store.jackpots.get_jackpot(first)
