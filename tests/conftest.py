"""Shared fixtures: a real redis-server, an in-process controller on loopback, clients.

Integration and system tests use real components only: Debian's ``redis-server`` started on a
free loopback port for the session (flushed before each test), and the controller's real
grpc.aio server on a free port with mutual TLS, reached over real channels, each with the
certificate of the identity that makes the call (:class:`tests.helpers.Channels`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

# Imported here, at collection, rather than lazily by its pytest plugin at the end of a run:
# CPython 3.11.7's ast.parse can then fail with "AST constructor recursion depth mismatch"
# after many gRPC calls (a CPython bug, fixed in later releases), turning a green run red.
import hypothesis  # noqa: F401
import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.domain.payout_compliance import NONE, PRESETS
from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import RedisServer, TestPKI
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import AUDITOR, Channels, Floor, admin_stubs, table_stubs


@pytest.fixture(autouse=True)
def _no_leaked_log_handlers() -> Iterator[None]:
    """A CLI run in-process (``logs.configure``, ``logging.basicConfig``) leaves a handler on the
    root logger bound to this test's captured stderr; the next test's log lines would then hit a
    closed file ("--- Logging error ---"). Remove such handlers and restore the root level."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers and type(handler) in (
            logging.StreamHandler,
            logging.FileHandler,
        ):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPKI:
    """The casino's CA for the session: the controller's certificate and clients' on demand."""
    return TestPKI(tmp_path_factory.mktemp("pki"))


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
def server_config(redis_url: str, metrics_port: int | None, pki: TestPKI) -> ServerConfig:
    """The in-process controller's configuration; a test may override this fixture."""
    return ServerConfig(
        listen="127.0.0.1:0",
        redis_url=redis_url,
        tls=pki.server(),
        position_key=pki.position_key(),
        metrics_port=metrics_port,
        refresh_interval_s=0.2,
        # Simulated tables play far faster than real ones: no call rate limit here (the
        # limiter has tests of its own, tests/integration/test_resources.py).
        table_calls_per_s=0,
        client_calls_per_s=0,
        # A hand-pay needs nothing here: the tests of the compliance flow (the controller's
        # default, us-default) ask for it (tests/integration/test_payout_compliance.py).
        payout_compliance=PRESETS[NONE],
    )


@pytest.fixture
async def controller(server_config: ServerConfig) -> AsyncIterator[ControllerServer]:
    server = ControllerServer(server_config)
    await server.start()
    yield server
    await server.stop(grace_s=1)


@pytest.fixture
async def channels(controller: ControllerServer, pki: TestPKI) -> AsyncIterator[Channels]:
    """Channels to the controller as any identity: ``channels("table", "t1")``."""
    opened = Channels(f"127.0.0.1:{controller.port}", pki)
    yield opened
    await opened.close()


@pytest.fixture
def channel(channels: Channels) -> aio.Channel:
    """A channel as an auditor (health, reflection, reading)."""
    return channels(*AUDITOR)


@pytest.fixture
def tables(channels: Channels) -> pb_grpc.TableServiceAsyncStub:
    """TableService, each call made with the certificate of the table it names."""
    return table_stubs(channels)


@pytest.fixture
def admin(channels: Channels) -> pb_grpc.AdminServiceAsyncStub:
    """AdminService as an operator (a supervisor for jackpot reviews)."""
    return admin_stubs(channels)


@pytest.fixture
async def floor(admin: pb_grpc.AdminServiceAsyncStub) -> Floor:
    """One link group 'floor' with meter 'cs-main' ($10,000 reset, 15% rate, no reserve) and
    table 't1' (Caribbean Stud, paytable B, 7 seats, $1 wager)."""
    floor = Floor(admin)
    await floor.create()
    return floor
