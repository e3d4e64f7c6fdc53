"""Settle plans against the lockout this process remembers, and reads Redis otherwise.

The read of the locked round leaves the hot path (issue 9): a Settle answered by the process
that answered its Lockout sends no HMGET of its own. A round this process does not remember
(another replica locked it out, a restart) is read from Redis; a stale memory is refused by
the settle script (the lockout fingerprint) and the round is read and planned again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from controller.domain.rounds import Wager
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer, ServerConfig
from controller.store import keys
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import FLUSH_CLUBS, PAIR, ROYAL_SPADES, Channels, Floor, lockout, settle
from tests.helpers import table_stubs as make_table_stubs

HANDS = {2: ROYAL_SPADES, 6: FLUSH_CLUBS}


async def _hmgets(redis: Redis) -> int:
    """HMGET calls Redis has served so far (its scripts' included)."""
    stats = await redis.info("commandstats")
    return int(stats.get("cmdstat_hmget", {}).get("calls", 0))


async def test_a_settle_after_this_process_locked_out_reads_nothing_more(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    before = await _hmgets(redis_client)
    remembered = await tables.Settle(settle("t1", 1, HANDS))
    remembered_reads = await _hmgets(redis_client) - before

    await tables.Lockout(lockout("t1", 2, [2, 6]))
    controller.store.rounds._locked.forget("t1", 2)  # as after a restart
    before = await _hmgets(redis_client)
    read = await tables.Settle(settle("t1", 2, HANDS))
    assert await _hmgets(redis_client) - before == remembered_reads + 1
    assert [r.amount_cents for r in read.results][1:] == [
        r.amount_cents for r in remembered.results
    ][1:]  # the same fixed award (the royal's share of the meter differs)
    assert len(controller.store.rounds._locked) == 0  # settled rounds are forgotten
    assert (await verify(controller.store)).ok


@pytest.fixture
async def other_replica(server_config: ServerConfig, pki: TestPKI) -> AsyncIterator[Channels]:
    """A second controller on the same Redis (its own memory), as a table's channels."""
    replica = ControllerServer(server_config)
    await replica.start()
    channels = Channels(f"127.0.0.1:{replica.port}", pki)
    yield channels
    await channels.close()
    await replica.stop(grace_s=1)


async def test_a_round_locked_out_by_another_replica_is_read_and_settled(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    other_replica: Channels,
    controller: ControllerServer,
) -> None:
    other = make_table_stubs(other_replica)
    locked = await other.Lockout(lockout("t1", 1, [2, 6]))
    settled = await tables.Settle(settle("t1", 1, {2: PAIR, 6: FLUSH_CLUBS}))
    assert [r.seat for r in settled.results] == [6, 2]
    assert len(locked.accepted) == 2
    assert await other.Settle(settle("t1", 1, {2: PAIR, 6: FLUSH_CLUBS})) == settled  # replay
    assert (await verify(controller.store)).ok


async def test_a_stale_memory_is_refused_by_redis_then_the_round_is_read_again(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    # What this process remembers is not what Redis holds (a round locked out again after
    # a rebase or a restore): other wagers, another fingerprint.
    controller.store.rounds._locked.remember(
        "t1", 1, (Wager(2, "progressive", 100), Wager(3, "progressive", 100)), "stale-fp"
    )
    settled = await tables.Settle(settle("t1", 1, HANDS))
    assert sorted(r.seat for r in settled.results) == [2, 6]  # Redis's wagers were paid
    assert (await verify(controller.store)).ok
    journal = await redis_client.xlen(keys.LinkGroupKeys("floor").journal)
    assert await tables.Settle(settle("t1", 1, HANDS)) == settled  # a replay, nothing more
    assert await redis_client.xlen(keys.LinkGroupKeys("floor").journal) == journal
