"""``jackpotctl jackpots`` under a payout compliance policy: the slip says what the hand-pay
needs, ``paid`` exits non-zero naming what is missing, ``witness`` records the second person,
and the listing shows the tax-form reference and the witness (docs/payout-compliance.md)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from controller.ctl.main import main as jackpotctl
from controller.domain.payout_compliance import OKLAHOMA, PRESETS
from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import TestPKI
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import FULL_HOUSE, ROYAL_SPADES, SUPERVISOR, Floor, lockout, settle


@pytest.fixture
def server_config(server_config: ServerConfig) -> ServerConfig:
    return replace(server_config, payout_compliance=PRESETS[OKLAHOMA])


async def ctl(*argv: str) -> int:
    return await asyncio.to_thread(jackpotctl, list(argv))


async def test_witness_and_paid_on_the_command_line(
    controller: ControllerServer,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    settled = await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: FULL_HOUSE}))
    won = next(r for r in settled.results if r.jackpot_id)
    royal, amount = won.jackpot_id, format_cents(won.amount_cents)
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    supervisor = [*address, *pki.client_args(*SUPERVISOR)]
    night = [*address, *pki.client_args("supervisor", "night-shift")]
    cage = [*address, *pki.client_args("cashier", "cage-1")]
    auditor = [*address, *pki.client_args("auditor", "lab")]

    assert await ctl(*cage, "jackpots", "show", royal) == 0
    slip = capsys.readouterr().out
    assert "policy       oklahoma" in slip
    assert "W-2G required: yes ($" in slip and "300x the $1.00 wager, not overridable)" in slip
    assert "witness required: yes ($" in slip and ">= $1,200.00)" in slip

    assert await ctl(*supervisor, "jackpots", "approve", royal, "--amount", amount) == 0
    capsys.readouterr()
    assert await ctl(*cage, "jackpots", "paid", royal, "--note", "receipt 9") != 0
    err = capsys.readouterr().err
    assert "missing the W-2G tax-form reference" in err and "a witness" in err
    assert await ctl(*cage, "jackpots", "paid", royal, "--tax-form-override", "filed") != 0
    assert "not overridable" in capsys.readouterr().err
    assert await ctl(*auditor, "jackpots", "witness", royal) != 0
    assert "may not call WitnessJackpotPayment" in capsys.readouterr().err

    assert await ctl(*night, "jackpots", "witness", royal, "--note", "at the cage") == 0
    assert "witnessed by jackpot://supervisor/night-shift" in capsys.readouterr().out
    assert (
        await ctl(*cage, "jackpots", "paid", royal, "--note", "r 9", "--tax-form-ref", "W2G-77")
        == 0
    )
    assert "W-2G W2G-77" in capsys.readouterr().out

    assert await ctl(*auditor, "jackpots", "show", royal) == 0
    slip = capsys.readouterr().out
    assert "tax form     reference W2G-77" in slip
    assert "witnessed    " in slip and "by jackpot://supervisor/night-shift" in slip
    assert ': "at the cage"' in slip
    assert await ctl(*auditor, "jackpots", "list") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[-2:] == ["W-2G", "WITNESS"]
    assert table[1].split()[-2:] == ["W2G-77", "night-shift"]
