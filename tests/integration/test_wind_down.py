"""Ending a link over real gRPC and Redis (docs/staged-changes.md, "Ending a link").

A wound-down meter takes no contributions (its tables still accept the progressive wager,
and its paytable still pays it), keeps its amount until it is won, or moves it to another
meter by retirement under an approval reference; every step is journaled, repeatable, and
refused precisely when it does not apply. Then the command line of staged changes.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.domain.reports import change_report
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    OPERATOR,
    RESET_CENTS,
    ROYAL_SPADES,
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
WIND = pb.WindDownMeterRequest(meter_id="cs-main", reason="the link ends")


def maintenance(reason: str = "end the link") -> pb.MaintenanceRequest:
    return pb.MaintenanceRequest(link_group_id="floor", reason=reason)


async def test_a_wound_down_meter_takes_no_contributions_and_stays_until_won(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))  # $10,000.30
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.WindDownMeter(WIND), FAILED, "changes only while link group floor is in maintenance"
    )
    await expect_refusal(
        admin.WindDownMeter(pb.WindDownMeterRequest(meter_id="cs-main")), INVALID, "reason"
    )
    assert await snapshot(redis_client) == before
    await admin.EnterMaintenance(maintenance())
    meter = await admin.WindDownMeter(WIND)
    assert meter.wound_down_seq > 0 and meter.rate_of_progression_percent == "0"
    assert meter.amount_cents == RESET_CENTS + 30
    assert await admin.WindDownMeter(WIND) == meter  # a repeat: the same, nothing more
    await expect_refusal(
        admin.UpdateMeter(pb.UpdateMeterRequest(meter_id="cs-main", reset_cents=1, reason="x")),
        FAILED,
        f"meter cs-main is winding down (journal #{meter.wound_down_seq})",
    )
    await admin.LeaveMaintenance(maintenance("done"))
    await expect_refusal(
        admin.UpdateMeter(
            pb.UpdateMeterRequest(
                meter_id="cs-main",
                reset_cents=RESET_CENTS + 1,
                reason="x",
                at=pb.METER_CHANGE_AT_NEXT_RESET,
            )
        ),
        FAILED,
        "is winding down",
    )
    # the wagers are still accepted; they add nothing to the meter
    answer = await tables.Lockout(lockout("t1", 2, [1, 2, 3]))
    assert len(answer.accepted) == 3
    assert (await floor.meter()).amount_cents == RESET_CENTS + 30
    settled = await tables.Settle(settle("t1", 2, {1: ROYAL_SPADES}, folded=[2, 3]))
    (won,) = [result for result in settled.results if result.seat == 1]
    assert won.amount_cents == RESET_CENTS + 30  # the whole meter is won
    rows = [fields for _, fields in await journal(redis_client)]
    (wound,) = [e for e in rows if e["type"] == "meter_wound_down"]
    assert (wound["old_rate_ppm"], wound["rate_ppm"], wound["reason"]) == (
        "150000",
        "0",
        "the link ends",
    )
    contributions = [e for e in rows if e["type"] == "contribution" and e["round"] == "2"]
    assert [(e["d_meter"], e["d_reserve"]) for e in contributions] == [("0", "0")] * 3
    changes = change_report([e async for e in controller.store.journal.entries("floor")])
    (reported,) = [c for c in changes if c.type == "meter_wound_down"]  # the change report
    assert reported.meter_id == "cs-main" and reported.fields["old_rate_ppm"] == "150000"
    report = await verify(controller.store)
    assert report.ok, report.differences


async def test_a_wound_down_meter_moves_to_another_under_an_approval(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4]))  # $10,000.60
    await tables.Settle(settle("t1", 1, {}, folded=[1, 2, 3, 4]))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-b",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="15",
        )
    )
    await admin.UpdateMeter(
        pb.UpdateMeterRequest(
            meter_id="cs-main",
            reset_cents=RESET_CENTS + 10,
            reason="x",
            at=pb.METER_CHANGE_AT_NEXT_HIT,
        )
    )
    await admin.EnterMaintenance(maintenance())
    await expect_refusal(admin.WindDownMeter(WIND), FAILED, "has a change staged for its next hit")
    await admin.CancelStagedMeterChange(
        pb.CancelStagedMeterChangeRequest(meter_id="cs-main", reason="the link ends instead")
    )
    await admin.WindDownMeter(WIND)
    await admin.UpdateTable(
        pb.UpdateTableRequest(
            table=progressive_table("t1", "floor", "cs-b"), reason="feeds the new meter"
        )
    )
    retired = await admin.RetireMeter(
        pb.RetireMeterRequest(
            meter_id="cs-main", to_meter_id="cs-b", reason="link ended", approval="PGCB 2026-7"
        )
    )
    assert retired.transferred_microcents == 60 * 1_000_000
    assert (await admin.GetMeter(pb.GetMeterRequest(meter_id="cs-b"))).amount_cents == (
        RESET_CENTS + 60
    )
    report = await verify(controller.store)
    assert report.ok, report.differences


async def test_a_must_hit_by_meter_is_not_wound_down(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-mystery",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="15",
            kind=pb.METER_KIND_MUST_HIT_BY,
            must_hit_by_cents=RESET_CENTS + 1_000,
        )
    )
    await admin.EnterMaintenance(maintenance())
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.WindDownMeter(pb.WindDownMeterRequest(meter_id="cs-mystery", reason="end")),
        INVALID,
        "without contributions it would never reach its hit point; retire it",
    )
    await expect_refusal(
        admin.WindDownMeter(pb.WindDownMeterRequest(meter_id="nope", reason="end")),
        grpc.StatusCode.NOT_FOUND,
        "nope",
    )
    assert await snapshot(redis_client) == before


async def test_staged_changes_and_the_wind_down_on_the_command_line(
    controller: ControllerServer,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    alice = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args(*OPERATOR)]

    async def ctl(*argv: str) -> tuple[int, str]:
        status = await asyncio.to_thread(jackpotctl, [*alice, *argv])
        out = capsys.readouterr()
        return status, out.out + out.err

    status, text = await ctl(
        "meters", "update", "cs-main", "--reset", "10500", "--at", "next-reset", "--reason", "NZ"
    )
    assert status == 0 and "staged for the next reset (journal #" in text, text
    assert "reset $10,500.00, rate 15%" in text
    status, text = await ctl("meters", "list")
    assert status == 0 and "cs-main" in text and "staged for the next reset" in text
    status, text = await ctl("meters", "update", "cs-main", "--reset", "10600", "--reason", "x")
    assert status == 1 and "has a change staged for its next hit" in text
    status, text = await ctl("meters", "cancel-staged", "cs-main", "--reason", "withdrawn")
    assert status == 0 and "meter cs-main: no change staged" in text
    status, text = await ctl("meters", "cancel-staged", "cs-main", "--reason", "again?")
    assert status == 1 and "has no staged change to cancel" in text
    await ctl("link-groups", "maintenance", "enter", "floor", "--reason", "end")
    status, text = await ctl("meters", "wind-down", "cs-main", "--reason", "link ends")
    assert status == 0 and "no contributions from now on; it stays at $10,000.00" in text
    status, text = await ctl("meters", "list")
    assert "winding down since journal #" in text
