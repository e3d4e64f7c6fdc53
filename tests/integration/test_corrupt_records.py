"""A bad record harms only itself (issue 19, item 4), against a real Redis.

One corrupted record - a meter's amount that is not a number, a jackpot whose JSON does not
parse, a table's definition, a must-hit-by hit point - is refused for its own object only,
with DATA_LOSS naming its Redis key and what to do; every other table, meter, jackpot and page
keeps working (listings leave the bad one out, the floor view marks it); the metric counts
it; the audit names every bad record and goes on; and nothing is rewritten.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest
from redis.asyncio import Redis

from controller.api.meter_watch import MeterWatcher
from controller.api.peers import Authenticator
from controller.domain.config import TableConfig
from controller.domain.rounds import Wager
from controller.journal import audit
from controller.observability.metrics import Metrics
from controller.runtime.server import ControllerServer
from controller.store import codec, keys
from controller.store.redis_store import RedisStore
from controller.testing import TestPKI
from controller.web.app import WebApp
from jackpot.errors import CorruptRecord
from jackpot.kinds import WagerKind
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.web.server import Request, Response
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    RATE_PERCENT,
    RESET_CENTS,
    ROYAL_SPADES,
    Floor,
    expect_refusal,
    lockout,
    progressive_table,
    settle,
    snapshot,
    table_client,
)
from tests.integration.test_mystery import _mystery_floor

GROUP = keys.LinkGroupKeys("floor")
DATA_LOSS = grpc.StatusCode.DATA_LOSS
ADVICE = "restores it from the last export"


async def _two_meters(admin: pb_grpc.AdminServiceAsyncStub, floor: Floor) -> None:
    """The floor's t1 on meter cs-main, and t2 on cs-other of the same link group."""
    await floor.create()
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-other",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent=RATE_PERCENT,
        )
    )
    await admin.RegisterTable(
        pb.RegisterTableRequest(table=progressive_table("t2", "floor", "cs-other"))
    )


def _counted(controller: ControllerServer, kind: str) -> float:
    value = controller.metrics.registry.get_sample_value(
        "jackpot_corrupt_records_total", {"kind": kind}
    )
    assert value is not None
    return value


async def _floor_state(store: RedisStore) -> tuple[int, dict[str, Any]]:
    """The floor view's /floor/state as an insecure development controller answers it."""
    app = WebApp(
        store,
        Metrics(),
        MeterWatcher(store.catalog.meter_values),
        Authenticator(insecure=True),
        host="127.0.0.1",
        port=0,
        tls=None,
    )
    answer = await app.handle(Request("GET", "/floor/state", "", {}))
    assert isinstance(answer, Response)
    if answer.status != 200:
        return answer.status, {"text": answer.body.decode()}
    state: dict[str, Any] = json.loads(answer.body)
    return answer.status, state


async def _the_other_table_plays(tables: pb_grpc.TableServiceAsyncStub, round_id: int) -> None:
    """t2 (meter cs-other, same link group) locks out and settles a royal flush (a pending
    jackpot of cs-other)."""
    locked = await tables.Lockout(lockout("t2", round_id, [1]))
    assert [m.meter_id for m in locked.meters] == ["cs-other"]
    settled = await tables.Settle(settle("t2", round_id, {1: ROYAL_SPADES}))
    assert settled.results[0].pending_validation


