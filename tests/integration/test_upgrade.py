"""Data the first release stored keeps working: its table registrations (progressive only:
paytable, meter_id, wager_cents) and its locked rounds (each wager's one contribution inline)."""

from __future__ import annotations

import json

from redis.asyncio import Redis

from controller.audit import verify
from controller.server import ControllerServer
from controller.store import keys
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import RESET_CENTS, Floor, lockout, settle

FIRST_RELEASE_TABLE = {
    "game": "caribbean-stud",
    "link_group_id": "floor",
    "meter_id": "cs-main",
    "paytable": "B",
    "seats": 7,
    "table_id": "old-1",
    "wager_cents": 100,
}


async def _first_release_round(redis: Redis, round_id: int) -> None:
    """Rewrite a locked round's wagers as the first release stored them."""
    key = keys.LinkGroupKeys("floor").round("old-1", round_id)
    stored = await redis.hget(key, "wagers")
    assert stored is not None
    wagers = json.loads(stored)
    old = [
        {
            "seat": w["seat"],
            "kind": w["kind"],
            "amount_cents": w["amount_cents"],
            "meter_id": c["meter_id"],
            "to_meter_microcents": c["to_meter_microcents"],
            "to_reserve_microcents": c["to_reserve_microcents"],
        }
        for w in wagers
        for c in w["contributions"]
    ]
    await redis.hset(key, "wagers", json.dumps(old))


async def test_first_release_tables_and_rounds_keep_working(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    group = keys.LinkGroupKeys("floor")
    await redis_client.hset(keys.TABLE_INDEX, "old-1", "floor")
    await redis_client.hset(
        group.table("old-1"),
        mapping={"config": json.dumps(FIRST_RELEASE_TABLE, sort_keys=True), "last_round": "0"},
    )
    await redis_client.sadd(group.tables, "old-1")

    await floor.register("old-1")  # the same definition: accepted, nothing rewritten
    listed = {t.table_id: t for t in (await admin.ListTables(pb.ListTablesRequest())).tables}
    assert [(w.paytable, w.min_cents, list(w.meter_ids)) for w in listed["old-1"].wagers] == [
        ("B", 100, ["cs-main"])
    ]

    await tables.Lockout(lockout("old-1", 1, [1, 2]))
    await _first_release_round(redis_client, 1)
    void = await tables.VoidRound(
        pb.VoidRoundRequest(table_id="old-1", round_id=1, reason="misdeal")
    )
    assert [c.to_meter_microcents for w in void.reversed for c in w.contributions] == [
        15_000_000
    ] * 2
    assert (await floor.meter()).amount_cents == RESET_CENTS

    await tables.Lockout(lockout("old-1", 2, [3]))
    await _first_release_round(redis_client, 2)
    reply = await tables.Settle(settle("old-1", 2, {3: "2S 2H 2D 2C 3S"}))
    assert [(r.seat, r.award_text, r.amount_cents) for r in reply.results] == [
        (3, "500 for 1", 50_000)
    ]
    assert (await verify(controller.store)).ok
