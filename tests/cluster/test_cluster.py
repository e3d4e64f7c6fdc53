"""The controller on a real Redis Cluster (3 primaries, 3 replicas): 30 link groups spread
over every shard, no command over two slots, a primary killed during play with nothing
acknowledged lost, and the audit of every link group, shard by shard."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from grpc import aio
from redis.crc import key_slot

from controller.ctl.main import main as jackpotctl
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import cluster, keys
from controller.store.redis_store import RedisStore
from controller.testing import RedisCluster, TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.cluster.conftest import CrossSlotGuard
from tests.helpers import (
    HIGH_CARD,
    RESET_CENTS,
    TWO_PAIR,
    Floor,
    connect,
    controller_config,
    lockout,
    settle,
)

GROUPS = 30
SEATS = (2, 6)
CONTRIBUTION_CENTS = 15  # per $1 wager at the test floor's 15% rate
HANDS = {2: HIGH_CARD, 6: TWO_PAIR}  # nothing from the meter
PATIENCE_S = 180.0
"""How long a table keeps sending the same request while its shard fails over (loaded CI
machines are slow; the test ends as soon as every table has played)."""


def floors(admin: pb_grpc.AdminServiceAsyncStub) -> list[Floor]:
    return [Floor(admin, f"lg-{number:02d}", f"m-{number:02d}") for number in range(GROUPS)]


async def create(floor: Floor) -> None:
    await floor.create(tables=(f"t-{floor.link_group_id[3:]}",))


REFUSED: Counter[str] = Counter()
"""How many calls were answered UNAVAILABLE (and sent again), by table."""


async def patiently(call: Callable[[], Awaitable[Any]], deadline: float, table_id: str = "") -> Any:
    """``call()`` until it is answered, sending it again (it is idempotent) while the
    controller answers UNAVAILABLE, as a table's agent does, until ``deadline``."""
    while True:
        try:
            return await call()
        except aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            REFUSED[table_id] += 1
        await asyncio.sleep(0.05)


async def play(
    tables: pb_grpc.TableServiceAsyncStub, table_id: str, rounds: range, deadline: float
) -> None:
    for round_id in rounds:
        locking = lockout(table_id, round_id, SEATS)
        settling = settle(table_id, round_id, HANDS)
        await patiently(lambda: tables.Lockout(locking), deadline, table_id)  # noqa: B023
        await patiently(lambda: tables.Settle(settling), deadline, table_id)  # noqa: B023


def test_every_key_of_a_link_group_is_in_its_tag_slot() -> None:
    assert cluster.check_link_group_slots("floor") == key_slot(b"{lg:floor}")
    one, other = keys.LinkGroupKeys("lg-00"), keys.LinkGroupKeys("lg-01")
    assert cluster.one_slot([one.meter("m"), one.journal, one.round("t", 7)]) == key_slot(
        b"{lg:lg-00}"
    )
    with pytest.raises(cluster.CrossSlot, match="keys of 2 slots"):
        cluster.one_slot([one.journal, other.journal])


def test_the_guard_sees_every_command_over_two_slots() -> None:
    guard = CrossSlotGuard()
    guard.check([("EVALSHA", "sha", 2, "{a}x", "{a}y", "arg"), ("HGET", "{b}h", "f")])
    guard.check([("MULTI",), ("HGETALL", "{a}h"), ("SMEMBERS", "{a}s"), ("EXEC",)])
    assert guard.violations == []
    guard.check([("EVALSHA", "sha", 2, "{a}x", "{b}y")])
    guard.check([("MULTI",), ("HGETALL", "{a}h"), ("SMEMBERS", "{b}s"), ("EXEC",)])
    guard.check([("DEL", "{a}x", "{b}x")])
    assert len(guard.violations) == 3, guard.violations
    assert guard.seen["EVALSHA"] == 2


async def test_a_script_over_two_slots_is_never_sent(redis_url: str) -> None:
    store = RedisStore.from_url(redis_url)
    try:
        one, other = keys.LinkGroupKeys("lg-00"), keys.LinkGroupKeys("lg-01")
        with pytest.raises(cluster.CrossSlot):
            await store.gateway.run(store.gateway.scripts.read_position, [one.epoch, other.seq], [])
    finally:
        await store.close()


