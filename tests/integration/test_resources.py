"""What one caller can take is bounded, and the real tables keep being served: thousands of
meter streams, a burst of calls from one table, more concurrent calls than Redis connections,
a Redis that is gone."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import RedisServer, TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import RESET_CENTS, Channels, Floor, connect, controller_config, lockout

STREAMS = 5000
DISPLAYS = 10


@pytest.fixture
def server_config(server_config: ServerConfig) -> ServerConfig:
    """Small bounds so that each is reached quickly."""
    return dataclasses.replace(
        server_config,
        max_streams=60,
        max_streams_per_caller=8,
        redis_max_connections=3,
        table_calls_per_s=20,
        table_call_burst=20,
        client_calls_per_s=20,
        client_call_burst=40,
    )


async def _hold_stream(stub: pb_grpc.TableServiceAsyncStub, ready: list[int]) -> grpc.StatusCode:
    """Open one meter stream; keep it open (until cancelled) once its first snapshot came."""
    call = stub.WatchMeters(pb.WatchMetersRequest(table_id="t1"), timeout=120)
    try:
        async for snapshot in call:
            assert snapshot.meters[0].meter_id == "cs-main"
            ready.append(1)
            await asyncio.sleep(3600)
    except aio.AioRpcError as error:
        if error.code() is grpc.StatusCode.UNAVAILABLE:
            # HTTP/2 REFUSED_STREAM: more than 100 calls at once on one connection before
            # the client learnt the limit (MAX_STREAMS_PER_CONNECTION).
            assert "RST_STREAM" in (error.details() or ""), error.details()
        return error.code()
    finally:
        call.cancel()  # the display goes away: the controller must free its stream
    return grpc.StatusCode.OK


async def test_five_thousand_meter_streams_are_bounded_and_tables_keep_playing(
    channels: Channels,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    displays = [pb_grpc.TableServiceStub(channels("display", f"sign-{n}")) for n in range(DISPLAYS)]
    ready: list[int] = []
    streams = [
        asyncio.create_task(_hold_stream(displays[n % DISPLAYS], ready)) for n in range(STREAMS)
    ]
    served = 0
    # Real tables play while the flood arrives: their calls are answered, none refused.
    for round_id in range(1, 6):
        reply = await tables.Lockout(lockout("t1", round_id, [1, 2]), timeout=10)
        assert reply.meters[0].amount_cents == RESET_CENTS + 30 * round_id
    refused = []
    for _ in range(1200):  # until each is served or refused (at most a minute)
        await asyncio.sleep(0.05)
        refused = [s for s in streams if s.done()]
        served = len(ready)
        if served + len(refused) == STREAMS:
            break
    # At most the total bound is open (8 per display would allow 80); which of the flood's
    # calls won a slot is a race, so the exact total is checked below, one call at a time.
    assert 0 < served <= 60
    assert len(refused) == STREAMS - served
    codes = [s.result() for s in refused]
    assert set(codes) <= {grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE}
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) > STREAMS // 2
    # One shared poller serves every stream of the link group; no connection each.
    assert controller.watcher.pollers == 1
    assert controller.metrics.registry.get_sample_value("jackpot_meter_streams") == served
    await _close(streams)
    assert controller.watcher.pollers == 0 and controller.interceptor.streams.open == 0

    # Opened one at a time, the displays get exactly the total: 60 streams.
    ready.clear()
    streams = []
    for n in range(DISPLAYS * 8):
        streams.append(asyncio.create_task(_hold_stream(displays[n % DISPLAYS], ready)))
        for _ in range(500):  # until this stream is served or refused (at most 5 s)
            await asyncio.sleep(0.01)
            if len(ready) + sum(s.done() for s in streams) == len(streams):
                break
    assert len(ready) == 60
    assert {s.result() for s in streams if s.done()} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    await _close(streams)
    assert controller.interceptor.streams.open == 0


async def _close(streams: list[asyncio.Task[grpc.StatusCode]]) -> None:
    """Cancel the streams; wait until the controller let go of them (bounded)."""
    for task in streams:
        task.cancel()
    await asyncio.gather(*streams, return_exceptions=True)
    await asyncio.sleep(0.2)


async def test_one_display_holds_at_most_its_share_of_streams(
    channels: Channels, floor: Floor
) -> None:
    display = pb_grpc.TableServiceStub(channels("display", "lobby"))
    ready: list[int] = []
    streams = [asyncio.create_task(_hold_stream(display, ready)) for _ in range(12)]
    for _ in range(100):
        await asyncio.sleep(0.05)
        if len(ready) + sum(s.done() for s in streams) == len(streams):
            break
    assert len(ready) == 8
    refusals = [s.result() for s in streams if s.done()]
    assert refusals == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 4
    for task in streams:
        task.cancel()
    await asyncio.gather(*streams, return_exceptions=True)


async def test_a_table_that_calls_too_fast_is_slowed_down_alone(
    channels: Channels, floor: Floor
) -> None:
    await floor.register("t2")
    noisy = pb_grpc.TableServiceStub(channels("table", "t1"))
    calm = pb_grpc.TableServiceStub(channels("table", "t2"))
    codes = []
    for _ in range(40):
        try:
            await noisy.GetTable(pb.GetTableRequest(table_id="t1"))
            codes.append(grpc.StatusCode.OK)
        except aio.AioRpcError as error:
            codes.append(error.code())
            assert "made more than 20 calls a second" in (error.details() or "")
    assert grpc.StatusCode.RESOURCE_EXHAUSTED in codes
    assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
    assert (await calm.GetTable(pb.GetTableRequest(table_id="t2"))).table.table_id == "t2"


async def test_more_concurrent_calls_than_redis_connections_wait_for_one(
    channels: Channels, admin: pb_grpc.AdminServiceAsyncStub, pki: TestPKI
) -> None:
    table_ids = [f"t{n}" for n in range(1, 31)]
    await Floor(admin).create(tables=table_ids)
    stubs = [pb_grpc.TableServiceStub(channels("table", t)) for t in table_ids]
    replies = await asyncio.gather(
        *(
            stub.Lockout(lockout(t, 1, [1]), timeout=20)
            for stub, t in zip(stubs, table_ids, strict=True)
        )
    )
    assert all(reply.accepted for reply in replies)  # 30 at once over 3 connections


async def test_a_lost_redis_is_unavailable_without_revealing_where_it_is(
    tmp_path: Path, pki: TestPKI
) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        server = ControllerServer(controller_config(redis.url, pki))
        await server.start()
        async with connect(f"127.0.0.1:{server.port}", pki) as (tables, admin):
            await Floor(admin).create()
            redis.stop()
            for call in (
                tables.Lockout(lockout("t1", 1, [1])),
                admin.ListMeters(pb.ListMetersRequest()),
            ):
                with pytest.raises(aio.AioRpcError) as caught:
                    await call
                details = caught.value.details() or ""
                assert caught.value.code() is grpc.StatusCode.UNAVAILABLE, details
                assert "Redis is unreachable; retry" in details
                assert "127.0.0.1" not in details and str(redis.port) not in details
        await server.stop(grace_s=1)


async def test_every_kind_of_stream_takes_a_slot_of_its_caller(
    channels: Channels, tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    """Health Watch and reflection are streams too: one identity cannot hold them all open
    and starve the tables (and a display may not open them at all)."""
    display = health_pb2_grpc.HealthStub(channels("display", "sign"))
    with pytest.raises(aio.AioRpcError) as caught:
        async for _ in display.Watch(health_pb2.HealthCheckRequest(), timeout=5):
            break
    assert caught.value.code() is grpc.StatusCode.PERMISSION_DENIED
    auditor = health_pb2_grpc.HealthStub(channels("auditor", "lab"))
    calls = [auditor.Watch(health_pb2.HealthCheckRequest(), timeout=30) for _ in range(12)]

    async def first(call: Any) -> grpc.StatusCode:
        try:
            async for _ in call:
                return grpc.StatusCode.OK
        except aio.AioRpcError as error:
            return error.code()
        return grpc.StatusCode.OK

    codes = await asyncio.gather(*(first(call) for call in calls))
    assert codes.count(grpc.StatusCode.OK) == 8
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 4
    assert (await tables.Lockout(lockout("t1", 1, [1]), timeout=10)).accepted
    for call in calls:
        call.cancel()


async def test_people_and_tools_have_a_call_rate_too(
    channels: Channels, floor: Floor, server_config: ServerConfig
) -> None:
    auditor = pb_grpc.AdminServiceStub(channels("auditor", "lab"))
    codes = []
    for _ in range(60):
        try:
            await auditor.ListMeters(pb.ListMetersRequest())
            codes.append(grpc.StatusCode.OK)
        except aio.AioRpcError as error:
            codes.append(error.code())
    assert set(codes) == {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}


async def test_a_busy_redis_is_unavailable_for_reads_and_writes(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A long script elsewhere makes Redis answer BUSY: every call is UNAVAILABLE (the agents
    retry), never INTERNAL, and the controller logs no traceback."""
    blocker, other = Redis.from_url(redis_url), Redis.from_url(redis_url)
    await blocker.config_set("busy-reply-threshold", 50)
    spin: asyncio.Future[Any] = asyncio.ensure_future(blocker.eval("while true do end", 0))
    try:
        for _ in range(200):  # until Redis answers BUSY (bounded)
            try:
                await other.ping()
            except ResponseError as error:
                assert str(error).startswith("BUSY"), error
                break
            await asyncio.sleep(0.05)
        for call in (
            admin.ListMeters(pb.ListMetersRequest()),
            tables.Lockout(lockout("t1", 1, [1])),
        ):
            with pytest.raises(aio.AioRpcError) as caught:
                await call
            assert caught.value.code() is grpc.StatusCode.UNAVAILABLE, caught.value.details()
            assert "(BUSY); retry" in (caught.value.details() or "")
    finally:
        for _ in range(200):  # bounded: kill the script once it runs
            with contextlib.suppress(ResponseError):
                await other.script_kill()
            if spin.done():
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(Exception):
            await spin
        await other.config_set("busy-reply-threshold", 5000)
        await other.aclose()
        await blocker.aclose()
    assert "Traceback" not in caplog.text
    assert (await tables.Lockout(lockout("t1", 1, [1]))).accepted
