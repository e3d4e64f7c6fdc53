"""Many tables on one linked meter at once, through two controller replicas: the meter stays
exact and the journal agrees; two registrations of one table race and one wins."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import grpc

from controller.journal.audit import verify
from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerClient
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from tests.helpers import RESET_CENTS, Floor, progressive_table

TABLES = 20
ROUNDS = 50


async def test_twenty_tables_by_fifty_rounds_in_parallel_on_one_meter(
    controller: ControllerServer,
    admin: pb_grpc.AdminServiceAsyncStub,
    server_config: ServerConfig,
    pki: TestPKI,
) -> None:
    table_ids = [f"t{n}" for n in range(1, TABLES + 1)]
    floor = Floor(admin)
    await floor.create(tables=table_ids)
    # Two controller replicas on the same Redis: half of the tables talk to each.
    replica = ControllerServer(server_config)
    await replica.start()
    targets = [f"127.0.0.1:{controller.port}", f"127.0.0.1:{replica.port}"]
    clients = [
        ControllerClient(targets[n % 2], tls_files=pki.client("table", table_id), retry_for_s=30)
        for n, table_id in enumerate(table_ids)
    ]
    simulators = [
        TableSimulator(
            TableAgent(table_id, client),
            SimulationConfig(occupancy_percent=100, wager_percent=70),
            say=lambda line: None,
        )
        for table_id, client in zip(table_ids, clients, strict=True)
    ]
    tallies = await asyncio.wait_for(
        asyncio.gather(*(simulator.run(ROUNDS) for simulator in simulators)), timeout=240
    )
    for client in clients:
        await client.close()
    await replica.stop(grace_s=1)

    assert sum(t.rounds for t in tallies) == TABLES * ROUNDS
    wagers = sum(t.wagers for t in tallies)
    hits = [award for t in tallies for _, award in t.awards if award.pending_validation]
    resets = sum(1 for award in hits if award.award_text == "100% of meter")
    meter = await floor.meter()
    # 15% of each $1 wager is exactly 15 cents, so the meter is a whole number of cents:
    # reset + contributions - percentage awards + one reset amount per 100% award.
    expected = RESET_CENTS + 15 * wagers - sum(a.amount_cents for a in hits) + RESET_CENTS * resets
    assert meter.amount_microcents == expected * 1_000_000
    assert meter.wagers_total == wagers
    report = await verify(controller.store)
    assert report.ok, report.differences
    assert report.entries >= wagers


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
