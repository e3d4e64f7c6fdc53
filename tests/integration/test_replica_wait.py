"""Waiting for the replicas covers what it must.

A replay's wait covers the write it replays: an agent retries a write that was applied but
not confirmed; the retry may reach another controller, or another connection, which answers
from the stored result without writing anything. Redis's WAIT counts only what precedes the
waiting client's last command in the replication stream; since Redis 7.0 that is every
command, so the script of a replay (which writes nothing) still makes the WAIT after it cover
the original write. Shown with the replica stopped (SIGSTOP): the replay is not confirmed
until the replica has the write. The same holds for the journal position the state guard
remembers (:meth:`Epochs.durable_epoch`).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from controller.domain.config import LinkGroupConfig, MeterConfig
from controller.store.redis_store import RedisStore
from controller.testing import RedisServer
from jackpot.errors import NotConfirmed
from tests.helpers import RESET_CENTS


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[tuple[RedisServer, RedisServer]]:
    at_once = ("--repl-diskless-sync-delay", "0")
    with RedisServer(tmp_path / "primary", extra_args=at_once) as primary:
        replica_args = ("--replicaof", "127.0.0.1", str(primary.port))
        with RedisServer(tmp_path / "replica", extra_args=replica_args) as replica:
            yield primary, replica


async def test_a_replay_on_another_connection_waits_for_the_original_write(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    primary, replica = replicated
    client = Redis.from_url(primary.url)
    for _ in range(100):  # bounded: the replica's first sync
        if await client.wait(1, 100) == 1:
            break
    await client.aclose()
    first = RedisStore.from_url(primary.url, wait_replicas=1, wait_timeout_ms=200)
    second = RedisStore.from_url(primary.url, wait_replicas=1, wait_timeout_ms=200)
    patient = RedisStore.from_url(primary.url, wait_replicas=1, wait_timeout_ms=10_000)
    meter = MeterConfig("cs-main", "floor", "caribbean-stud", RESET_CENTS, 150_000)
    try:
        await patient.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(NotConfirmed, match="confirmed by 0 of 1 replicas"):
                await first.catalog.create_meter(meter, actor="test")  # applied, not confirmed
            with pytest.raises(NotConfirmed, match="confirmed by 0 of 1 replicas"):
                await second.catalog.create_meter(meter, actor="test")  # the replay: not yet either
        finally:
            replica.process.send_signal(signal.SIGCONT)
        # The replica has it now: confirmed (a patient wait: the replica resumes under load).
        await patient.catalog.create_meter(meter, actor="test")
        types = [entry.type async for entry in second.journal.entries("floor")]
        assert types == ["link_group_created", "meter_created"]
    finally:
        await first.close()
        await second.close()
        await patient.close()


async def test_a_journal_position_is_durable_once_the_replica_has_it(
    replicated: tuple[RedisServer, RedisServer],
) -> None:
    """What the state guard remembers of a link group (controller/store/state_guard.py): with
    --wait-replicas only positions a replica confirmed, so that a failover to that replica
    never looks like lost data."""
    primary, replica = replicated
    store = RedisStore.from_url(primary.url, wait_replicas=1, wait_timeout_ms=1000)
    relaxed = RedisStore.from_url(primary.url)
    try:
        await relaxed.catalog.create_link_group(LinkGroupConfig("floor"), actor="test")
        for _ in range(100):  # bounded: the replica's first sync
            epoch, seq, durable = await store.epochs.durable_epoch("floor")
            if durable:
                break
        assert epoch is not None and seq >= 1 and durable
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        try:
            meter = MeterConfig("cs-main", "floor", "caribbean-stud", RESET_CENTS, 150_000)
            await relaxed.catalog.create_meter(meter, actor="test")  # applied, the replica stopped
            _, later, durable = await store.epochs.durable_epoch("floor")
            assert later > seq and not durable
            assert (await relaxed.epochs.durable_epoch("floor"))[2], "no --wait-replicas: the AOF"
        finally:
            replica.process.send_signal(signal.SIGCONT)
        for _ in range(100):
            if (await store.epochs.durable_epoch("floor"))[2]:
                break
        assert (await store.epochs.durable_epoch("floor"))[1:] == (later, True)
    finally:
        await store.close()
        await relaxed.close()
