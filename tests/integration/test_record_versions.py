"""Every stored record carries its schema version: the current one round-trips, and one
without a version, or of a later version, is refused by name and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from redis.asyncio import Redis

from controller.runtime.server import ControllerServer
from controller.store import codec, keys
from controller.store.redis_store import RedisStore
from jackpot.errors import StoreUnavailable
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import ROYAL_SPADES, Floor, expect_refusal, lockout, settle, snapshot

GROUP = keys.LinkGroupKeys("floor")
UNAVAILABLE = grpc.StatusCode.UNAVAILABLE
VERSION = str(codec.SCHEMA_VERSION)
LATER = str(codec.SCHEMA_VERSION + 1)


async def _stored_json(redis: Redis, key: str, field: str) -> dict[str, Any]:
    raw = await redis.hget(key, field)
    assert raw is not None
    record: dict[str, Any] = json.loads(raw)
    return record


async def _jackpot_id(redis: Redis) -> str:
    (jackpot_id,) = await redis.smembers(GROUP.pending)
    return str(jackpot_id)


async def _set_jackpot_version(redis: Redis, jackpot_id: str, version: str | None) -> None:
    record = await _stored_json(redis, GROUP.jackpots, jackpot_id)
    if version is None:
        del record["v"]
    else:
        record["v"] = int(version)
    await redis.hset(GROUP.jackpots, jackpot_id, json.dumps(record))


async def test_every_record_is_written_in_the_current_version_and_read_back(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await floor.create()
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    await tables.Lockout(lockout("t1", 2, [3]))
    assert await redis_client.hget(GROUP.info, "v") == VERSION
    assert await redis_client.hget(GROUP.meter("cs-main"), "v") == VERSION
    assert await redis_client.hget(GROUP.round("t1", 2), "v") == VERSION
    config = await _stored_json(redis_client, GROUP.table("t1"), "config")
    assert config["v"] == codec.SCHEMA_VERSION
    jackpot_id = await _jackpot_id(redis_client)
    stored = await _stored_json(redis_client, GROUP.jackpots, jackpot_id)
    assert stored["v"] == codec.SCHEMA_VERSION

    store = RedisStore(redis_client)  # no cached registrations: everything read from Redis
    table = await store.tables.get_table("t1")
    assert codec.table_json(table) == json.dumps(config, sort_keys=True, separators=(",", ":"))
    assert (await store.catalog.get_link_group("floor")).description == "test floor"
    assert (await store.catalog.get_meter("cs-main")).meter_id == "cs-main"
    assert [value.meter_id for value in await store.catalog.meter_values("floor")] == ["cs-main"]
    locked = await store.rounds.locked_round(table, 2)
    assert locked is not None and [w.seat for w in locked.wagers] == [3]
    assert [j.jackpot_id for j in await store.jackpots.list_pending_jackpots()] == [jackpot_id]
    await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=2, reason="misdeal"))


@pytest.mark.parametrize(
    ("version", "text"),
    [(LATER, f"has schema version {LATER}"), (None, "has no schema version")],
)
async def test_a_record_of_another_version_is_refused_by_name_and_nothing_changes(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    version: str | None,
    text: str,
) -> None:
    await floor.create()
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    await tables.Lockout(lockout("t1", 2, [2]))
    jackpot_id = await _jackpot_id(redis_client)
    store = RedisStore(redis_client)
    table = await store.tables.get_table("t1")

    async def stored_as(key: str, field: str = "v") -> None:
        if version is None:
            await redis_client.hdel(key, field)
        else:
            await redis_client.hset(key, field, version)

    # A round: the settlement and the void refuse it (UNAVAILABLE: the table keeps its report).
    await stored_as(GROUP.round("t1", 2))
    before = await snapshot(redis_client)
    round_text = f"the stored record of round 2 of table t1 {text}"
    with pytest.raises(StoreUnavailable, match=round_text):
        await store.rounds.locked_round(table, 2)
    await expect_refusal(tables.Settle(settle("t1", 2, {2: ROYAL_SPADES})), UNAVAILABLE, text)
    await expect_refusal(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=2, reason="misdeal")),
        UNAVAILABLE,
        round_text,
    )
    assert await snapshot(redis_client) == before

    # A jackpot: neither listed nor reviewed.
    await _set_jackpot_version(redis_client, jackpot_id, version)
    before = await snapshot(redis_client)
    with pytest.raises(StoreUnavailable, match=f"the stored record of jackpot {jackpot_id} {text}"):
        await store.jackpots.list_pending_jackpots()
    with pytest.raises(StoreUnavailable, match=text):
        await store.jackpots.review_jackpot(
            jackpot_id, approve=True, reviewer="s", reviewer_cert="c", note=""
        )
    assert await snapshot(redis_client) == before

    # A meter: no lockout feeds it, and it is not shown.
    await stored_as(GROUP.meter("cs-main"))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Lockout(lockout("t1", 3, [1])),
        UNAVAILABLE,
        f"the stored record of meter cs-main {text}",
    )
    await expect_refusal(admin.GetMeter(pb.GetMeterRequest(meter_id="cs-main")), UNAVAILABLE, text)
    with pytest.raises(StoreUnavailable, match=text):
        await store.catalog.meter_values("floor")
    assert await snapshot(redis_client) == before

    # A link group and a table registration.
    await stored_as(GROUP.info)
    with pytest.raises(StoreUnavailable, match=f"the stored record of link group floor {text}"):
        await store.catalog.get_link_group("floor")
    config = await _stored_json(redis_client, GROUP.table("t1"), "config")
    config.pop("v")
    if version is not None:
        config["v"] = int(version)
    await redis_client.hset(GROUP.table("t1"), "config", json.dumps(config))
    with pytest.raises(StoreUnavailable, match=f"the stored record of table t1 {text}"):
        await RedisStore(redis_client).tables.get_table("t1")


@pytest.mark.parametrize("version", [1, "1"])
def test_the_current_version_reads_as_it_is(version: object) -> None:
    record = {"v": version, "description": "floor"}
    assert codec.upgraded("link group", "floor", record) == record


@pytest.mark.parametrize("version", [0, "0", "2", 2, "x", "", "-1", "1.0"])
def test_an_unknown_version_is_never_guessed(version: object) -> None:
    with pytest.raises(StoreUnavailable, match=f"has schema version {version}; this controller"):
        codec.upgraded("meter", "cs-main", {"v": version})


def test_every_record_kind_has_its_migration() -> None:
    assert set(codec.MIGRATIONS) == {
        "link group",
        "meter",
        "table",
        "round",
        "jackpot",
        "irregularity",
        "adjustment",
    }
