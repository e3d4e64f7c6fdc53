"""``jackpotctl jackpots``: the slip printed, the lifecycle driven, listings filtered and
written as a table, CSV or JSON."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.jackpots import parse_when
from controller.ctl.main import main as jackpotctl
from controller.runtime.server import ControllerServer
from controller.testing import TestPKI
from jackpot.money import format_cents
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
    Floor,
    expect_refusal,
    lockout,
    settle,
    snapshot,
)

JACKPOTCTL = str(Path(sys.executable).with_name("jackpotctl"))


async def ctl(*argv: str) -> int:
    return await asyncio.to_thread(jackpotctl, list(argv))


async def test_a_jackpot_from_hit_to_paid_on_the_command_line(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    settled = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 6: STRAIGHT_FLUSH_HEARTS, 3: FULL_HOUSE})
    )
    sf, royal = (r.jackpot_id for r in settled.results if r.jackpot_id)
    royal_cents = next(r.amount_cents for r in settled.results if r.jackpot_id == royal)
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    supervisor = [*address, *pki.client_args(*SUPERVISOR)]
    cage = [*address, *pki.client_args("cashier", "cage-1")]
    auditor = [*address, *pki.client_args("auditor", "lab")]

    assert await ctl(*cage, "jackpots", "show", royal) == 0
    slip = capsys.readouterr().out
    assert f"HAND-PAY SLIP - jackpot {royal} (pending)" in slip
    assert "table        t1, seat 2, round 1" in slip
    assert "wager        Progressive Payout Wager $1.00" in slip  # as the console names it
    assert f"hand         royal flush: {ROYAL_SPADES}" in slip
    assert "meter        cs-main $" in slip and " -> $10,000.00" in slip
    assert " UTC" in slip.split("hit", 1)[1]

    assert await ctl(*cage, "jackpots", "paid", royal) == 1
    assert "awaits a supervisor's validation" in capsys.readouterr().err
    approve = (*supervisor, "jackpots", "approve", royal, "--note", "verified")
    assert await ctl(*approve, "--amount", format_cents(royal_cents)) == 0
    assert "approved" in capsys.readouterr().out
    assert await ctl(*cage, "jackpots", "paid", royal, "--note", "receipt 1187") == 0
    assert "paid by jackpot://cashier/cage-1" in capsys.readouterr().out
    with pytest.raises(SystemExit) as usage:  # a rejection states its reason
        jackpotctl([*supervisor, "jackpots", "reject", sf])
    assert usage.value.code == 2
    capsys.readouterr()
    assert await ctl(*supervisor, "jackpots", "reject", sf, "--note", "cards misread") == 1
    assert "a later hit on meter cs-main" in capsys.readouterr().err

    assert await ctl(*auditor, "jackpots", "show", royal) == 0
    slip = capsys.readouterr().out
    assert "approved     " in slip and "by jackpot://supervisor/floor-supervisor" in slip
    assert ': "verified"' in slip and "by jackpot://cashier/cage-1" in slip
    assert ': "receipt 1187"' in slip

    assert await ctl(*auditor, "jackpots", "list") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [
        "JACKPOT", "STATUS", "HIT", "(UTC)", "TABLE", "ROUND", "SEAT", "HAND", "AMOUNT"
    ]  # fmt: skip
    assert [line.split()[:2] for line in table[1:]] == [[sf, "pending"], [royal, "paid"]]

    assert await ctl(*auditor, "jackpots", "list", "--status", "paid", "--format", "csv") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["jackpot_id"], r["cards"], r["paid_by"]) for r in rows] == [
        (royal, ROYAL_SPADES, "jackpot://cashier/cage-1")
    ]
    assert int(rows[0]["amount_cents"]) == royal_cents and int(rows[0]["paid_at_ms"]) > 0

    assert await ctl(*auditor, "jackpots", "list", "--table", "t1", "--format", "json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(j["jackpot_id"], j["status"]) for j in listed] == [(sf, "pending"), (royal, "paid")]
    hit_at = int(listed[0]["hit_at_ms"])
    day = format_time(hit_at)[:10]
    assert await ctl(*auditor, "jackpots", "list", "--from", day, "--to", day) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert await ctl(*auditor, "jackpots", "list", "--to", day, "--status", "rejected") == 0
    assert capsys.readouterr().out.strip() == "no rejected jackpots"
    assert await ctl(*auditor, "jackpots", "list", "--table", "t9") == 0
    assert capsys.readouterr().out.strip() == "no jackpots"
    assert await ctl(*auditor, "jackpots", "list", "--from", "yesterday") == 2
    assert "'yesterday' is not a date or time" in capsys.readouterr().err


def test_dates_and_times_in_utc_unless_they_say_otherwise() -> None:
    midnight = int(datetime(2025, 3, 1, tzinfo=UTC).timestamp() * 1000)
    assert parse_when("2025-03-01") == midnight
    assert parse_when("2025-03-01", end_of_day=True) == midnight + 86_400_000
    assert parse_when("2025-03-01T18:30") == midnight + (18 * 60 + 30) * 60_000
    assert parse_when("2025-03-01T18:30-05:00") == midnight + (23 * 60 + 30) * 60_000
    assert format_time(midnight + 5_000) == "2025-03-01 00:00:05 UTC"
    assert format_time(0) == "-"


async def _jackpotctl_process(*argv: str) -> tuple[int, str, str]:
    """The real ``jackpotctl`` console script in its own process (the in-process controller
    keeps serving meanwhile): its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        JACKPOTCTL, *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_an_approval_names_the_amount_and_another_is_refused_changing_nothing(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    redis_client: Redis,
) -> None:
    """``jackpots approve`` requires ``--amount`` (dollars, as the slip prints it), as the
    floor view has the amount typed back; the controller checks it (ApproveJackpot's
    ``confirmed_amount_cents``): another amount, or one that is no amount, changes nothing."""
    await tables.Lockout(lockout("t1", 1, [2]))
    settled = await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES}))
    (hit,) = [r for r in settled.results if r.jackpot_id]
    supervisor = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args(*SUPERVISOR)]
    approve = [*supervisor, "jackpots", "approve", hit.jackpot_id]
    before = await snapshot(redis_client)

    code, _, err = await _jackpotctl_process(*approve)
    assert code == 2 and "the following arguments are required: --amount" in err
    code, _, err = await _jackpotctl_process(*approve, "--amount", "10016.05")
    assert code == 1
    assert err.strip() == (
        f"jackpotctl: FAILED_PRECONDITION: jackpot {hit.jackpot_id} is "
        f"{format_cents(hit.amount_cents)}, not the $10,016.05 confirmed: check its hand-pay "
        "slip (jackpotctl jackpots show) and give its amount"
    )
    code, _, err = await _jackpotctl_process(*approve, "--amount", "ten thousand")
    assert code == 1 and "'ten thousand' is not an amount of dollars" in err
    # The gRPC path itself, for any client: a wrong amount, an amount out of range.
    wrong = pb.ReviewJackpotRequest(
        jackpot_id=hit.jackpot_id, confirmed_amount_cents=hit.amount_cents + 1
    )
    await expect_refusal(admin.ApproveJackpot(wrong), grpc.StatusCode.FAILED_PRECONDITION, "not")
    negative = pb.ReviewJackpotRequest(jackpot_id=hit.jackpot_id, confirmed_amount_cents=-1)
    await expect_refusal(
        admin.ApproveJackpot(negative), grpc.StatusCode.INVALID_ARGUMENT, "confirmed_amount_cents"
    )
    assert await snapshot(redis_client) == before  # nothing changed, nothing journaled

    dollars = format_cents(hit.amount_cents).removeprefix("$").replace(",", "")  # 10000.30
    code, out, err = await _jackpotctl_process(*approve, "--amount", dollars)
    assert code == 0, err
    assert f"{hit.jackpot_id}: approved" in out
    approved = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hit.jackpot_id))
    assert approved.status == "approved"
