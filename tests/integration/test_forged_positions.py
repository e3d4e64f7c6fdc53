"""No table can stop others: a journal position stops a link group only when the controller
can verify it answered it (its mac, under --position-key), or when two table identities
claim so (docs/journal.md, "Verified positions"; docs/security.md).

An attacker holding one table's certificate sends made-up positions; the other tables of
its link group play on, also after an operator resumed the group, and the forging table is
refused with the reason and counted (jackpot_table_position_ahead_total, alert
JackpotTablePositionAhead). A Redis restored from an older copy under a restarted
controller is still detected by the honest tables' verified positions.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2
from redis.asyncio import Redis

from controller.runtime.server import LINK_GROUP_HEALTH, ControllerServer
from controller.security.position_key import read_position_key
from controller.store import keys
from controller.testing import TestPKI
from jackpot.epochs import JournalPosition, position_mac
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from tests.helpers import (
    Channels,
    Floor,
    connect,
    controller_config,
    expect_refusal,
    journal,
    table_client,
)
from tests.integration.test_epochs import health_of

TABLES = ("t1", "t2", "t3")
NOT_VERIFIED = "only this table is refused and the link group serves on"


async def honest(port: int, pki: TestPKI, table_id: str, tmp_path: Path) -> TableAgent:
    """A table agent with a durable outbox (its position and mac survive a restart)."""
    client = table_client(port, pki, table_id, retry_for_s=0.5)
    agent = TableAgent(table_id, client, Outbox(tmp_path, table_id))
    agent.continue_after((await client.get_table(table_id)).last_round_id)
    return agent


async def play(agent: TableAgent, rounds: int = 2) -> None:
    await TableSimulator(agent, SimulationConfig(void_percent=0)).run(rounds)


def ahead_count(controller: ControllerServer, table_id: str) -> float:
    sample = controller.metrics.registry.get_sample_value(
        "jackpot_table_position_ahead_total", {"table": table_id}
    )
    return sample or 0.0


async def stopped(redis_client: Redis) -> str:
    return str(await redis_client.hget(keys.LinkGroupKeys("floor").epoch, "stopped") or "")


async def claims(redis_client: Redis) -> list[str]:
    """Who made each journaled first unverified claim of an epoch, in order."""
    entries = await journal(redis_client)
    return [entry["by"] for _, entry in entries if entry["type"] == "unverified_claim"]


async def forge(stub: pb_grpc.TableServiceAsyncStub, known: pb.JournalPosition) -> None:
    """t1's GetTable with a made-up position: refused, for t1 only."""
    await expect_refusal(
        stub.GetTable(pb.GetTableRequest(table_id="t1", known=known)),
        grpc.StatusCode.UNAVAILABLE,
        NOT_VERIFIED,
    )


