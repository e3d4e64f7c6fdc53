"""Staged meter changes and winding a meter down, over real gRPC and Redis
(docs/staged-changes.md).

A change staged "at the next reset" or "at the next hit" waits, visible on the meter, while
the tables play on (no maintenance); the step that pays the hit applies it atomically and
journals it; one that no longer fits is dropped with why and the payment goes on. An
ordinary round's lockout and settle read nothing of it. A wound-down meter takes no
contributions and stays until won or retired into another meter. The audit verifies it all.
"""

from __future__ import annotations

import json

import grpc
import pytest
from redis.asyncio import Redis

from controller.domain.reports import change_report, meter_report
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.web.floor import FloorView
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    progressive_table,
    settle,
    snapshot,
)

FAILED = grpc.StatusCode.FAILED_PRECONDITION
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
NEXT_HIT, NEXT_RESET = pb.METER_CHANGE_AT_NEXT_HIT, pb.METER_CHANGE_AT_NEXT_RESET
MICRO = 1_000_000


def entries(rows: list[tuple[str, dict[str, str]]], kind: str) -> list[dict[str, str]]:
    return [fields for _, fields in rows if fields["type"] == kind]


async def audited(controller: ControllerServer) -> None:
    report = await verify(controller.store)
    assert report.ok, report.differences


def staged_reset(
    at: pb.MeterChangeAt.ValueType = NEXT_RESET, meter_id: str = "cs-main", **change: object
) -> pb.UpdateMeterRequest:
    """UpdateMeter staged at ``at``: by default a 12.5% rate and a reset $50 higher."""
    fields: dict[str, object] = {
        "rate_of_progression_percent": "12.5",
        "reset_cents": RESET_CENTS + 5_000,
    }
    fields.update(change)
    request = pb.UpdateMeterRequest(meter_id=meter_id, reason="NZ rule 3.15.3", at=at)
    for name, value in fields.items():
        setattr(request, name, value)
    return request


async def test_a_change_staged_for_the_next_reset_waits_and_the_hit_applies_it(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4]))  # 60 cents on the meter
    meter = await admin.UpdateMeter(staged_reset())  # in play: no maintenance needed
    staged = meter.staged_change
    assert staged.at == NEXT_RESET and staged.staged_seq > 0
    assert (staged.reset_cents, staged.rate_of_progression_percent) == (RESET_CENTS + 5_000, "12.5")
    assert (staged.old_reset_cents, staged.old_rate_of_progression_percent) == (RESET_CENTS, "15")
    assert staged.by.endswith("/ops") and staged.reason == "NZ rule 3.15.3"
    assert (meter.reset_cents, meter.rate_of_progression_percent) == (RESET_CENTS, "15")
    again = await admin.UpdateMeter(staged_reset())  # a retry: the same, nothing more
    assert again.staged_change == staged
    listed = await admin.ListMeters(pb.ListMetersRequest(link_group_id="floor"))
    assert listed.meters[0].staged_change == staged
    await expect_refusal(
        admin.UpdateMeter(staged_reset(reset_cents=RESET_CENTS + 7_000)),
        FAILED,
        f"meter cs-main already has a change staged (journal #{staged.staged_seq}); cancel it",
    )
    await admin.EnterMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))
    await expect_refusal(
        admin.UpdateMeter(staged_reset(at=pb.METER_CHANGE_AT_NOW)),
        FAILED,
        "has a change staged for its next hit",
    )
    await admin.LeaveMaintenance(pb.MaintenanceRequest(link_group_id="floor", reason="x"))

    # the staged rate is not the rate yet: round 2 contributes at 15%
    await tables.Lockout(lockout("t1", 2, [1, 2]))
    assert (await floor.meter()).amount_cents == RESET_CENTS + 90
    # a 10% hit does not reset the meter: the change waits on
    await tables.Settle(settle("t1", 2, {1: STRAIGHT_FLUSH_HEARTS}, folded=[2]))
    assert (await floor.meter()).staged_change == staged
    # the 100% award pays the meter, then resets it to the new reset; the new rate applies
    await tables.Lockout(lockout("t1", 3, [1]))
    before = (await floor.meter()).amount_cents
    settled = await tables.Settle(settle("t1", 3, {1: ROYAL_SPADES}))
    (result,) = settled.results
    assert result.amount_cents == before and result.meter_after_cents == RESET_CENTS + 5_000
    meter = await floor.meter()
    assert not meter.HasField("staged_change")
    assert (meter.reset_cents, meter.rate_of_progression_percent) == (RESET_CENTS + 5_000, "12.5")
    assert meter.amount_cents == RESET_CENTS + 5_000
    await tables.Lockout(lockout("t1", 4, [1, 2]))  # 12.5 cents a wager now
    assert (await floor.meter()).amount_microcents == (RESET_CENTS + 5_000 + 25) * MICRO

    rows = await journal(redis_client)
    (entry,) = entries(rows, "meter_change_staged")
    assert (entry["seq"], entry["at"], entry["new_rate_ppm"]) == (
        str(staged.staged_seq),
        "reset",
        "125000",
    )
    (applied,) = entries(rows, "meter_change_applied")
    reported = change_report([e async for e in controller.store.journal.entries("floor")])
    assert [c.type for c in reported if c.type.startswith("meter_change")] == [
        "meter_change_staged",
        "meter_change_applied",
    ]
    award = next(e for e in entries(rows, "award") if e["round"] == "3")
    (reset,) = [e for e in entries(rows, "reset") if e["round"] == "3"]
    assert int(award["seq"]) < int(reset["seq"]) < int(applied["seq"])
    assert reset["reset_cents"] == str(RESET_CENTS + 5_000)
    assert (applied["staged_seq"], applied["hit_seq"], applied["round"]) == (
        str(staged.staged_seq),
        award["seq"],
        "3",
    )
    assert (applied["old_reset_cents"], applied["new_reset_cents"]) == (
        str(RESET_CENTS),
        str(RESET_CENTS + 5_000),
    )
    await audited(controller)