async def test_a_corrupt_meter_amount_refuses_its_meter_only_and_is_never_rewritten(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await _two_meters(admin, floor)
    await tables.Lockout(lockout("t1", 1, [1]))
    await redis_client.hset(GROUP.meter("cs-main"), "value_microcents", "10000oops")
    before = await snapshot(redis_client)
    counted = _counted(controller, "meter")
    named = f"meter cs-main (Redis key {GROUP.meter('cs-main')}) is corrupt: value_microcents"

    # Its own table is refused by name (the script never reads it as 0 and writes that back).
    await expect_refusal(tables.Lockout(lockout("t1", 2, [1])), DATA_LOSS, named)
    await expect_refusal(tables.Settle(settle("t1", 1, {1: ROYAL_SPADES})), DATA_LOSS, named)
    await expect_refusal(admin.GetMeter(pb.GetMeterRequest(meter_id="cs-main")), DATA_LOSS, ADVICE)
    assert await snapshot(redis_client) == before
    assert await redis_client.hget(GROUP.meter("cs-main"), "value_microcents") == "10000oops"

    # Everything else works: the listing leaves it out, the other table plays.
    listed = await admin.ListMeters(pb.ListMetersRequest(link_group_id="floor"))
    assert [m.meter_id for m in listed.meters] == ["cs-other"]
    await _the_other_table_plays(tables, 1)
    assert _counted(controller, "meter") >= counted + 4

    status, state = await _floor_state(RedisStore(redis_client))
    assert status == 200
    assert {m["meter_id"]: m["cents"] for m in state["meters"]}["cs-main"] is None
    assert [(c["kind"], c["name"], c["key"]) for c in state["corrupt"]] == [
        ("meter", "cs-main", GROUP.meter("cs-main"))
    ]
    assert len(state["pending"]) == 1  # t2's royal flush

    report = await audit.verify(RedisStore(redis_client))
    assert [d for d in report.differences if "corrupt" in d] == [
        f"floor: the stored record of {named} is '10000oops', not an integer; it is not used "
        "until an engineer restores it from the last export (jackpotctl restore) - call the "
        "engineer on duty"
    ]
    assert report.meters == 1 and report.entries > 0  # cs-other was checked


async def test_a_corrupt_jackpot_refuses_itself_only(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await _two_meters(admin, floor)
    await tables.Lockout(lockout("t1", 1, [1]))
    hit = (await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))).results[0]
    await _the_other_table_plays(tables, 1)
    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    other = next(j.jackpot_id for j in pending.jackpots if j.jackpot_id != hit.jackpot_id)
    await redis_client.hset(GROUP.jackpots, hit.jackpot_id, '{"v": 1, "jackpot_id": ')
    before = await snapshot(redis_client)
    named = f"jackpot {hit.jackpot_id} (Redis key {GROUP.jackpots}) is corrupt: its JSON"

    get = pb.GetJackpotRequest(jackpot_id=hit.jackpot_id)
    await expect_refusal(admin.GetJackpot(get), DATA_LOSS, named)
    review = pb.ReviewJackpotRequest(jackpot_id=hit.jackpot_id, note="verified")
    await expect_refusal(admin.ApproveJackpot(review), DATA_LOSS, named)
    assert await snapshot(redis_client) == before

    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    assert [j.jackpot_id for j in pending.jackpots] == [other]
    listed = await admin.ListJackpots(pb.ListJackpotsRequest(link_group_id="floor"))
    assert [j.jackpot_id for j in listed.jackpots] == [other]
    approved = await admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=other, note="ok"))
    assert approved.status == "approved"
    await tables.Lockout(lockout("t1", 2, [1]))  # its table and meter play on
    assert _counted(controller, "jackpot") >= 4

    status, state = await _floor_state(RedisStore(redis_client))
    assert status == 200
    assert [h["jackpot_id"] for h in state["hits"]] == [other]
    assert [(c["kind"], c["name"]) for c in state["corrupt"]] == [("jackpot", hit.jackpot_id)]

    report = await audit.verify(RedisStore(redis_client))
    corrupt = [d for d in report.differences if "is corrupt" in d]
    assert corrupt and all(hit.jackpot_id in d for d in corrupt), report.differences
    assert report.meters == 2


