"""The store on a sentinel:// URL against real processes: a primary, a replica and three
Sentinels. Writes go to the primary the Sentinels name and wait for its replica; after
SENTINEL FAILOVER the store follows the new primary (also while the old one still answers as
a primary), a demoted primary's connections are dropped (READONLY, a refused WAIT) and the
retry goes to the new one; passwords of the servers and of the Sentinels."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from controller.domain.config import LinkGroupConfig, MeterConfig
from controller.store import keys
from controller.store.connection import PrimaryPool, follow_primary
from controller.store.redis_store import RedisStore
from controller.testing.sentinel import SentinelGroup
from jackpot.errors import StoreUnavailable
from tests.helpers import RESET_CENTS

pytestmark = pytest.mark.slow

METER = MeterConfig("cs-main", "floor", "caribbean-stud", RESET_CENTS, 150_000)


@pytest.fixture
def group(tmp_path: Path) -> Iterator[SentinelGroup]:
    with SentinelGroup(tmp_path / "ha") as started:
        yield started


async def served_by(client: Redis) -> int:
    """The port of the server that answers ``client``'s next call."""
    return int((await client.info("server"))["tcp_port"])


def connected_ports(store: RedisStore) -> set[int]:
    """The ports of the pool's idle connections that are open."""
    pool = store.client.connection_pool
    assert isinstance(pool, PrimaryPool)
    return {c.port for c in pool._available_connections if c.is_connected}  # type: ignore[attr-defined]


async def promote_the_replica(group: SentinelGroup) -> tuple[int, int]:
    """SENTINEL FAILOVER; returns (old primary's port, new primary's port)."""
    old = group.current_primary().port
    group.failover()
    new = await asyncio.to_thread(group.wait_for_new_primary, old)
    return old, new.port


async def entries(store: RedisStore) -> list[str]:
    return [entry.type async for entry in store.journal.entries("floor")]


async def test_writes_go_to_the_named_primary_and_wait_for_its_replica(
    group: SentinelGroup,
) -> None:
    store = RedisStore.from_url(group.url, wait_replicas=1, wait_timeout_ms=2000)
    try:
        persistence = await store.server.persistence()
        assert (persistence.role, persistence.connected_replicas) == ("master", 1)
        assert await served_by(store.client) == group.primary.port
        await store.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        await store.catalog.create_meter(METER, actor="test")
        with group.client(group.replica) as replica:  # acknowledged: on the replica already
            meter = replica.hget(keys.LinkGroupKeys("floor").meter("cs-main"), "value_microcents")
        assert meter == str(RESET_CENTS * 1_000_000)
    finally:
        await store.close()


async def test_the_store_leaves_a_replaced_primary_that_still_answers(
    group: SentinelGroup,
) -> None:
    store = RedisStore.from_url(group.url, wait_replicas=1, wait_timeout_ms=500)
    pool = store.client.connection_pool
    assert isinstance(pool, PrimaryPool)
    try:
        await store.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        await asyncio.gather(*(store.client.ping() for _ in range(2)))  # two open connections
        busy = await pool.get_connection()  # type: ignore[no-untyped-call]
        assert busy.port == group.primary.port  # in use by some call while the primary changes
        old, new = await promote_the_replica(group)
        # For about ten seconds the Sentinels leave the old primary a primary: it answers,
        # so nothing tells a connection to it that it is no longer the one.
        assert group.role(group.server_at(old))["role"] == "master"
        assert connected_ports(store) == {old}
        await follow_primary(store.client)  # what the controller does every refresh
        assert connected_ports(store) == set(), "idle connections to the old primary closed"
        await pool.release(busy)
        assert not busy.is_connected, "the busy one is closed when it comes back"
        assert await served_by(store.client) == new
        assert connected_ports(store) == {new}
    finally:
        await store.close()


async def test_a_demoted_primary_drops_its_connections_and_the_retry_reaches_the_new_one(
    group: SentinelGroup,
) -> None:
    store = RedisStore.from_url(group.url, wait_replicas=1, wait_timeout_ms=1000)
    try:
        await store.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        await asyncio.gather(*(store.client.ping() for _ in range(3)))  # three open connections
        assert connected_ports(store) == {group.primary.port}
        old, new = await promote_the_replica(group)
        with group.client(group.server_at(old)) as demoted:  # what Sentinel does, later
            demoted.replicaof("127.0.0.1", new)
        await asyncio.to_thread(group.wait_for_replicas, 1)
        outcomes = []
        for _ in range(6):  # bounded: one failure per connection to the old primary at most
            try:
                await store.catalog.create_meter(METER, actor="test")  # a write, then its replays
                outcomes.append("ok")
            except StoreUnavailable:  # READONLY, or the refused WAIT after a replay
                outcomes.append("unavailable")
        assert outcomes[-3:] == ["ok"] * 3, outcomes
        assert outcomes.count("unavailable") <= 3, outcomes
        assert connected_ports(store) == {new}
        assert await entries(store) == ["link_group_created", "meter_created"], "once"
    finally:
        await store.close()


async def test_passwords_of_the_servers_and_of_the_sentinels(tmp_path: Path) -> None:
    with SentinelGroup(
        tmp_path / "ha", password="redis-secret", sentinel_password="sentinel-secret"
    ) as group:
        right: dict[str, Any] = {"password": "redis-secret", "sentinel_password": "sentinel-secret"}
        store = RedisStore.from_url(group.url, **right)
        try:
            assert (await store.server.persistence()).role == "master"
        finally:
            await store.close()
        for wrong, message in (
            ({**right, "password": "nope"}, "Redis refused the password"),
            ({**right, "sentinel_password": "nope"}, "Redis is unreachable"),
            ({"password": "redis-secret"}, "Redis is unreachable"),  # Sentinels want theirs
        ):
            store = RedisStore.from_url(group.url, **wrong)
            try:
                with pytest.raises(StoreUnavailable, match=message) as refused:
                    await store.server.persistence()
            finally:
                await store.close()
            if "sentinel_password" not in wrong or wrong["sentinel_password"] == "nope":
                cause = str(refused.value.__cause__)  # what the controller's log shows
                assert cause.startswith("no Sentinel names a primary for 'jackpot' (127.0.0.1:")
                assert cause.count("AuthenticationError") == 3, cause
