"""Shared fixtures: a real redis-server, an in-process controller on loopback, clients.

Integration and system tests use real components only: Debian's ``redis-server`` started on a
free loopback port for the session (flushed before each test), and the controller's real
grpc.aio server on a free port, reached over a real channel.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.server import ControllerServer, ServerConfig
from controller.testing import RedisServer
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import Floor


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
async def redis_url(redis_server: RedisServer) -> AsyncIterator[str]:
    client = Redis.from_url(redis_server.url)
    await client.flushall()
    await client.aclose()
    yield redis_server.url


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
def metrics_port() -> int | None:
    """The controller's metrics port: none, unless a test overrides this fixture."""
    return None


@pytest.fixture
async def controller(redis_url: str, metrics_port: int | None) -> AsyncIterator[ControllerServer]:
    server = ControllerServer(
        ServerConfig(
            listen="127.0.0.1:0",
            redis_url=redis_url,
            metrics_port=metrics_port,
            refresh_interval_s=0.2,
        )
    )
    await server.start()
    yield server
    await server.stop(grace_s=1)


@pytest.fixture
async def channel(controller: ControllerServer) -> AsyncIterator[aio.Channel]:
    async with aio.insecure_channel(f"127.0.0.1:{controller.port}") as channel:
        yield channel


@pytest.fixture
def tables(channel: aio.Channel) -> pb_grpc.TableServiceAsyncStub:
    return pb_grpc.TableServiceStub(channel)


@pytest.fixture
def admin(channel: aio.Channel) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channel)


@pytest.fixture
async def floor(admin: pb_grpc.AdminServiceAsyncStub) -> Floor:
    """One link group 'floor' with meter 'cs-main' ($10,000 reset, 15% rate, no reserve) and
    table 't1' (Caribbean Stud, paytable B, 7 seats, $1 wager)."""
    floor = Floor(admin)
    await floor.create()
    return floor