async def test_a_change_staged_for_the_next_hit_is_applied_by_a_partial_hit(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    await admin.UpdateMeter(staged_reset(at=NEXT_HIT, reserve_rate_percent="1"))
    settled = await tables.Settle(settle("t1", 1, {1: STRAIGHT_FLUSH_HEARTS}, folded=[2]))
    (hit,) = [result for result in settled.results if result.seat == 1]
    assert hit.amount_cents == (RESET_CENTS + 30) // 10  # 10% of the meter as it stood
    meter = await floor.meter()
    assert not meter.HasField("staged_change")
    assert (meter.reset_cents, meter.reserve_rate_percent) == (RESET_CENTS + 5_000, "1")
    assert meter.amount_cents == RESET_CENTS + 30 - hit.amount_cents  # no reset
    assert len(entries(await journal(redis_client), "meter_change_applied")) == 1
    await audited(controller)


async def test_a_staged_change_the_meter_outgrew_is_dropped_and_the_hit_is_paid(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    # a ceiling below the amount is refused when staged for the next hit ...
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4, 5, 6, 7]))  # $10,001.05
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.UpdateMeter(
            staged_reset(at=NEXT_HIT, reset_cents=RESET_CENTS, ceiling_cents=RESET_CENTS + 100)
        ),
        FAILED,
        "the ceiling $10001.00 staged for meter cs-main is below its current amount $10001.05",
    )
    assert await snapshot(redis_client) == before
    # ... and dropped when the meter grew past it meanwhile: the award is paid all the same
    meter = await admin.UpdateMeter(
        staged_reset(at=NEXT_HIT, reset_cents=RESET_CENTS, ceiling_cents=RESET_CENTS + 200)
    )
    seq = meter.staged_change.staged_seq
    asked = await admin.RequestAdjustment(
        pb.RequestAdjustmentRequest(
            meter_id="cs-main", amount_cents=120_000, reason="short seed", reference="r1"
        )
    )
    bob = pb_grpc.AdminServiceStub(channels("operator", "bob"))
    await bob.ApproveAdjustment(pb.ReviewAdjustmentRequest(adjustment_id=asked.adjustment_id))
    await tables.Lockout(lockout("t1", 2, [1]))  # $11,201.20: 10% leaves $10,081.08
    settled = await tables.Settle(settle("t1", 2, {1: STRAIGHT_FLUSH_HEARTS}))
    assert settled.results[0].amount_cents == (RESET_CENTS + 120_120) // 10
    meter = await floor.meter()
    assert not meter.HasField("staged_change")
    assert (meter.reset_cents, meter.rate_of_progression_percent, meter.ceiling_cents) == (
        RESET_CENTS,
        "15",
        0,
    )
    rows = await journal(redis_client)
    assert entries(rows, "meter_change_applied") == []
    (dropped,) = entries(rows, "meter_change_dropped")
    assert dropped["staged_seq"] == str(seq) and dropped["round"] == "2"
    assert dropped["reason"].startswith("dropped: its ceiling 1000200 cents would be below")
    await audited(controller)