async def test_a_corrupt_table_refuses_that_table_only(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await _two_meters(admin, floor)
    await floor.register("t3")  # also on cs-main
    await tables.Lockout(lockout("t1", 1, [1]))
    config = await redis_client.hget(GROUP.table("t1"), "config")
    assert config is not None
    broken = str(config).replace('"seats":7', '"seats":"x"')
    await redis_client.hset(GROUP.table("t1"), "config", broken)
    await redis_client.hset(GROUP.table("t3"), "last_round", "12z")
    controller.store.tables.forget_table("t1")  # as a controller that starts now reads it
    before = await snapshot(redis_client)

    await expect_refusal(
        tables.Lockout(lockout("t1", 2, [1])),
        DATA_LOSS,
        f"table t1 (Redis key {GROUP.table('t1')}) is corrupt",
    )
    # A table's last round that is not a number is refused, not read as 0 and overwritten.
    await expect_refusal(
        tables.Lockout(lockout("t3", 13, [1])),
        DATA_LOSS,
        f"table t3 (Redis key {GROUP.table('t3')}) is corrupt: last_round is '12z'",
    )
    assert await snapshot(redis_client) == before

    listed = await admin.ListTables(pb.ListTablesRequest(link_group_id="floor"))
    assert [t.table_id for t in listed.tables] == ["t2", "t3"]
    await _the_other_table_plays(tables, 1)
    assert _counted(controller, "table") >= 2

    status, state = await _floor_state(RedisStore(redis_client))
    assert status == 200
    states = {t["table_id"]: t["state"] for t in state["tables"]}
    assert states == {"t1": "corrupt", "t2": "online", "t3": "corrupt"}
    assert [(c["kind"], c["name"]) for c in state["corrupt"]] == [("table", "t1"), ("table", "t3")]

    report = await audit.verify(RedisStore(redis_client))
    corrupt = [d for d in report.differences if "is corrupt" in d]
    assert len(corrupt) == 2, report.differences
    assert "table t1" in corrupt[0] and "table t3" in corrupt[1]


async def test_the_audit_names_every_bad_record_and_goes_on(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await _two_meters(admin, floor)
    await tables.Lockout(lockout("t1", 1, [1]))
    hit = (await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))).results[0]
    await tables.Lockout(lockout("t1", 2, [1]))  # open: its round record is audited
    # A second link group, untouched: the audit must still check it.
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="east", description="e"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="east-main",
            link_group_id="east",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent=RATE_PERCENT,
        )
    )
    await admin.RegisterTable(
        pb.RegisterTableRequest(table=progressive_table("e1", "east", "east-main"))
    )
    await tables.Lockout(lockout("e1", 1, [1, 2, 3]))

    await redis_client.hset(GROUP.meter("cs-other"), "reserve_microcents", "NaN")
    await redis_client.hset(GROUP.jackpots, hit.jackpot_id, "[not json")
    await redis_client.hset(GROUP.round("t1", 2), "wagers", "{{")
    # An entry appended by hand whose amount is not a number (the chain names it too).
    forged: dict[Any, Any] = {"seq": "999", "type": "contribution", "meter": "cs-main"}
    entry_id = str(await redis_client.xadd(GROUP.journal, {**forged, "d_meter": "1e9"}))
    before = await snapshot(redis_client)

    report = await audit.verify(RedisStore(redis_client))
    corrupt = [d for d in report.differences if "is corrupt" in d]
    named = " | ".join(corrupt)
    assert f"meter cs-other (Redis key {GROUP.meter('cs-other')})" in named
    assert f"jackpot {hit.jackpot_id}" in named
    assert f"round 2 of table t1 (Redis key {GROUP.round('t1', 2)})" in named
    assert f"journal entry {entry_id} (Redis key {GROUP.journal}) is corrupt: d_meter" in named
    assert report.link_groups == 2
    assert report.meters == 2  # cs-main and east-main, compared with their journals
    assert not [d for d in report.differences if d.startswith("east")]
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("hit_cents", "1", "is outside"),  # below the meter: main paid it, then more
        ("hit_cents", "1000000abc", "hit_cents is '1000000abc', not an integer"),
        ("salt", "zz", "its salt is not 64 hex digits"),
    ],
)
async def test_a_corrupt_hit_point_pays_nothing(
    redis_client: Redis, field: str, value: str, why: str
) -> None:
    store = RedisStore(redis_client)
    table = await _mystery_table(store)
    secret = keys.LinkGroupKeys("mhb").mystery("mhb-mystery")
    await redis_client.hset(secret, field, value)
    before = await snapshot(redis_client)
    with pytest.raises(CorruptRecord, match=why) as refused:
        await store.rounds.lockout(table, 1, _wagers(7), "fp-1")
    assert refused.value.key == secret and refused.value.kind == "meter"
    assert await snapshot(redis_client) == before  # no hit, no jackpot, no journal entry


