"""Sub-cent meters, transient Redis states, audits during play, counters, registration races."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import grpc
from redis.asyncio import Redis

from controller.audit import verify
from controller.server import ControllerServer
from controller.testing import TestPKI, free_port
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager, WagerKind
from tests.helpers import (
    FLUSH_CLUBS,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    expect_refusal,
    lockout,
    progressive_table,
    settle,
    snapshot,
    table_client,
)

MICRO = 1_000_000


async def test_sub_cent_meter_awards_round_down_and_the_remainder_funds_the_reset(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="floor"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-main",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="12.3456",
        )
    )
    await Floor(admin).register("t1")
    locked = await tables.Lockout(lockout("t1", 1, [2, 4, 6]))
    assert [w.contributions[0].to_meter_microcents for w in locked.accepted] == [12_345_600] * 3
    assert locked.meters[0].amount_microcents == RESET_CENTS * MICRO + 37_036_800
    reply = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 4: FLUSH_CLUBS, 6: STRAIGHT_FLUSH_HEARTS})
    )
    straight_flush, _, royal = reply.results
    assert straight_flush.meter_before_cents == 1_000_037
    assert straight_flush.amount_cents == 100_003  # 10% of $10,000.37 is $1,000.037: floor
    assert royal.meter_before_cents == 900_034
    assert royal.amount_cents == 900_034
    meter = await Floor(admin).meter()
    assert meter.amount_microcents == RESET_CENTS * MICRO
    # the 36,800 microcents left after the royal flush's whole cents stay in the pool
    assert meter.operator_seed_microcents_total == 2 * RESET_CENTS * MICRO - 36_800


async def test_a_read_only_redis_is_unavailable_and_the_agent_retries_until_it_is_writable(
    controller: ControllerServer, floor: Floor, redis_client: Redis, pki: TestPKI
) -> None:
    await redis_client.replicaof("127.0.0.1", free_port())
    client = table_client(controller.port, pki, retry_for_s=20)
    try:
        direct = pb_grpc.TableServiceStub(client._channel)
        await expect_refusal(
            direct.Lockout(lockout("t1", 1, [1])),
            grpc.StatusCode.UNAVAILABLE,
            "Redis cannot serve this now (READONLY)",
        )
        agent = TableAgent("t1", client)
        pending = asyncio.create_task(
            agent.lockout(agent.new_round(), [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
        )
        await asyncio.sleep(0.5)
        assert not pending.done()
        await redis_client.replicaof("NO", "ONE")
        answer = await asyncio.wait_for(pending, timeout=15)
        assert answer.meter_cents == {"cs-main": RESET_CENTS + 15}
    finally:
        await redis_client.replicaof("NO", "ONE")
        await client.close()


async def test_audit_is_ok_while_tables_play(
    controller: ControllerServer, admin: pb_grpc.AdminServiceAsyncStub, pki: TestPKI
) -> None:
    table_ids = [f"t{n}" for n in range(1, 7)]
    await Floor(admin).create(tables=table_ids, reserve_rate="5")
    clients = [table_client(controller.port, pki, t) for t in table_ids]
    play = asyncio.gather(
        *(
            TableSimulator(
                TableAgent(t, c), SimulationConfig(void_percent=10), say=lambda _: None
            ).run(60)
            for t, c in zip(table_ids, clients, strict=True)
        )
    )
    audits = 0
    while not play.done():
        report = await verify(controller.store)
        assert report.ok, report.differences
        audits += 1
    await play
    for client in clients:
        await client.close()
    assert audits > 1
    assert (await verify(controller.store)).ok


async def test_counters_only_go_up_and_replays_are_counted_apart(
    controller: ControllerServer, tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2, 3]))
    await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal"))
    await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal"))
    await controller.check_state()  # the refresh reads Redis's counters
    registry = controller.metrics.registry
    meter = {"meter": "cs-main"}
    assert registry.get_sample_value("jackpot_contributions_cents_total", meter) == 45
    assert registry.get_sample_value("jackpot_void_contributions_cents_total", meter) == 45
    assert registry.get_sample_value("jackpot_voids_total", meter) == 3
    assert registry.get_sample_value("jackpot_replayed_requests_total", {"phase": "void"}) == 1


async def test_a_settlement_missing_a_wagering_seat_changes_nothing(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(settle("t1", 1, {2: FLUSH_CLUBS})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "seat 1 progressive was accepted at lockout but the seat was not reported",
    )
    assert await snapshot(redis_client) == before


async def test_one_table_cannot_be_registered_in_two_link_groups_at_once(
    admin: pb_grpc.AdminServiceAsyncStub, controller: ControllerServer
) -> None:
    for group in ("g1", "g2"):
        await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id=group))
        await admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id=f"m-{group}",
                link_group_id=group,
                game="caribbean-stud",
                reset_cents=RESET_CENTS,
                rate_of_progression_percent="15",
            )
        )

    def register(group: str) -> Awaitable[pb.Table]:
        return admin.RegisterTable(
            pb.RegisterTableRequest(table=progressive_table("t", group, f"m-{group}"))
        )

    outcomes = await asyncio.gather(register("g1"), register("g2"), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, grpc.aio.AioRpcError)]
    assert len(failures) == 1
    assert failures[0].code() == grpc.StatusCode.ALREADY_EXISTS
    tables = await admin.ListTables(pb.ListTablesRequest())
    assert [t.table_id for t in tables.tables] == ["t"]


async def test_a_void_without_a_hit_since_its_lockout_takes_its_contribution_back_in_full(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    floor = Floor(admin)
    await floor.create()
    await tables.Lockout(lockout("t1", 1, [6]))
    await tables.Settle(settle("t1", 1, {6: STRAIGHT_FLUSH_HEARTS}))  # 10%: below the reset
    before = await floor.meter()
    assert before.amount_cents < RESET_CENTS
    await tables.Lockout(lockout("t1", 2, [1, 2]))
    reply = await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=2, reason="misdeal"))
    assert [w.contributions[0].to_meter_microcents for w in reply.reversed] == [
        15_000_000,
        15_000_000,
    ]
    after = await floor.meter()
    assert after.amount_microcents == before.amount_microcents
    assert after.operator_seed_microcents_total == before.operator_seed_microcents_total


async def test_rejecting_a_royal_flush_undoes_its_reset_exactly(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    controller: ControllerServer,
) -> None:
    floor = Floor(admin)
    await floor.create(reserve_rate="5")
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    before = await floor.meter()
    settled = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES, 2: FLUSH_CLUBS}))
    royal = next(r for r in settled.results if r.seat == 1)
    await admin.RejectJackpot(pb.ReviewJackpotRequest(jackpot_id=royal.jackpot_id))
    after = await floor.meter()
    assert after.amount_microcents == before.amount_microcents
    assert after.reserve_microcents == before.reserve_microcents
    assert after.operator_seed_microcents_total == before.operator_seed_microcents_total
    assert after.hits_total == 0 and after.awards_cents_total == 0
    assert (await verify(controller.store)).ok