async def test_close_closes_a_connection_opened_on_a_node_that_left_the_map(
    redis_url: str,
) -> None:
    # A failover: a call takes the failed primary from the map of slots, another call reads
    # the map again and redis-py drops that node (closing its idle connections), then the
    # first call opens a connection on the node it holds and hands it back, still open, to
    # a node nobody names any more. Only the client's own record of what it opened can close
    # it; else the garbage collector does, at a random later moment, inside whatever runs.
    client = cluster.connect_cluster(
        redis_url, password=None, max_connections=4, socket_timeout_s=5.0
    )
    try:
        await client.initialize()
        manager = client.nodes_manager
        node = next(iter(manager.nodes_cache.values()))  # the first call's node
        left = {name: other for name, other in manager.nodes_cache.items() if other is not node}
        manager.set_nodes(manager.nodes_cache, left, remove_old=True)  # the map read again
        manager.set_nodes(manager.startup_nodes, left, remove_old=True)
        await asyncio.gather(*manager._background_tasks)
        orphan = node.acquire_connection()
        await orphan.connect()  # type: ignore[no-untyped-call]
        node.release(orphan)
        assert orphan.is_connected and node.name not in manager.nodes_cache
    finally:
        await cluster.close(client)
    assert not orphan.is_connected, "cluster.close left open a connection of a node that left"


