"""Meter and table controls over real gRPC and Redis: maintenance, meter updates, two-person
adjustments, meter retirement with its transfer, table updates and retirement. Every change
is journaled with who and why; every refusal is precise and changes nothing."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import codec, keys
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    OPERATOR,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
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
ALICE = f"jackpot://{OPERATOR[0]}/{OPERATOR[1]}"  # the operator of the `admin` stub
BOB = ("operator", "bob")
MICRO = 1_000_000


def operator(channels: Channels, name: str = BOB[1]) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channels("operator", name))


def enter(group: str = "floor", reason: str = "new reset") -> pb.MaintenanceRequest:
    return pb.MaintenanceRequest(link_group_id=group, reason=reason)


def entries(rows: list[tuple[str, dict[str, str]]], kind: str) -> list[dict[str, str]]:
    return [fields for _, fields in rows if fields["type"] == kind]


async def audited(controller: ControllerServer) -> None:
    report = await verify(controller.store)
    assert report.ok, report.differences


async def test_maintenance_refuses_progressive_wagers_and_lets_locked_rounds_settle(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))  # locked out before maintenance
    group = await admin.EnterMaintenance(enter())
    assert group.maintenance.active and group.maintenance.by == ALICE
    assert group.maintenance.reason == "new reset" and group.maintenance.since_seq > 0
    assert (await admin.EnterMaintenance(enter())).maintenance == group.maintenance  # a retry
    await expect_refusal(
        admin.EnterMaintenance(enter(reason="other")), FAILED, "already in maintenance"
    )

    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Lockout(lockout("t1", 2, [3])),
        FAILED,
        "no progressive wagers now: the progressive meters of table t1 are in maintenance "
        "(new reset); return the progressive wagers",
    )
    assert await snapshot(redis_client) == before
    empty = await tables.Lockout(lockout("t1", 2, []))  # a round without progressive wagers
    assert list(empty.accepted) == []
    settled = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES, 2: STRAIGHT_FLUSH_HEARTS}))
    assert settled.results[0].amount_cents > 0

    left = await admin.LeaveMaintenance(enter(reason="done"))
    assert not left.maintenance.active and left.maintenance.left_by == ALICE
    await admin.LeaveMaintenance(enter(reason="done"))  # a retry: the same answer
    await expect_refusal(
        admin.LeaveMaintenance(enter(reason="again")), FAILED, "is not in maintenance"
    )
    await tables.Lockout(lockout("t1", 3, [3]))
    rows = await journal(redis_client)
    (entered,) = entries(rows, "maintenance_entered")
    (ended,) = entries(rows, "maintenance_left")
    assert (entered["by"], entered["reason"]) == (ALICE, "new reset")
    assert (ended["by"], ended["reason"], ended["entered_seq"]) == (
        ALICE,
        "done",
        str(group.maintenance.since_seq),
    )
    await audited(controller)


async def test_a_parameter_change_in_play_is_refused_in_maintenance_applied_and_journaled(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    floor = Floor(admin)
    await floor.create(ceiling_cents=RESET_CENTS + 50_000)
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4]))  # 60 cents on the meter
    change = pb.UpdateMeterRequest(
        meter_id="cs-main",
        rate_of_progression_percent="12.5",
        reserve_rate_percent="2.5",
        reset_cents=RESET_CENTS + 5_000,
        ceiling_cents=RESET_CENTS + 90_000,
        reason="Rules Submission rev 4",
    )
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.UpdateMeter(change),
        FAILED,
        "meter cs-main changes only while link group floor is in maintenance",
    )
    assert await snapshot(redis_client) == before

    await admin.EnterMaintenance(enter())
    for bad, code, text in (
        (pb.UpdateMeterRequest(meter_id="cs-main", reason="x"), INVALID, "nothing to change"),
        (pb.UpdateMeterRequest(meter_id="cs-main", reset_cents=5, reason="x"), None, "minimum"),
        (
            pb.UpdateMeterRequest(
                meter_id="cs-main",
                rate_of_progression_percent="99",
                reserve_rate_percent="2",
                reason="x",
            ),
            None,
            "exceeds 100% of the wager",
        ),
        (pb.UpdateMeterRequest(meter_id="cs-main", reset_cents=RESET_CENTS), INVALID, "reason"),
        (
            pb.UpdateMeterRequest(meter_id="cs-main", ceiling_cents=RESET_CENTS + 10, reason="x"),
            FAILED,
            "ceiling $10000.10 of meter cs-main would be below its current amount $10000.60",
        ),
        (pb.UpdateMeterRequest(meter_id="nope", reset_cents=1, reason="x"), None, "nope"),
    ):
        before = await snapshot(redis_client)
        with_code = code or grpc.StatusCode.INVALID_ARGUMENT
        if bad.meter_id == "nope":
            with_code = grpc.StatusCode.NOT_FOUND
        await expect_refusal(admin.UpdateMeter(bad), with_code, text)
        assert await snapshot(redis_client) == before

    meter = await admin.UpdateMeter(change)
    assert (meter.rate_of_progression_percent, meter.reserve_rate_percent) == ("12.5", "2.5")
    assert (meter.reset_cents, meter.ceiling_cents) == (RESET_CENTS + 5_000, RESET_CENTS + 90_000)
    assert meter.amount_cents == RESET_CENTS + 60  # no money moves
    rows = await journal(redis_client)
    (updated,) = entries(rows, "meter_updated")
    assert updated["by"] == ALICE and updated["reason"] == "Rules Submission rev 4"
    assert (updated["old_rate_ppm"], updated["new_rate_ppm"]) == ("150000", "125000")
    assert (updated["old_reserve_rate_ppm"], updated["new_reserve_rate_ppm"]) == ("0", "25000")
    assert (updated["old_reset_cents"], updated["new_reset_cents"]) == (
        str(RESET_CENTS),
        str(RESET_CENTS + 5_000),
    )
    assert updated["old_ceiling_cents"] == str(RESET_CENTS + 50_000)
    assert updated["d_meter"] == "0" and updated["meter"] == "cs-main"
    await admin.UpdateMeter(change)  # the same change again: nothing more
    assert len(await journal(redis_client)) == len(rows)

    await admin.LeaveMaintenance(enter(reason="done"))
    reply = await tables.Lockout(lockout("t1", 2, [1]))  # the new rates apply
    (contribution,) = reply.accepted[0].contributions
    assert (contribution.to_meter_microcents, contribution.to_reserve_microcents) == (
        12_500_000,
        2_500_000,
    )
    await audited(controller)


async def test_an_adjustment_needs_two_different_operators(
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    bob = operator(channels)
    ask = pb.RequestAdjustmentRequest(
        meter_id="cs-main", amount_cents=-2_500, reason="double seed", reference="incident 77"
    )
    before = await snapshot(redis_client)
    for bad, text in (
        (pb.RequestAdjustmentRequest(meter_id="cs-main", reason="x", reference="y"), "not 0"),
        (pb.RequestAdjustmentRequest(meter_id="cs-main", amount_cents=1, reference="y"), "reason"),
        (pb.RequestAdjustmentRequest(meter_id="cs-main", amount_cents=1, reason="x"), "reference"),
    ):
        await expect_refusal(admin.RequestAdjustment(bad), INVALID, text)
    await expect_refusal(
        admin.RequestAdjustment(
            pb.RequestAdjustmentRequest(
                meter_id="cs-main", amount_cents=-RESET_CENTS - 1, reason="x", reference="y"
            )
        ),
        FAILED,
        "would take meter cs-main below zero",
    )
    supervisor = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
    await expect_refusal(supervisor.RequestAdjustment(ask), grpc.StatusCode.PERMISSION_DENIED, "")
    assert await snapshot(redis_client) == before

    requested = await admin.RequestAdjustment(ask)
    assert (requested.status, requested.requested_by) == ("requested", ALICE)
    assert requested.adjustment_id == f"floor:{requested.request_seq}"
    assert (await admin.RequestAdjustment(ask)).adjustment_id == requested.adjustment_id  # retry
    assert (await floor.meter()).amount_cents == RESET_CENTS  # nothing moved yet

    review = pb.ReviewAdjustmentRequest(adjustment_id=requested.adjustment_id, note="checked")
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.ApproveAdjustment(review),
        FAILED,
        f"was requested by {ALICE}; an adjustment needs two people",
    )
    assert await snapshot(redis_client) == before

    approved = await bob.ApproveAdjustment(review)
    assert (approved.status, approved.decided_by) == ("approved", "jackpot://operator/bob")
    assert (await floor.meter()).amount_cents == RESET_CENTS - 2_500
    assert (await bob.ApproveAdjustment(review)).decision_seq == approved.decision_seq  # retry
    await expect_refusal(
        admin.RejectAdjustment(review), FAILED, "was already approved by jackpot://operator/bob"
    )
    rows = await journal(redis_client)
    (asked,) = entries(rows, "adjustment_requested")
    (applied,) = entries(rows, "adjustment_approved")
    assert (asked["amount_cents"], asked["by"], asked["d_meter"]) == ("-2500", ALICE, "0")
    assert applied["d_meter"] == str(-2_500 * MICRO) and applied["meter"] == "cs-main"
    assert (applied["requested_by"], applied["by"]) == (ALICE, "jackpot://operator/bob")
    assert (applied["reason"], applied["reference"], applied["note"]) == (
        "double seed",
        "incident 77",
        "checked",
    )

    withdrawn = await admin.RequestAdjustment(
        pb.RequestAdjustmentRequest(
            meter_id="cs-main", amount_cents=100, reason="typo", reference="incident 78"
        )
    )
    await expect_refusal(
        admin.RejectAdjustment(pb.ReviewAdjustmentRequest(adjustment_id=withdrawn.adjustment_id)),
        INVALID,
        "a rejection needs its reason",
    )
    rejected = await admin.RejectAdjustment(
        pb.ReviewAdjustmentRequest(adjustment_id=withdrawn.adjustment_id, note="wrong amount")
    )
    assert rejected.status == "rejected"
    assert (await floor.meter()).amount_cents == RESET_CENTS - 2_500
    listed = await supervisor.ListAdjustments(pb.ListAdjustmentsRequest(status="approved"))
    assert [a.adjustment_id for a in listed.adjustments] == [requested.adjustment_id]
    await expect_refusal(
        bob.ApproveAdjustment(pb.ReviewAdjustmentRequest(adjustment_id="floor:x")),
        INVALID,
        "is not an adjustment id",
    )
    await expect_refusal(
        bob.ApproveAdjustment(pb.ReviewAdjustmentRequest(adjustment_id="floor:999")),
        grpc.StatusCode.NOT_FOUND,
        "adjustment floor:999 does not exist",
    )
    await audited(controller)


async def test_retiring_a_meter_moves_its_money_to_another_meter_journaled_on_both_sides(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    floor = Floor(admin)
    await floor.create(reserve_rate="5", tables=("t1", "t2"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-new",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="10",
        )
    )
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="other"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-other",
            link_group_id="other",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="10",
        )
    )
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4]))  # 60 cents + 20 cents of reserve
    await tables.Settle(settle("t1", 1, {}, folded=[1, 2, 3, 4]))
    retire = pb.RetireMeterRequest(
        meter_id="cs-main", to_meter_id="cs-new", reason="one meter", approval="PGCB 2024-118"
    )
    await expect_refusal(admin.RetireMeter(retire), FAILED, "changes only while link group floor")
    await admin.EnterMaintenance(enter())
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.RetireMeter(retire),
        FAILED,
        "meter cs-main is still fed by table(s) t1, t2; update them",
    )
    await expect_refusal(
        admin.RetireMeter(
            pb.RetireMeterRequest(
                meter_id="cs-main", to_meter_id="cs-other", reason="x", approval="y"
            )
        ),
        FAILED,
        "moves within its link group only",
    )
    await expect_refusal(
        admin.RetireMeter(
            pb.RetireMeterRequest(meter_id="cs-main", to_meter_id="cs-new", reason="x")
        ),
        INVALID,
        "approval",
    )
    assert await snapshot(redis_client) == before

    for table_id in ("t1", "t2"):
        await admin.UpdateTable(
            pb.UpdateTableRequest(
                table=progressive_table(table_id, "floor", "cs-new"), reason="feed cs-new"
            )
        )
    retired = await admin.RetireMeter(retire)
    assert retired.transferred_microcents == 60 * MICRO
    assert retired.reserve_transferred_microcents == 20 * MICRO
    assert retired.operator_recovered_microcents == RESET_CENTS * MICRO
    new = await admin.GetMeter(pb.GetMeterRequest(meter_id="cs-new"))
    assert (new.amount_microcents, new.reserve_microcents) == (
        (RESET_CENTS + 60) * MICRO,
        20 * MICRO,
    )
    assert (await admin.RetireMeter(retire)).retired_seq == retired.retired_seq  # a retry
    rows = await journal(redis_client)
    (out,) = entries(rows, "meter_retired")
    (into,) = entries(rows, "meter_transfer_in")
    assert (out["meter"], out["d_meter"], out["d_reserve"]) == (
        "cs-main",
        str(-(RESET_CENTS + 60) * MICRO),
        str(-20 * MICRO),
    )
    assert (into["meter"], into["d_meter"], into["d_reserve"]) == (
        "cs-new",
        str(60 * MICRO),
        str(20 * MICRO),
    )
    for side in (out, into):
        assert (side["by"], side["reason"], side["approval"]) == (
            ALICE,
            "one meter",
            "PGCB 2024-118",
        )
    await expect_refusal(
        admin.GetMeter(pb.GetMeterRequest(meter_id="cs-main")),
        grpc.StatusCode.NOT_FOUND,
        "meter cs-main was retired",
    )
    await expect_refusal(
        admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id="cs-main",
                link_group_id="floor",
                game="caribbean-stud",
                reset_cents=RESET_CENTS,
                rate_of_progression_percent="10",
            )
        ),
        grpc.StatusCode.ALREADY_EXISTS,
        "never used again",
    )
    await admin.LeaveMaintenance(enter(reason="done"))
    reply = await tables.Lockout(lockout("t2", 1, [1]))
    assert [c.meter_id for c in reply.accepted[0].contributions] == ["cs-new"]
    await audited(controller)


async def test_a_table_changes_or_retires_only_in_maintenance_without_open_rounds(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    update = pb.UpdateTableRequest(
        table=progressive_table("t1", "floor", "cs-main", "A", seats=5), reason="paytable A"
    )
    retire = pb.RetireTableRequest(table_id="t1", reason="removed from the floor")
    await expect_refusal(admin.UpdateTable(update), FAILED, "changes only while link group floor")
    await tables.Lockout(lockout("t1", 1, [1]))
    await admin.EnterMaintenance(enter())
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.UpdateTable(update), FAILED, "table t1 has 1 open rounds (1); its dealer settles"
    )
    await expect_refusal(admin.RetireTable(retire), FAILED, "table t1 has 1 open rounds (1)")
    moved = pb.UpdateTableRequest(
        table=progressive_table("t1", "elsewhere", "cs-main"), reason="move"
    )
    await expect_refusal(admin.UpdateTable(moved), INVALID, "an update keeps both")
    assert await snapshot(redis_client) == before
    await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal"))

    table = await admin.UpdateTable(update)
    assert (table.seats, table.wagers[0].paytable) == (5, "A")
    rows = await journal(redis_client)
    (changed,) = entries(rows, "table_updated")
    assert (changed["table"], changed["by"], changed["reason"]) == ("t1", ALICE, "paytable A")
    assert '"seats":7' in changed["old_config"] and '"seats":5' in changed["config"]
    await admin.UpdateTable(update)  # the same definition again: nothing more
    assert len(await journal(redis_client)) == len(rows)

    seq = (await admin.RetireTable(retire)).retired_seq
    assert (await admin.RetireTable(retire)).retired_seq == seq  # a retry
    listed = await admin.ListTables(pb.ListTablesRequest())
    assert [t.table_id for t in listed.tables] == []
    assert (await admin.GetLinkGroup(pb.GetLinkGroupRequest(link_group_id="floor"))).table_ids == []
    await admin.LeaveMaintenance(enter(reason="done"))
    await expect_refusal(
        tables.Lockout(lockout("t1", 2, [1])), grpc.StatusCode.NOT_FOUND, "t1 was retired"
    )
    await expect_refusal(
        admin.RegisterTable(
            pb.RegisterTableRequest(table=progressive_table("t1", "floor", "cs-main"))
        ),
        grpc.StatusCode.ALREADY_EXISTS,
        "a table id is never registered again",
    )
    await audited(controller)


async def test_an_adjustment_of_a_later_schema_version_is_refused_by_name(
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    requested = await admin.RequestAdjustment(
        pb.RequestAdjustmentRequest(
            meter_id="cs-main", amount_cents=100, reason="short seed", reference="incident 9"
        )
    )
    group = keys.LinkGroupKeys("floor")
    raw = await redis_client.hget(group.adjustments, requested.adjustment_id)
    assert raw is not None
    record = json.loads(raw)
    record["v"] = codec.SCHEMA_VERSION + 1
    await redis_client.hset(group.adjustments, requested.adjustment_id, json.dumps(record))
    before = await snapshot(redis_client)
    review = pb.ReviewAdjustmentRequest(adjustment_id=requested.adjustment_id)
    await expect_refusal(
        operator(channels).ApproveAdjustment(review),
        grpc.StatusCode.UNAVAILABLE,
        f"the stored record of adjustment {requested.adjustment_id} has schema version",
    )
    assert await snapshot(redis_client) == before


async def test_the_controls_on_the_command_line(
    controller: ControllerServer,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    alice = [*address, *pki.client_args(*OPERATOR)]
    bob = [*address, *pki.client_args(*BOB)]

    async def ctl(*argv: str) -> tuple[int, str]:
        status = await asyncio.to_thread(jackpotctl, list(argv))
        out = capsys.readouterr()
        return status, out.out + out.err

    status, text = await ctl(
        *alice, "meters", "update", "cs-main", "--reset", "10500", "--reason", "x"
    )
    assert status == 1 and "changes only while link group floor is in maintenance" in text
    status, text = await ctl(
        *alice, "link-groups", "maintenance", "enter", "floor", "--reason", "rev 4"
    )
    assert status == 0 and "is in maintenance since journal #" in text and "(jackpot://" in text
    status, text = await ctl(
        *alice,
        "meters",
        "update",
        "cs-main",
        "--rate",
        "12.5",
        "--ceiling",
        "20000",
        "--reason",
        "rev 4",
    )
    assert status == 0 and "rate 12.5%" in text and "ceiling $20,000.00" in text
    await ctl(
        *alice,
        "meters",
        "create",
        "cs-b",
        "--link-group",
        "floor",
        "--game",
        "caribbean-stud",
        "--reset",
        "10000",
        "--rate",
        "15",
    )
    status, text = await ctl(
        *alice, "tables", "update", "t1", "--meter", "cs-b", "--seats", "6", "--reason", "move"
    )
    assert (
        status == 0 and "t1: caribbean-stud, 6 seats (floor); progressive B $1.00 -> cs-b" in text
    )
    status, text = await ctl(
        *alice,
        "meters",
        "retire",
        "cs-main",
        "--to",
        "cs-b",
        "--reason",
        "one meter",
        "--approval",
        "PGCB 118",
    )
    assert status == 0 and "$0.00 to cs-b" in text and "$10,000.00 back to the operator" in text
    status, text = await ctl(
        *alice,
        "meters",
        "adjust",
        "cs-b",
        "--amount",
        "-12.50",
        "--reason",
        "seed error",
        "--reference",
        "incident 77",
    )
    assert status == 0 and "requested" in text and "-$12.50" in text
    adjustment_id = text.split(":", 2)[0] + ":" + text.split(":", 2)[1]
    status, text = await ctl(*alice, "meters", "approve-adjustment", adjustment_id)
    assert status == 1 and "an adjustment needs two people" in text
    status, text = await ctl(*bob, "meters", "approve-adjustment", adjustment_id, "--note", "ok")
    assert status == 0 and "approved by jackpot://operator/bob" in text
    status, text = await ctl(*alice, "meters", "adjustments", "--status", "approved")
    assert adjustment_id in text
    status, text = await ctl(*alice, "tables", "retire", "t1", "--reason", "removed")
    assert status == 0 and "table t1 retired (journal #" in text
    status, text = await ctl(
        *alice, "link-groups", "maintenance", "leave", "floor", "--reason", "ok"
    )
    assert status == 0 and "link group floor is in play" in text
    meter = await floor.admin.GetMeter(pb.GetMeterRequest(meter_id="cs-b"))
    assert meter.amount_cents == 1_000_000 - 1_250
    await audited(controller)