async def test_a_hit_point_that_does_not_open_its_commitment_pays_nothing(
    redis_client: Redis,
) -> None:
    store = RedisStore(redis_client)
    table = await _mystery_table(store)
    group = keys.LinkGroupKeys("mhb")
    meter = await store.catalog.get_meter("mhb-mystery")
    # In range and above the meter, but not the committed one: refused when it would pay.
    await redis_client.hset(group.mystery("mhb-mystery"), "hit_cents", str(RESET_CENTS + 1))
    assert meter.amount_microcents < (RESET_CENTS + 1) * 1_000_000
    before = await snapshot(redis_client)
    with pytest.raises(CorruptRecord, match="does not open its commitment; nothing was paid"):
        await store.rounds.lockout(table, 1, _wagers(7), "fp-1")
    assert await snapshot(redis_client) == before


async def test_a_corrupt_must_hit_by_amount_pays_nothing(redis_client: Redis) -> None:
    store = RedisStore(redis_client)
    table = await _mystery_table(store)
    await redis_client.hset(
        keys.LinkGroupKeys("mhb").meter("mhb-mystery"), "must_hit_by_cents", str(RESET_CENTS - 5)
    )
    before = await snapshot(redis_client)
    with pytest.raises(CorruptRecord, match="is not above its reset"):
        await store.rounds.lockout(table, 1, _wagers(7), "fp-1")
    assert await snapshot(redis_client) == before


async def _mystery_table(store: RedisStore) -> TableConfig:
    """Link group mhb: a progressive meter and a must-hit-by meter (hit point within $20 of
    the reset, fed 50% of each wager: seven $10 wagers reach it) fed by one table."""
    return await _mystery_floor(store, "mhb", 2_000)


def _wagers(seats: int) -> list[Wager]:
    return [Wager(seat, "progressive", 1_000) for seat in range(1, seats + 1)]


@pytest.mark.parametrize(
    "value", ["abc", "", "1e3", " 5", "5 ", "+5", "1_000", "٣", "1.0", 1.5, True, None]
)
def test_a_stored_integer_is_read_only_as_written(value: object) -> None:
    with pytest.raises(ValueError, match=r"value_microcents is .*, not an integer"):
        codec.integer("value_microcents", value)


@pytest.mark.parametrize(
    ("value", "read"), [("0", 0), ("-12", -12), ("9007199254740991", 2**53 - 1), (7, 7)]
)
def test_a_stored_integer_reads(value: object, read: int) -> None:
    assert codec.integer("value_microcents", value) == read


