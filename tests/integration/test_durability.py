"""Acknowledged means durable: writes wait for Redis replicas when asked to; a Redis that takes
no writes is UNAVAILABLE and the agent retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.domain.config import LinkGroupConfig, MeterConfig
from controller.runtime.server import ControllerServer
from controller.store.redis_store import RedisStore
from controller.testing import RedisServer, TestPKI, free_port
from jackpot.errors import AlreadyExists, NotConfirmed
from jackpot.kinds import WagerKind
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    RESET_CENTS,
    Floor,
    connect,
    controller_config,
    expect_refusal,
    lockout,
    table_client,
)


@pytest.fixture
async def replicated(tmp_path: Path) -> AsyncIterator[tuple[RedisServer, RedisServer]]:
    # No delay before the first full sync (Redis waits 5 s by default for more replicas).
    with RedisServer(
        tmp_path / "primary", extra_args=("--repl-diskless-sync-delay", "0")
    ) as primary:
        with RedisServer(
            tmp_path / "replica", extra_args=("--replicaof", "127.0.0.1", str(primary.port))
        ) as replica:
            client = Redis.from_url(primary.url)
            for _ in range(100):
                info = await client.info("replication")
                if info.get("connected_slaves") == 1 and "state=online" in str(
                    info.get("slave0", "")
                ):
                    break
                await client.wait(1, 100)
            await client.aclose()
            yield primary, replica


async def start(
    url: str, wait_replicas: int, pki: TestPKI, wait_timeout_ms: int = 200
) -> ControllerServer:
    server = ControllerServer(
        controller_config(url, pki, wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms)
    )
    await server.start()
    return server


async def test_acknowledged_writes_are_on_the_replica(
    replicated: tuple[RedisServer, RedisServer], pki: TestPKI
) -> None:
    primary, replica = replicated
    server = await start(primary.url, 1, pki, wait_timeout_ms=10_000)  # patient under load
    try:
        async with connect(f"127.0.0.1:{server.port}", pki) as (tables, admin):
            floor = Floor(admin)
            await floor.create()
            reply = await tables.Lockout(lockout("t1", 1, [1, 2]))
        assert reply.meters[0].amount_cents == RESET_CENTS + 30
        copy = Redis.from_url(replica.url, decode_responses=True)
        meter = await copy.hget("jp:{lg:floor}:meter:cs-main", "value_microcents")
        await copy.aclose()
        assert meter == str((RESET_CENTS + 30) * 1_000_000)
    finally:
        await server.stop(grace_s=1)


async def test_a_write_not_confirmed_by_enough_replicas_is_unavailable_and_safe_to_retry(
    replicated: tuple[RedisServer, RedisServer], pki: TestPKI
) -> None:
    primary, _ = replicated
    setup = await start(primary.url, 1, pki, wait_timeout_ms=10_000)  # patient under load
    strict = await start(primary.url, 2, pki)  # only one replica exists
    try:
        async with connect(f"127.0.0.1:{setup.port}", pki) as (_, admin):
            await Floor(admin).create()
        async with connect(f"127.0.0.1:{strict.port}", pki) as (tables, _):
            with pytest.raises(aio.AioRpcError) as caught:
                await tables.Lockout(lockout("t1", 1, [1]))
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "confirmed by 1 of 2 replicas" in (caught.value.details() or "")
        async with connect(f"127.0.0.1:{setup.port}", pki) as (tables, admin):
            retry = await tables.Lockout(lockout("t1", 1, [1]))
            meter = await Floor(admin).meter()
        assert retry.meters[0].amount_cents == RESET_CENTS + 15
        assert meter.wagers_total == 1  # the retry was answered, not applied again
    finally:
        await strict.stop(grace_s=1)
        await setup.stop(grace_s=1)


async def test_start_warns_loudly_when_the_append_only_file_is_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, pki: TestPKI
) -> None:
    with RedisServer(tmp_path / "volatile", appendonly=False) as redis:
        server = await start(redis.url, 0, pki)
        await server.stop(grace_s=1)
    assert "REDIS APPEND-ONLY FILE IS OFF" in caplog.text
    assert server.metrics.aof_enabled._value.get() == 0


async def test_a_creation_applied_but_not_confirmed_keeps_its_claim(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, _ = replicated
    strict = RedisStore.from_url(primary.url, wait_replicas=2, wait_timeout_ms=100)
    relaxed = RedisStore.from_url(primary.url)
    try:
        await relaxed.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        meter = MeterConfig("cs-main", "floor", "caribbean-stud", RESET_CENTS, 150_000)
        with pytest.raises(NotConfirmed):
            await strict.catalog.create_meter(meter, actor="test")
        assert (await relaxed.catalog.get_meter("cs-main")).reset_cents == RESET_CENTS
        await relaxed.catalog.create_link_group(LinkGroupConfig("annex"), actor="test")
        with pytest.raises(AlreadyExists, match="meter cs-main exists in link group floor"):
            await relaxed.catalog.create_meter(
                MeterConfig("cs-main", "annex", "caribbean-stud", RESET_CENTS, 150_000),
                actor="test",
            )
    finally:
        await strict.close()
        await relaxed.close()


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
