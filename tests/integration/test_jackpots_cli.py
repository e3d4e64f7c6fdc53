"""``jackpotctl jackpots``: the slip printed, the lifecycle driven, listings filtered and
written as a table, CSV or JSON."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from datetime import UTC, datetime

import pytest

from controller.ctl.jackpots import parse_when
from controller.ctl.main import main as jackpotctl
from controller.server import ControllerServer
from controller.testing import TestPKI
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FULL_HOUSE,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
    Floor,
    lockout,
    settle,
)


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
    assert "wager        progressive $1.00" in slip
    assert f"hand         royal flush: {ROYAL_SPADES}" in slip
    assert "meter        cs-main $" in slip and " -> $10,000.00" in slip
    assert " UTC" in slip.split("hit", 1)[1]

    assert await ctl(*cage, "jackpots", "paid", royal) == 1
    assert "awaits a supervisor's validation" in capsys.readouterr().err
    assert await ctl(*supervisor, "jackpots", "approve", royal, "--note", "verified") == 0
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
