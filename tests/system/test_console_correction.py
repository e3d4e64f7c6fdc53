"""A correction from the dealer console, through a real terminal: the real ``table-agent
console`` in a tmux pane against a real controller and Redis. A flush keyed as a pair of
jacks is settled; the dealer fixes the card inside the dealer's window and asks for the
correction; the floor supervisor approves it at the controller; after the next open the
console refuses, and the controller refuses the table, the window being closed."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import SUPERVISOR
from tests.system.test_console import Pane, _console


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[Path]:
    """A tmux server's socket, the server killed after the test."""
    if shutil.which("tmux") is None:
        pytest.fail("the console test needs tmux (make bootstrap installs it)")
    socket = tmp_path / "tmux.sock"
    yield socket
    subprocess.run(
        ["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False
    )


async def _approve(controller: ControllerProcess, correction_id: str) -> pb.Correction:
    assert controller.pki is not None
    channel = tls.aio_channel(controller.target, controller.pki.client(*SUPERVISOR))
    try:
        return await pb_grpc.AdminServiceStub(channel).ApproveCorrection(
            pb.ReviewCorrectionRequest(correction_id=correction_id, note="seen on camera"),
            timeout=10,
        )
    finally:
        await channel.close(None)


@pytest.mark.slow
def test_a_dealer_corrects_a_card_inside_the_window_and_a_supervisor_approves(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path, tmux_socket: Path
) -> None:
    _, controller = system
    pane = Pane(tmux_socket, _console(controller, tmp_path / "state"))
    pane.wait_for("type open for the next round")
    pane.type("fix 3 3C 5C 8C JC KC", then="refused: a correction from the console is of")
    pane.type("open", then="round 1 open: place your wagers")
    pane.type("wager 3 progressive", then="seat 3: Progressive Payout Wager $1.00")
    pane.type("lockout", then="NO MORE BETS - 1 wager(s) accepted, 1 progressive")
    pane.type("count 1", then="chip count 1: matches")
    pane.type("cards 3 3C 5C 8C JC JD", then="seat 3: 3C 5C 8C JC JD")
    pane.type("dealer 2D 3H 4S 7C 9S", then="dealer: 2D 3H 4S 7C 9S")
    pane.type("settle", then="round 1 settled")
    pane.type("fix 3 3C 5C 8C JC 2D", then="refused: card 2D is reported twice")
    pane.type("fix 3 3C 5C 8C JC KC", then="correction of round 1: seat 3 3C 5C 8C JC KC")
    screen = pane.type("correct KC keyed as JD", then="once approved")
    assert "seat 3: pay $50.00 once approved" in screen, screen
    line = next(x for x in screen.splitlines() if "rounds approve-correction" in x)
    correction_id = line.split()[-1]
    applied = asyncio.run(_approve(controller, correction_id))
    assert applied.status == "approved" and applied.from_table
    assert applied.requested_by == "jackpot://table/cs-1"
    assert [(s.seat, s.delta_cents) for s in applied.seats] == [(3, 5_000)]
    pane.type("open", then="round 2 open")
    pane.type("fix 3 3C 5C 8C JC KC", then="refused: fix is not possible now")
    pane.type("quit", then="CONSOLE EXITED 0")
