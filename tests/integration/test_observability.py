"""Metrics endpoint, health, reflection, and the meter stream for displays."""

from __future__ import annotations

import asyncio
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import pytest
from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families
from redis.asyncio import Redis

from controller.runtime.server import ControllerServer
from controller.testing import RedisServer, TestPKI, free_port
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    AUDITOR,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Channels,
    Floor,
    controller_config,
    lockout,
    settle,
)


@pytest.fixture
def metrics_port() -> int | None:
    return free_port()


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def samples(text: str) -> dict[str, float]:
    """Every sample as 'name{label="value",...}' (labels sorted) -> value."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return found


async def test_metrics_show_meters_hits_and_status_codes(
    controller: ControllerServer, tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: STRAIGHT_FLUSH_HEARTS}))
    with pytest.raises(aio.AioRpcError):
        await tables.Lockout(lockout("t1", 2, [9]))
    await controller.check_state()  # what the refresh does every 2 s: counters from Redis
    text = await asyncio.to_thread(scrape, controller.metrics_port)
    found = samples(text)
    assert found['jackpot_meter_cents{meter="cs-main"}'] == RESET_CENTS
    assert found['jackpot_wagers_total{meter="cs-main"}'] == 2
    assert found['jackpot_handle_wagers_total{table="t1",wager="progressive"}'] == 2
    assert found['jackpot_handle_cents_total{table="t1",wager="progressive"}'] == 200
    assert found['jackpot_contributions_cents_total{meter="cs-main"}'] == 30
    assert found['jackpot_hits_total{line="royal_flush",meter="cs-main"}'] == 1
    assert found['jackpot_hits_total{line="straight_flush",meter="cs-main"}'] == 1
    assert found['jackpot_meter_awards_cents_total{meter="cs-main"}'] == 1_000_030
    # Fixed and percentage awards by the wager that won them, never an unlabelled meter.
    assert found['jackpot_awards_total{kind="percent_of_meter",wager="progressive"}'] == 2
    assert (
        found['jackpot_awards_cents_total{kind="percent_of_meter",wager="progressive"}']
        == 1_000_030
    )
    assert found['jackpot_awards_cents_total{kind="for_one",wager="progressive"}'] == 0
    assert not any('meter=""' in name for name in found)
    # Series known in advance exist at zero, so that increase() sees their first event.
    assert found['jackpot_voids_total{meter="cs-main"}'] == 0
    assert found['jackpot_awards_total{kind="for_one",wager="progressive"}'] == 0
    assert (
        found[
            'grpc_server_handled_total{grpc_code="Unavailable",grpc_method="Settle",'
            'grpc_service="jackpot.v1.TableService",grpc_type="unary"}'
        ]
        == 0
    )
    assert found["jackpot_redis_up"] == 1
    assert found["process_resident_memory_bytes"] > 0
    assert any(name.startswith("python_gc_") for name in found)
    assert found['jackpot_pending_jackpots{meter="cs-main"}'] == 2
    # Two jackpots wait: the oldest one's hit time (Redis's clock), in seconds.
    oldest = found['jackpot_oldest_pending_jackpot_timestamp_seconds{link_group="floor"}']
    assert abs(oldest - time.time()) < 600
    assert found['jackpot_meter_reset_cents{meter="cs-main"}'] == RESET_CENTS
    assert (
        found['jackpot_meter_info{game="caribbean-stud",link_group="floor",meter="cs-main"}'] == 1
    )
    assert found['jackpot_table_info{game="caribbean-stud",link_group="floor",table="t1"}'] == 1
    # The royal flush: 4 of the 2,598,960 five-card hands.
    royal = 'jackpot_line_probability{line="royal_flush",meter="cs-main",wager="progressive"}'
    assert found[royal] == 4 / 2_598_960
    assert found["jackpot_redis_aof_enabled"] == 1
    assert (
        found[
            'grpc_server_handled_total{grpc_code="InvalidArgument",grpc_method="Lockout",'
            'grpc_service="jackpot.v1.TableService",grpc_type="unary"}'
        ]
        == 1
    )
    buckets = [name for name in found if name.startswith("grpc_server_handling_seconds_bucket")]
    assert buckets and not any("table" in name for name in buckets)


async def test_replayed_requests_are_not_counted_twice(
    controller: ControllerServer, tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    for _ in range(3):
        await tables.Lockout(lockout("t1", 1, [1]))
    await controller.check_state()
    assert controller.metrics.counted.value("contributions_microcents", "cs-main") == 15_000_000
    found = samples(await asyncio.to_thread(scrape, controller.metrics_port))
    assert found['jackpot_replayed_requests_total{phase="lockout"}'] == 2


async def test_health_and_reflection(
    controller: ControllerServer, channel: aio.Channel, floor: Floor
) -> None:
    await controller.check_state()  # what the refresh loop does: Redis is installed now
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", "jackpot.v1.TableService", "jackpot.v1.AdminService"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = stub.ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
    )
    names = set()
    async for response in responses:
        names = {s.name for s in response.list_services_response.service}
    assert {"jackpot.v1.TableService", "jackpot.v1.AdminService", "grpc.health.v1.Health"} <= names


async def test_watch_meters_streams_a_snapshot_then_changes(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    stream = tables.WatchMeters(pb.WatchMetersRequest(table_id="t1", min_interval_ms=50))
    first = await asyncio.wait_for(stream.read(), timeout=5)
    assert isinstance(first, pb.MeterSnapshot)
    assert first.meters[0].amount_cents == RESET_CENTS
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    second = await asyncio.wait_for(stream.read(), timeout=5)
    assert isinstance(second, pb.MeterSnapshot)
    assert second.meters[0].amount_cents == RESET_CENTS + 30
    stream.cancel()


async def test_watch_meters_of_an_unknown_table(tables: pb_grpc.TableServiceAsyncStub) -> None:
    stream = tables.WatchMeters(pb.WatchMetersRequest(table_id="ghost"))
    with pytest.raises(aio.AioRpcError) as caught:
        await stream.read()
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_health_and_gauges_follow_redis_while_serving(tmp_path: Path, pki: TestPKI) -> None:
    """A Redis that stops answering turns the controller NOT_SERVING (gRPC health, /healthz,
    jackpot_redis_up 0) and SERVING again when it answers; a durability setting changed at
    runtime shows in the gauges the alerts read."""
    with RedisServer(tmp_path / "redis") as redis:
        config = controller_config(
            redis.url, pki, metrics_port=free_port(), refresh_interval_s=0.1, first_install=True
        )
        server = ControllerServer(config)
        await server.start()
        channels = Channels(f"127.0.0.1:{server.port}", pki)
        try:
            health = health_pb2_grpc.HealthStub(channels(*AUDITOR))
            admin = pb_grpc.AdminServiceStub(channels(*AUDITOR))

            async def until(check: Callable[[], Awaitable[bool]]) -> None:
                for _ in range(100):
                    if await check():
                        return
                    await asyncio.sleep(0.05)
                pytest.fail("the controller did not follow Redis")

            async def status() -> int:
                reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                return int(reply.status)

            SERVING, NOT_SERVING = (
                health_pb2.HealthCheckResponse.SERVING,
                health_pb2.HealthCheckResponse.NOT_SERVING,
            )
            assert await status() == SERVING
            client = Redis.from_url(redis.url)
            await client.config_set("appendonly", "no")
            await until(lambda: asyncio.sleep(0, server.metrics.aof_enabled._value.get() == 0))
            await client.config_set("appendonly", "yes")
            await client.aclose()
            redis.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
            try:
                await until(lambda: asyncio.sleep(0, server.metrics.redis_up._value.get() == 0))
                assert await status() == NOT_SERVING
                healthz = await asyncio.to_thread(_healthz, server.metrics_port)
                assert healthz == 503
                # Alive all the same: a Redis outage must not restart the controller.
                livez = await asyncio.to_thread(_healthz, server.metrics_port, "/livez")
                assert livez == 200
            finally:
                redis.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
            await until(lambda: asyncio.sleep(0, server.metrics.redis_up._value.get() == 1))
            assert await status() == SERVING
            assert await asyncio.to_thread(_healthz, server.metrics_port) == 200
            assert (await admin.ListMeters(pb.ListMetersRequest())) is not None
        finally:
            await channels.close()
            await server.stop(grace_s=1)


def _healthz(port: int, path: str = "/healthz") -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


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