async def test_a_corrupt_link_group_or_irregularity_leaves_the_floor_up(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await floor.create()
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="east", description="e"))
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="west", description="w"))
    await tables.Lockout(lockout("t1", 1, [1]))
    east = keys.LinkGroupKeys("east")
    await redis_client.hset(east.maintenance, mapping={"state": "play", "left_seq": "7x"})
    await redis_client.set(keys.LinkGroupKeys("west").seq, "2.5")
    await redis_client.hset(GROUP.irregularities, "t1:1:chip_count", "{bad")

    await expect_refusal(
        admin.GetLinkGroup(pb.GetLinkGroupRequest(link_group_id="east")),
        DATA_LOSS,
        f"link group east (Redis key {east.maintenance}) is corrupt: left_seq is '7x'",
    )
    listed = await admin.ListLinkGroups(pb.ListLinkGroupsRequest())
    assert [g.link_group_id for g in listed.link_groups] == ["floor"]
    irregularities = await admin.ListIrregularities(pb.ListIrregularitiesRequest())
    assert list(irregularities.irregularities) == []
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))  # the floor's own tables play on

    status, state = await _floor_state(RedisStore(redis_client))
    assert status == 200
    assert [t["table_id"] for t in state["tables"]] == ["t1"]
    assert [(c["kind"], c["name"]) for c in state["corrupt"]] == [
        ("irregularity", "t1:1:chip_count"),
        ("link group", "east"),
        ("link group", "west"),
    ]


async def test_a_script_never_reads_a_corrupt_number_as_0(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await floor.create()
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    (jackpot_id,) = [j.jackpot_id for j in pending.jackpots]
    # Rejecting a hit returns it to its meter: a meter whose last hit does not read is refused.
    await redis_client.hset(GROUP.meter("cs-main"), "last_hit_seq", "3x")
    before = await snapshot(redis_client)
    reject = pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note="misread")
    await expect_refusal(admin.RejectJackpot(reject), DATA_LOSS, "a stored number is '3x'")
    assert await snapshot(redis_client) == before
    assert _counted(controller, "record") >= 1


async def test_a_corrupt_adjustment_is_refused_alone(
    controller: ControllerServer,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await _two_meters(admin, floor)
    ids = []
    for meter_id in ("cs-main", "cs-other"):
        requested = await admin.RequestAdjustment(
            pb.RequestAdjustmentRequest(
                meter_id=meter_id, amount_cents=500, reason="short seed", reference="T-1"
            )
        )
        ids.append(requested.adjustment_id)
    await redis_client.hset(GROUP.adjustments, ids[0], '{"v": 1, "amount_cents": "5x"')
    before = await snapshot(redis_client)

    listed = await admin.ListAdjustments(pb.ListAdjustmentsRequest())
    assert [a.adjustment_id for a in listed.adjustments] == [ids[1]]
    await expect_refusal(
        admin.ApproveAdjustment(pb.ReviewAdjustmentRequest(adjustment_id=ids[0])),
        DATA_LOSS,
        f"adjustment {ids[0]} (Redis key {GROUP.adjustments}) is corrupt",
    )
    assert await snapshot(redis_client) == before
    assert _counted(controller, "adjustment") >= 2
    report = await audit.verify(RedisStore(redis_client))
    assert [d for d in report.differences if "is corrupt" in d] == [
        f"floor: the stored record of adjustment {ids[0]} (Redis key {GROUP.adjustments}) is "
        "corrupt: its JSON does not parse (Expecting ',' delimiter: line 1 column 30 (char 29)); "
        "it is not used until an engineer restores it from the last export (jackpotctl "
        "restore) - call the engineer on duty"
    ]


async def test_a_table_keeps_its_report_while_the_record_is_corrupt_and_delivers_it_mended(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis
) -> None:
    """DATA_LOSS is no refusal of the report: the agent retries it (the same idempotency key)
    until an engineer mends the record, and the lockout then goes through once."""
    await floor.create()
    client = table_client(controller.port, pki, retry_for_s=30)
    agent = TableAgent("t1", client)
    meter_key = GROUP.meter("cs-main")
    good = await redis_client.hget(meter_key, "value_microcents")
    await redis_client.hset(meter_key, "value_microcents", "10000oops")
    try:
        locking = asyncio.create_task(
            agent._lockout(agent.new_round(), [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
        )
        await asyncio.sleep(1.0)
        assert not locking.done()  # still retrying, not refused
        await redis_client.hset(meter_key, "value_microcents", good)
        result = await asyncio.wait_for(locking, timeout=20)
    finally:
        await client.close()
    assert [wager.seat for wager in result.accepted] == [1]
