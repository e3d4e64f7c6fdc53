"""Controls over the gateway: maintenance in and out, a two-person meter adjustment, a table
retired (and its cached definition forgotten), each journaled once."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.store import keys
from controller.store.redis_store import RedisStore
from jackpot.errors import CorruptRecord, FailedPrecondition, NotFound
from jackpot.money import MICROCENTS_PER_CENT
from tests.integration.store.conftest import GROUP, METER, RESET_CENTS

ANN = ("jackpot://operator/ann", "aa" * 32)
BOB = ("jackpot://operator/bob", "bb" * 32)


async def test_a_table_is_retired_in_maintenance_and_forgotten(
    store: RedisStore, table: TableConfig
) -> None:
    actor, cert = ANN
    with pytest.raises(FailedPrecondition):  # out of maintenance: refused
        await store.controls.retire_table(table, actor=actor, actor_cert=cert, reason="gone")
    entered = await store.controls.enter_maintenance(
        GROUP, actor=actor, actor_cert=cert, reason="swap"
    )
    assert entered == await store.journal.seq(GROUP)
    assert (await store.catalog.get_link_group(GROUP)).maintenance.active
    await store.controls.retire_table(table, actor=actor, actor_cert=cert, reason="gone")
    with pytest.raises(NotFound, match="table t1 was retired"):
        await store.tables.get_table("t1")  # not the cached definition: read, and retired
    assert await store.controls.retired_table("t1") == table
    await store.controls.leave_maintenance(GROUP, actor=actor, actor_cert=cert, reason="done")
    assert not (await store.catalog.get_link_group(GROUP)).maintenance.active


async def test_an_adjustment_moves_money_once_another_approves_it(
    store: RedisStore, table: TableConfig
) -> None:
    requested = await store.controls.request_adjustment(
        METER, 500, reason="refill", reference="ticket 7", actor=ANN[0], actor_cert=ANN[1]
    )
    again = await store.controls.request_adjustment(
        METER, 500, reason="refill", reference="ticket 7", actor=ANN[0], actor_cert=ANN[1]
    )
    assert again.adjustment_id == requested.adjustment_id and requested.status == "requested"
    with pytest.raises(FailedPrecondition):  # the requester cannot approve it
        await store.controls.review_adjustment(
            requested.adjustment_id, approve=True, actor=ANN[0], actor_cert=ANN[1], note=""
        )
    approved = await store.controls.review_adjustment(
        requested.adjustment_id, approve=True, actor=BOB[0], actor_cert=BOB[1], note="ok"
    )
    assert approved.status == "approved"
    meter = await store.catalog.get_meter(METER)
    assert meter.amount_microcents == (RESET_CENTS + 500) * MICROCENTS_PER_CENT
    listed = await store.controls.list_adjustments(GROUP, status="approved")
    assert [a.adjustment_id for a in listed] == [requested.adjustment_id]
    with pytest.raises(NotFound, match="ids look like 'floor:17'"):
        await store.controls.get_adjustment("nonsense")


async def test_a_corrupt_last_cancellation_is_refused_as_corrupt_naming_its_key(
    store: RedisStore, table: TableConfig
) -> None:
    """A meter's or table's ``staged_cancelled`` that does not parse: a cancel is refused as
    a corrupt record (DATA_LOSS, the key named), never a script error (INTERNAL)."""
    group = keys.LinkGroupKeys(GROUP)
    await store.client.hset(group.meter(METER), "staged_cancelled", "{not json")
    await store.client.hset(group.table("t1"), "staged_cancelled", "[1, 2")
    with pytest.raises(CorruptRecord, match=group.meter(METER)):
        await store.controls.cancel_meter_change(
            METER, actor="a", actor_cert="a", reason="withdrawn"
        )
    with pytest.raises(CorruptRecord, match=group.table("t1")):
        await store.staged_tables.cancel(table, actor="a", actor_cert="a", reason="withdrawn")