async def test_thirty_link_groups_spread_over_every_shard(
    admin: pb_grpc.AdminServiceAsyncStub,
    tables: pb_grpc.TableServiceAsyncStub,
    controller: ControllerServer,
    redis_url: str,
    cross_slot_guard: CrossSlotGuard,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scripts_before = cross_slot_guard.seen["EVALSHA"]
    deadline = time.monotonic() + PATIENCE_S
    all_floors = floors(admin)
    await asyncio.gather(*(create(floor) for floor in all_floors))
    await asyncio.gather(
        *(play(tables, f"t-{number:02d}", range(1, 3), deadline) for number in range(GROUPS))
    )
    assert cross_slot_guard.seen["EVALSHA"] >= scripts_before + GROUPS * 7  # each one checked

    shards = await controller.store.catalog.link_groups_by_shard()
    assert len(shards) == 3 and all(shards.values()), shards  # every shard holds some
    assert sorted(g for groups in shards.values() for g in groups) == [
        f.link_group_id for f in all_floors
    ]
    for floor in all_floors:
        meter = await floor.meter()
        assert meter.amount_cents == RESET_CENTS + 2 * len(SEATS) * CONTRIBUTION_CENTS

    report = await verify(controller.store)
    assert report.ok, report.differences
    assert (report.link_groups, report.meters) == (GROUPS, GROUPS)
    assert report.shards == shards
    seeds = redis_url.partition("://")[2]
    assert await asyncio.to_thread(jackpotctl, ["audit", "verify", "--redis-cluster", seeds]) == 0
    out = capsys.readouterr().out
    assert f"audit: OK ({GROUPS} link groups, {GROUPS} meters," in out
    for shard, groups in shards.items():
        assert f"audit: shard {shard}: {len(groups)} link groups {', '.join(groups)}" in out


async def test_the_audit_and_the_reports_read_every_shard_not_only_the_index(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    redis_url: str,
    redis_client: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The index of link groups is one key on one shard, which can lose its data alone."""
    await play(tables, "t1", range(1, 2), time.monotonic() + PATIENCE_S)
    (shard,) = [
        s for s, groups in (await controller.store.catalog.link_groups_by_shard()).items() if groups
    ]
    await redis_client.srem(keys.LINK_GROUPS, "floor")  # as if the index's shard lost it

    report = await verify(controller.store)
    assert report.differences == [
        f"floor: its state is in Redis (shard {shard}) but the index of link groups does not "
        "name it (being created, or the index lost it)"
    ]
    assert report.link_groups == 1 and report.heads["floor"][0] > 0  # audited all the same
    seeds = redis_url.partition("://")[2]
    argv = ["report", "meters", "--redis-cluster", seeds, "--format", "csv"]
    assert await asyncio.to_thread(jackpotctl, argv) == 0
    assert "floor,cs-main" in capsys.readouterr().out

    await redis_client.sadd(keys.LINK_GROUPS, "floor")
    await redis_client.delete(keys.LinkGroupKeys("floor").info)  # as if its shard lost it
    report = await verify(controller.store)
    assert report.differences == [
        "floor: named by the index of link groups, but no shard holds its state"
    ]


async def test_a_primary_killed_during_play_loses_nothing_acknowledged(
    redis_url: str, redis_cluster: RedisCluster, pki: TestPKI
) -> None:
    """Every write waits for its shard's replica (``--wait-replicas 1``, on the connection
    that wrote it); a primary is killed while 30 tables play, its replica is promoted and
    the old primary comes back as a replica. Every table replays what was not answered; at
    the end every meter holds every acknowledged contribution and the audit is OK for every
    link group."""
    server = ControllerServer(
        controller_config(redis_url, pki, wait_replicas=1, refresh_interval_s=0.2)
    )
    await server.start()
    victim = redis_cluster.primary_of_slot(key_slot(b"{lg:lg-00}"))
    played: dict[str, int] = {}  # table -> its last round, every one acknowledged
    failing_over: asyncio.Task[None] | None = None
    try:
        async with connect(f"127.0.0.1:{server.port}", pki) as (tables, admin):
            deadline = time.monotonic() + PATIENCE_S
            all_floors = floors(admin)
            await asyncio.gather(*(create(floor) for floor in all_floors))
            on_victim = [
                f"t-{number:02d}"
                for number in range(GROUPS)
                if redis_cluster.primary_of_slot(key_slot(f"{{lg:lg-{number:02d}}}".encode()))
                is victim
            ]
            assert on_victim, "no link group on the primary to kill"
            await asyncio.gather(
                *(play(tables, f"t-{n:02d}", range(1, 3), deadline) for n in range(GROUPS))
            )
            REFUSED.clear()

            def fail_over() -> None:
                redis_cluster.kill(victim)  # the replica is promoted
                redis_cluster.rejoin(victim)  # and the writes have a replica to wait for

            failing_over = asyncio.create_task(asyncio.to_thread(fail_over))

            async def keep_playing(table_id: str) -> None:
                """Rounds from 3 on, until the failover is over and two more after it."""
                round_id, after = 3, 0
                while after < 2:
                    after += failing_over.done()
                    await play(tables, table_id, range(round_id, round_id + 1), deadline)
                    played[table_id] = round_id
                    round_id += 1

            await asyncio.gather(failing_over, *(keep_playing(f"t-{n:02d}") for n in range(GROUPS)))
            assert redis_cluster.role(victim) == "slave"
            assert all(REFUSED[table_id] for table_id in on_victim), REFUSED  # replayed
            for number, floor in enumerate(all_floors):
                meter = await patiently(floor.meter, deadline)
                last = played[f"t-{number:02d}"]
                expected = RESET_CENTS + last * len(SEATS) * CONTRIBUTION_CENTS
                assert meter.amount_cents == expected, floor.link_group_id
                group = await admin.GetLinkGroup(
                    pb.GetLinkGroupRequest(link_group_id=floor.link_group_id)
                )
                assert not group.stopped, group
                open_rounds = keys.LinkGroupKeys(floor.link_group_id).open_rounds
                assert await server.store.client.smembers(open_rounds) == set()  # all settled
        report = await verify(server.store)
        assert report.ok, report.differences
        assert (report.link_groups, len(report.shards)) == (GROUPS, 3)
        assert all(report.heads[floor.link_group_id][0] > 0 for floor in all_floors)
    finally:
        await server.stop(grace_s=1)
        if failing_over is not None:
            await asyncio.wait([failing_over])  # its processes are the cluster's to stop
        if victim.process is None:  # leave the cluster whole for the next test
            redis_cluster.rejoin(victim)