async def test_a_must_hit_by_change_is_checked_when_staged_and_again_when_applied(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    span = 3_000
    await Floor(admin).create(tables=())
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="50",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + span,
        )
    )
    table = progressive_table("t1", "floor", "cs-main")
    table.wagers[0].meter_ids.append("cs-mystery")
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    before = await snapshot(redis_client)
    for change, text in (
        ({"reset_cents": RESET_CENTS + span}, "must be above the reset amount"),
        ({"ceiling_cents": RESET_CENTS + span}, "ceiling"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await admin.UpdateMeter(staged_reset(NEXT_RESET, "cs-mystery", **change))
        assert caught.value.code() in (FAILED, INVALID), caught.value.details()
        assert text in str(caught.value.details())
    assert await snapshot(redis_client) == before

    async def play_until_a_hit(round_id: int) -> tuple[int, int]:
        """Play rounds until one hits; return that round and its hits (a cycle drawn near the
        reset can be hit twice by the seven seats of one round)."""
        while True:
            round_id += 1
            answer = await tables.Lockout(lockout("t1", round_id, [1, 2, 3, 4, 5, 6, 7]))
            if answer.mystery_hits:
                return round_id, len(answer.mystery_hits)

    # a valid change applied by the hit: the next cycle is drawn above the new reset
    await admin.UpdateMeter(staged_reset(meter_id="cs-mystery", reset_cents=RESET_CENTS + 1_000))
    round_id, _ = await play_until_a_hit(0)
    meter = await admin.GetMeter(pb.GetMeterRequest(meter_id="cs-mystery"))
    assert not meter.HasField("staged_change") and meter.reset_cents == RESET_CENTS + 1_000
    assert meter.rate_of_progression_percent == "12.5"
    rows = await journal(redis_client)
    (applied,) = entries(rows, "meter_change_applied")
    draw = [e for e in entries(rows, "mystery_draw") if int(e["seq"]) < int(applied["seq"])][-1]
    assert draw["reset_cents"] == str(RESET_CENTS + 1_000) and draw["round"] == str(round_id)
    secret = await redis_client.hgetall(keys.LinkGroupKeys("floor").mystery("cs-mystery"))
    assert RESET_CENTS + 1_000 < int(secret["hit_cents"]) <= RESET_CENTS + span
    await audited(controller)

    # the meter's parameters moved since it was staged (written behind the controller's
    # back): the hit re-checks, drops the change, and pays
    await admin.UpdateMeter(
        staged_reset(meter_id="cs-mystery", reset_cents=RESET_CENTS + 2_000, at=NEXT_HIT)
    )
    meter_key = keys.LinkGroupKeys("floor").meter("cs-mystery")
    await redis_client.hset(meter_key, "reset_cents", str(RESET_CENTS + 500))
    pending = len((await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots)
    _, hits = await play_until_a_hit(round_id)
    meter = await admin.GetMeter(pb.GetMeterRequest(meter_id="cs-mystery"))
    assert not meter.HasField("staged_change") and meter.reset_cents == RESET_CENTS + 500
    (dropped,) = entries(await journal(redis_client), "meter_change_dropped")
    assert (
        "the meter's reset_cents is 1000500, not 1001000 as when the change was staged"
        in (dropped["reason"])
    )
    after = (await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots
    assert len(after) == pending + hits  # the hit was paid all the same


async def test_cancelling_a_staged_change(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    cancel = pb.CancelStagedMeterChangeRequest(meter_id="cs-main", reason="withdrawn")
    await expect_refusal(admin.CancelStagedMeterChange(cancel), NOT_FOUND, "no staged change")
    seq = (await admin.UpdateMeter(staged_reset())).staged_change.staged_seq
    await expect_refusal(
        admin.CancelStagedMeterChange(
            pb.CancelStagedMeterChangeRequest(meter_id="cs-main", reason="x", staged_seq=seq + 9)
        ),
        FAILED,
        f"the change staged for meter cs-main is journal #{seq}, not #{seq + 9}",
    )
    await expect_refusal(
        admin.CancelStagedMeterChange(pb.CancelStagedMeterChangeRequest(meter_id="cs-main")),
        INVALID,
        "reason",
    )
    meter = await admin.CancelStagedMeterChange(cancel)
    assert not meter.HasField("staged_change")
    assert await admin.CancelStagedMeterChange(cancel) == meter  # a retry: the same answer
    await expect_refusal(
        admin.CancelStagedMeterChange(
            pb.CancelStagedMeterChangeRequest(meter_id="cs-main", reason="other")
        ),
        NOT_FOUND,
        "no staged change",
    )
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    meter = await floor.meter()
    assert (meter.reset_cents, meter.rate_of_progression_percent) == (RESET_CENTS, "15")
    rows = await journal(redis_client)
    (cancelled,) = entries(rows, "meter_change_cancelled")
    assert cancelled["staged_seq"] == str(seq) and cancelled["reason"] == "withdrawn"
    assert entries(rows, "meter_change_applied") == []
    await audited(controller)


async def test_an_ordinary_round_reads_no_staged_change(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    """The hot path: a staged change that does not read as JSON is named only by a hit; a
    round without a hit locks out and settles as if it were not there."""
    await admin.UpdateMeter(staged_reset())
    meter_key = keys.LinkGroupKeys("floor").meter("cs-main")
    await redis_client.hset(meter_key, "staged_change", "{not json")
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    await tables.Settle(settle("t1", 1, {1: STRAIGHT_FLUSH_HEARTS.replace("KH", "2C")}, [2]))
    assert await redis_client.hget(meter_key, "staged_change") == "{not json"
    # the hit drops it (journaled) and pays
    await tables.Lockout(lockout("t1", 2, [1]))
    settled = await tables.Settle(settle("t1", 2, {1: ROYAL_SPADES}))
    assert settled.results[0].amount_cents > RESET_CENTS
    (dropped,) = entries(await journal(redis_client), "meter_change_dropped")
    assert dropped["reason"] == "dropped: its record does not read as JSON"


async def test_a_staged_change_shows_on_the_floor_view_and_in_the_meter_report(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    view = FloorView(controller.store)
    (shown,) = (await view.snapshot())["meters"]
    assert shown["change"] == ""
    seq = (await admin.UpdateMeter(staged_reset())).staged_change.staged_seq
    view.forget()
    (shown,) = (await view.snapshot())["meters"]
    assert shown["change"] == (
        f"at the next reset (journal #{seq}): reset $10,050.00, rate 12.5%, reserve rate 0%, "
        "ceiling none; staged by jackpot://operator/ops: NZ rule 3.15.3"
    )
    store = controller.store
    entries_ = [e async for e in store.journal.entries("floor")]
    meters = await store.catalog.list_meters("floor")
    (line,) = meter_report(entries_, meters, [])
    assert line.staged_change == shown["change"]


async def test_a_staged_number_not_in_digits_is_dropped_never_stored(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    """A staged reset edited in Redis to a form the meter loader refuses ("1e6") would, once
    stored, stop every table of the meter: the hit drops it and keeps the meter readable."""
    await admin.UpdateMeter(staged_reset())
    meter_key = keys.LinkGroupKeys("floor").meter("cs-main")
    staged = json.loads(str(await redis_client.hget(meter_key, "staged_change")))
    await redis_client.hset(
        meter_key, "staged_change", json.dumps(staged | {"new_reset_cents": "1e6"})
    )
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}))
    (dropped,) = entries(await journal(redis_client), "meter_change_dropped")
    assert dropped["reason"] == "dropped: its new reset_cents is not a whole number"
    assert (await floor.meter()).reset_cents == RESET_CENTS
    await tables.Lockout(lockout("t1", 2, [1]))  # the meter still reads: play goes on