async def test_one_table_forging_positions_stops_no_other_table(
    controller: ControllerServer,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    pki: TestPKI,
    redis_client: Redis,
    tmp_path: Path,
) -> None:
    await Floor(admin).create(tables=TABLES)
    t2, t3 = [await honest(controller.port, pki, t, tmp_path) for t in ("t2", "t3")]
    await play(t2)
    epoch = t2.client.known.epoch
    assert t2.client.known.mac  # every answer carries the controller's mac
    seq = t2.client.known.seq
    forger = pb_grpc.TableServiceStub(channels("table", "t1"))
    made_up_key = b"\x07" * 32
    forgeries = [
        pb.JournalPosition(epoch=epoch, seq=seq + 1000),  # ahead, no mac
        pb.JournalPosition(epoch="forged-epoch", seq=1),  # an epoch Redis never had
        pb.JournalPosition(  # a mac of the attacker's own key
            epoch=epoch, seq=seq + 5, mac=position_mac(made_up_key, "t1", epoch, seq + 5)
        ),
        pb.JournalPosition(  # another table's genuine mac, replayed as t1's
            epoch=t2.client.known.epoch, seq=seq + 5, mac=t2.client.known.mac
        ),
    ]
    for known in forgeries:
        await forge(forger, known)
    # Every other table plays on, before and after; nothing stopped, the claim journaled once.
    await play(t2)
    await play(t3)
    assert await stopped(redis_client) == ""
    assert all(entry["type"] != "link_group_stopped" for _, entry in await journal(redis_client))
    assert await claims(redis_client) == ["table t1"]
    await controller.check_state()
    assert "floor" not in controller.guard.problems
    assert (
        await health_of(controller, pki, LINK_GROUP_HEALTH + "floor")
        == health_pb2.HealthCheckResponse.SERVING
    )
    assert ahead_count(controller, "t1") == len(forgeries)
    assert ahead_count(controller, "t2") == 0
    # Every table call of t1 is refused the same way, never a final refusal it would drop.
    await expect_refusal(
        forger.ReportChipCount(
            pb.ReportChipCountRequest(table_id="t1", round_id=1, chips=1, known=forgeries[0])
        ),
        grpc.StatusCode.UNAVAILABLE,
        "Redis lost acknowledged steps",
    )

    # The group stops on a verified position (the original protection) and an operator
    # resumes it: the forger, forging again in the new epoch, still stops nobody.
    t2.client.known = JournalPosition(epoch, seq + 50, position_mac_of(pki, "t2", epoch, seq + 50))
    with pytest.raises(ControllerUnreachable, match="Redis lost acknowledged steps"):
        await t2.client.get_table("t2")
    reason = await stopped(redis_client)
    assert reason.startswith("table t2 was acknowledged")
    group = await admin.ResumeLinkGroup(
        pb.ResumeLinkGroupRequest(
            link_group_id="floor", reason="t2's steps paid by hand", epoch=epoch
        )
    )
    resumed = group.journal.epoch
    assert resumed != epoch
    before = ahead_count(controller, "t1")
    for known in (
        pb.JournalPosition(epoch=resumed, seq=group.journal.seq + 1000),
        pb.JournalPosition(epoch="forged-epoch", seq=7),
    ):
        for _ in range(3):  # again and again: one table is one claim
            await forge(forger, known)
    await play(t2)
    await play(t3)
    assert await stopped(redis_client) == ""
    assert ahead_count(controller, "t1") == before + 6
    assert await claims(redis_client) == ["table t1", "table t1"]  # once in each epoch


def position_mac_of(pki: TestPKI, table_id: str, epoch: str, seq: int) -> str:
    """The mac the test controller answers ``table_id`` at (epoch, seq)."""
    return position_mac(read_position_key(pki.position_key()), table_id, epoch, seq)


async def test_two_tables_claiming_unverified_positions_stop_the_group(
    controller: ControllerServer,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    pki: TestPKI,
    redis_client: Redis,
    tmp_path: Path,
) -> None:
    """Without a mac (an outbox from before macs, a lost key), the controller's evidence is
    two distinct table identities: the second claim stops the group."""
    await Floor(admin).create(tables=TABLES)
    t3 = await honest(controller.port, pki, "t3", tmp_path)
    await play(t3)
    epoch, seq = t3.client.known.epoch, t3.client.known.seq
    ahead = pb.JournalPosition(epoch=epoch, seq=seq + 10)
    await forge(pb_grpc.TableServiceStub(channels("table", "t1")), ahead)
    assert await stopped(redis_client) == ""
    await expect_refusal(
        pb_grpc.TableServiceStub(channels("table", "t2")).GetTable(
            pb.GetTableRequest(table_id="t2", known=ahead)
        ),
        grpc.StatusCode.UNAVAILABLE,
        "as table t1 claimed before: two tables agree",
    )
    assert "two tables agree" in await stopped(redis_client)
    assert (await journal(redis_client))[-1][1]["type"] == "link_group_stopped"
    assert await claims(redis_client) == ["table t1"]  # the first claim, journaled
    with pytest.raises(ControllerUnreachable, match="link group"):
        await t3.client.get_table("t3")


