"""``jackpotctl``: audit verify against a real Redis, and admin commands against a controller."""

from __future__ import annotations

import asyncio

import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from tests.helpers import (
    OPERATOR,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
    Floor,
    journal,
    lockout,
    settle,
    table_client,
)


async def play(tables: pb_grpc.TableServiceAsyncStub) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: STRAIGHT_FLUSH_HEARTS}))


async def ctl(*argv: str) -> int:
    return await asyncio.to_thread(jackpotctl, list(argv))


async def test_audit_ok_then_tampering_is_found(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await play(tables)
    assert await ctl("audit", "verify", "--redis", redis_url) == 0
    assert "audit: OK (1 link groups, 1 meters," in capsys.readouterr().out

    group = keys.LinkGroupKeys("floor")
    await redis_client.hincrby(group.meter("cs-main"), "value_microcents", 1_000_000)
    await redis_client.hincrby(group.meter("cs-main"), "reserve_microcents", -7)
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    out = capsys.readouterr().out
    assert "floor/cs-main: meter is $10,000.01 but the journal sums to $10,000.00" in out
    assert "floor/cs-main: reserve is -7 microcents" in out


async def test_audit_finds_a_gap_in_the_journal(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_url: str,
    redis_client: Redis,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await play(tables)
    entry_id = (await journal(redis_client))[3][0]
    await redis_client.xdel(keys.LinkGroupKeys("floor").journal, entry_id)
    assert await ctl("audit", "verify", "--redis", redis_url) == 1
    assert "floor: journal entry #4 is missing: the journal goes from #3" in capsys.readouterr().out


async def test_admin_commands(
    controller: ControllerServer,
    redis_url: str,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    target = [*address, *pki.client_args(*OPERATOR)]
    supervisor = [*address, *pki.client_args(*SUPERVISOR)]
    assert await ctl(*target, "link-groups", "create", "floor") == 0
    assert (
        await ctl(
            *target,
            "meters",
            "create",
            "cs-main",
            "--link-group",
            "floor",
            "--game",
            "caribbean-stud",
            "--reset",
            "9999.99",
            "--rate",
            "15",
        )
        == 1
    )
    assert "below the $10,000.00 minimum" in capsys.readouterr().err
    assert (
        await ctl(
            *target,
            "meters",
            "create",
            "cs-main",
            "--link-group",
            "floor",
            "--game",
            "caribbean-stud",
            "--reset",
            "$10,000",
            "--rate",
            "15",
            "--reserve-rate",
            "2.5",
        )
        == 0
    )
    assert (
        await ctl(
            *target,
            "tables",
            "register",
            "t1",
            "--game",
            "caribbean-stud",
            "--paytable",
            "B",
            "--seats",
            "7",
            "--link-group",
            "floor",
            "--meter",
            "cs-main",
        )
        == 0
    )
    assert await ctl(*target, "meters", "list") == 0
    out = capsys.readouterr().out
    assert "cs-main (floor, caribbean-stud): $10,000.00, reserve $0.00" in out
    assert "reserve rate 2.5%" in out
    assert await ctl(*target, "jackpots", "list") == 0
    assert "no jackpots" in capsys.readouterr().out
    assert await ctl(*supervisor, "jackpots", "approve", "floor:1", "--amount", "1") == 1
    assert "NOT_FOUND: jackpot floor:1 does not exist" in capsys.readouterr().err
    # An operator does not validate jackpots: that is a supervisor's certificate's role.
    assert await ctl(*target, "jackpots", "approve", "floor:1", "--amount", "1") == 1
    assert "PERMISSION_DENIED: jackpot://operator/ops may not call ApproveJackpot" in (
        capsys.readouterr().err
    )
    assert await ctl(*target, "--json", "tables", "list") == 0
    listed = capsys.readouterr().out
    assert '"paytable": "B"' in listed and "validation_threshold_cents" not in listed
    register = ("tables", "register", "t2", "--game", "caribbean-stud", "--paytable", "B")
    where = ("--seats", "7", "--link-group", "floor", "--meter", "cs-main")
    assert await ctl(*target, *register, *where, "--validation-threshold", "12x") == 1
    assert "'12x' is not an amount of dollars" in capsys.readouterr().err
    assert await ctl(*target, *register, *where, "--validation-threshold", "$1,200") == 0
    capsys.readouterr()
    assert await ctl(*target, "--json", "tables", "list") == 0
    assert '"validation_threshold_cents": "120000"' in capsys.readouterr().out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        jackpotctl(["meters", "create"])
    assert exited.value.code == 2


async def test_a_second_supervisor_is_told_the_jackpot_was_reviewed(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await play(tables)
    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    royal = pending.jackpots[-1].jackpot_id
    amount = format_cents(pending.jackpots[-1].amount_cents)
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    first = [*address, *pki.client_args("supervisor", "day-shift")]
    second = [*address, *pki.client_args("supervisor", "night-shift")]
    approve = ("jackpots", "approve", royal, "--amount", amount)
    assert await ctl(*first, *approve, "--note", "verified") == 0
    assert "reviewed by jackpot://supervisor/day-shift" in capsys.readouterr().out
    assert await ctl(*first, *approve) == 0  # the same review again
    assert await ctl(*second, "jackpots", "reject", royal, "--note", "misread") == 1
    assert (
        f"FAILED_PRECONDITION: jackpot {royal} was already approved by "
        "jackpot://supervisor/day-shift; a jackpot is reviewed once"
    ) in capsys.readouterr().err


async def test_audit_is_ok_while_tables_play(
    controller: ControllerServer, admin: pb_grpc.AdminServiceAsyncStub, pki: TestPKI
) -> None:
    table_ids = [f"t{n}" for n in range(1, 7)]
    await Floor(admin).create(tables=table_ids, reserve_rate="5")
    clients = [table_client(controller.port, pki, t) for t in table_ids]
    play = asyncio.gather(
        *(
            TableSimulator(
                TableAgent(t, c), SimulationConfig(void_percent=10), say=lambda _: None
            ).run(60)
            for t, c in zip(table_ids, clients, strict=True)
        )
    )
    audits = 0
    while not play.done():
        report = await verify(controller.store)
        assert report.ok, report.differences
        audits += 1
    await play
    for client in clients:
        await client.close()
    assert audits > 1
    assert (await verify(controller.store)).ok