async def test_redis_restored_from_an_older_copy_is_detected_by_honest_tables(
    redis_url: str, redis_client: Redis, pki: TestPKI, tmp_path: Path
) -> None:
    """The original protection, for real: Redis goes back to an older copy of itself while
    the controller restarts (so it remembers nothing); the first honest table that comes
    back with its later acknowledged position (and mac) stops the group for every table."""
    raw = Redis.from_url(redis_url)
    first = ControllerServer(controller_config(redis_url, pki))
    await first.start()
    try:
        async with connect(f"127.0.0.1:{first.port}", pki) as (_, admin):
            await Floor(admin).create(tables=TABLES)
        t1, t2 = [await honest(first.port, pki, t, tmp_path) for t in ("t1", "t2")]
        await play(t1, 1)
        await play(t2, 1)
        older = {key: await raw.dump(key) async for key in raw.scan_iter()}
        await play(t1, 3)
        acknowledged = Outbox(tmp_path, "t1").last_position()
    finally:
        await first.stop(grace_s=1)
        await t1.client.close()
        await t2.client.close()
    await raw.flushall()
    for key, value in older.items():
        assert value is not None
        await raw.restore(key, 0, value, replace=True)
    await raw.aclose()

    again = ControllerServer(controller_config(redis_url, pki))
    await again.start()
    try:
        t2 = await honest(again.port, pki, "t2", tmp_path)  # t2 holds nothing Redis lacks
        await play(t2, 1)
        t1 = await honest_after_restart(again.port, pki, "t1", tmp_path, acknowledged)
        with pytest.raises(ControllerUnreachable, match="Redis lost acknowledged steps"):
            await play(t1, 1)
        assert (await stopped(redis_client)).startswith("table t1 was acknowledged")
        with pytest.raises(ControllerUnreachable, match="link group"):
            await t2.client.get_table("t2")
        await t1.client.close()
        await t2.client.close()
    finally:
        await again.stop(grace_s=1)


async def honest_after_restart(
    port: int, pki: TestPKI, table_id: str, tmp_path: Path, acknowledged: JournalPosition
) -> TableAgent:
    """The table agent restarted on its outbox: it sends the position (and mac) it keeps."""
    client = table_client(port, pki, table_id, retry_for_s=0.5)
    agent = TableAgent(table_id, client, Outbox(tmp_path, table_id))
    assert client.known == acknowledged and client.known.mac
    return agent


async def test_a_controller_without_a_position_key_verifies_nothing(
    redis_url: str, redis_client: Redis, pki: TestPKI, tmp_path: Path
) -> None:
    """Without --position-key no answer carries a mac and no position verifies (not even one
    with the mac of another controller's key): one table never stops its group alone."""
    server = ControllerServer(controller_config(redis_url, pki, position_key=None))
    await server.start()
    channels = Channels(f"127.0.0.1:{server.port}", pki)
    try:
        async with connect(f"127.0.0.1:{server.port}", pki) as (_, admin):
            await Floor(admin).create(tables=TABLES)
        t2 = await honest(server.port, pki, "t2", tmp_path)
        await play(t2, 1)
        assert t2.client.known.epoch and not t2.client.known.mac
        epoch, seq = t2.client.known.epoch, t2.client.known.seq + 10
        mac = position_mac_of(pki, "t1", epoch, seq)  # what a keyed controller would answer
        await forge(
            pb_grpc.TableServiceStub(channels("table", "t1")),
            pb.JournalPosition(epoch=epoch, seq=seq, mac=mac),
        )
        assert await stopped(redis_client) == ""
        await play(t2, 1)
        await t2.client.close()
    finally:
        await channels.close()
        await server.stop(grace_s=1)
