"""The dealer console (``table-agent console``) played through a real terminal: the real
process in a tmux pane against a real controller and Redis, keys typed as a dealer types
them, the screen read as the dealer reads it.

A Caribbean Stud round with a royal flush on seat 2: the award line on screen (100% of the
meter, awaiting a supervisor's validation, with its jackpot id) is the controller's pending
jackpot, and the meter is back at its reset. Then a round locked out when the console dies:
the restarted console delivers its void from the outbox, and the meter gives the wagers back.

A dealer's bad night: a chip count that differs holds the round, ``settle`` is refused in
plain words naming the round for the floor supervisor, and goes through once the supervisor
confirmed it; a second held round the supervisor voids is refused and over; the controller
lost mid-settlement and back: the settlement goes through on its return. The screen never
crashes, and the console serves the agent's metrics meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI, free_port
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.console.cli import main as console_main
from tests.helpers import CARIBBEAN_RULES, SUPERVISOR
from tests.system.test_agent_offline import scrape

TABLE = "cs-1"
METER = "cs-main"
RESET_CENTS = 1_000_000  # $10,000.00, the example Rules Submission's reset
WIDTH, HEIGHT = 240, 60  # wide enough that no award line wraps
TABLE_AGENT = str(Path(sys.executable).with_name("table-agent"))


class Pane:
    """One tmux server (its own socket) with one window running ``command``."""

    def __init__(self, socket: Path, command: list[str]) -> None:
        self.socket = str(socket)
        # The shell line stays open after the console exits, so its exit code can be read.
        line = f"{shlex.join(command)}; echo CONSOLE EXITED $?; sleep 600"
        start = ("new-session", "-d", "-s", "console", "-x", str(WIDTH), "-y", str(HEIGHT), line)
        # A tmux server that dies while it starts ("server exited unexpectedly", seen rarely on
        # a loaded machine) is started again, at most three times.
        for _ in range(2):
            done = subprocess.run(
                ["tmux", "-S", self.socket, "-f", "/dev/null", *start],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
            if done.returncode == 0:
                return
        self._tmux(*start)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, f"tmux {args[0]}: exit {done.returncode}: {done.stderr}"
        return done.stdout

    def screen(self) -> str:
        """What the terminal shows now."""
        return self._tmux("capture-pane", "-p", "-t", "console")

    def wait_for(self, text: str, timeout_s: float = 30.0) -> str:
        """The screen once it shows ``text``; fail showing the screen otherwise."""
        deadline = time.monotonic() + timeout_s
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"the console never showed {text!r}; the screen:\n{screen}")
            time.sleep(0.1)

    def wait_for_meter(self, amount: str) -> str:
        """The screen once the meter's corner shows ``amount`` (it streams in)."""
        deadline = time.monotonic() + 30.0
        pattern = re.compile(rf"{METER} +{re.escape(amount)}")
        while not pattern.search(screen := self.screen()):
            if time.monotonic() > deadline:
                pytest.fail(f"the meter never showed {amount}; the screen:\n{screen}")
            time.sleep(0.1)
        return screen

    def type(self, line: str, then: str) -> str:
        """Type ``line`` and Enter, as a dealer does; the screen once it shows ``then``."""
        self._tmux("send-keys", "-t", "console", "-l", line)
        self._tmux("send-keys", "-t", "console", "Enter")
        return self.wait_for(then)

    def kill(self) -> None:
        """End the terminal and the console in it at once (the console gets SIGHUP)."""
        subprocess.run(
            ["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=30, check=False
        )


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[Path]:
    if shutil.which("tmux") is None:
        pytest.fail("the console test needs tmux (make bootstrap installs it)")
    socket = tmp_path / "tmux.sock"
    yield socket
    subprocess.run(
        ["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False
    )


async def _admin(controller: ControllerProcess, jackpot_id: str) -> tuple[pb.Meter, pb.Jackpot]:
    assert controller.pki is not None
    channel = tls.aio_channel(controller.target, controller.pki.client(*SUPERVISOR))
    try:
        admin = pb_grpc.AdminServiceStub(channel)
        meter = await admin.GetMeter(pb.GetMeterRequest(meter_id=METER), timeout=10)
        jackpot = (
            await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot_id), timeout=10)
            if jackpot_id
            else pb.Jackpot()
        )
        return meter, jackpot
    finally:
        await channel.close(None)


async def _resolve(controller: ControllerProcess, round_id: int, decision: int) -> None:
    """The floor supervisor's decision on a held round (``jackpotctl irregularities``)."""
    assert controller.pki is not None
    channel = tls.aio_channel(controller.target, controller.pki.client(*SUPERVISOR))
    try:
        await pb_grpc.AdminServiceStub(channel).ResolveIrregularity(
            pb.ResolveIrregularityRequest(
                table_id=TABLE,
                round_id=round_id,
                decision=pb.IrregularityDecision.ValueType(decision),
                note="recounted on camera",
            ),
            timeout=10,
        )
    finally:
        await channel.close(None)


def _console(
    controller: ControllerProcess, state: Path, *extra: str, table: str = TABLE
) -> list[str]:
    return [
        TABLE_AGENT,
        "console",
        "--table-id",
        table,
        "--controller",
        controller.target,
        *controller.client_args("table", table),
        "--state-dir",
        str(state),
        *extra,
    ]


@pytest.mark.slow
def test_a_dealer_plays_a_royal_flush_round_then_a_crash_loses_nothing(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path, tmux_socket: Path
) -> None:
    _, controller = system
    state = tmp_path / "state"
    pane = Pane(tmux_socket, _console(controller, state))
    screen = pane.wait_for("type open for the next round")
    assert "table cs-1 - Caribbean Stud Poker - 7 seats" in screen and "ONLINE" in screen
    pane.wait_for_meter("$10,000.00")  # the live meter, in its corner

    pane.type("open", then="round 1 open: place your wagers")
    pane.type("wager 2 progressive", then="seat 2: Progressive Payout Wager $1.00")
    pane.type("wager 2 bonus 250", then="refused: Bonus Wager: $250.00 is outside the table's")
    pane.type("wager 2 bonus 5", then="seat 2: Bonus Wager $5.00")
    pane.type("wager 5 progressive", then="seat 5: Progressive Payout Wager $1.00")
    pane.type("lockout", then="NO MORE BETS - 3 wager(s) accepted, 2 progressive")
    pane.wait_for_meter("$10,000.30")  # two contributions of 15 cents
    pane.type("count 2", then="chip count 2: matches the accepted progressive wagers")
    pane.type("cards 2 AS KS QS JS TS", then="seat 2: AS KS QS JS TS")
    pane.type("cards 5 AS 2D 3D 4D 5D", then="card AS is reported twice (seat 2 and seat 5)")
    pane.type("fold 5", then="seat 5 folded")
    pane.type("dealer 4H 6H 9D QC KD", then="dealer: 4H 6H 9D QC KD")
    screen = pane.type("settle", then="round 1 settled")

    award = re.search(
        r"table cs-1 round 1: seat 2 Progressive Payout Wager: royal flush wins 100% of meter = "
        r"\$10,000\.30 \(meter \$10,000\.30 -> \$10,000\.00 after the award and any reset; "
        r"jackpot (\S+) awaits a "
        r"supervisor's validation\)",
        screen,
    )
    assert award is not None, screen
    assert "seat 5 Progressive Payout Wager: forfeited (folded)" in screen
    meter, jackpot = asyncio.run(_admin(controller, award.group(1)))
    assert meter.amount_cents == RESET_CENTS
    assert (jackpot.status, jackpot.table_id, jackpot.round_id, jackpot.seat) == (
        "pending",
        TABLE,
        1,
        2,
    )
    assert jackpot.amount_cents == 1_000_030 and jackpot.cards == "AS KS QS JS TS"
    pane.wait_for_meter("$10,000.00")

    [record] = [json.loads(line) for line in (state / "cs-1.rounds.jsonl").read_text().splitlines()]
    assert record["chip_count"] == 2 and record["chip_count_matches"] is True
    assert (
        record["outcome"] == "settled" and record["paid_cents"] == 1_000_030 + 500_500
    )  # and 1,000 to 1 on $5

    # A round locked out when the console dies: its void comes from the outbox at restart.
    pane.type("open", then="round 2 open")
    pane.type("wager 3 progressive", then="seat 3: Progressive Payout Wager $1.00")
    pane.type("lockout", then="round 2: NO MORE BETS - 1 wager(s) accepted")
    pane.type("quit", then="quit is not possible now")
    assert asyncio.run(_admin(controller, ""))[0].amount_cents == RESET_CENTS + 15
    pane.kill()
    pane = Pane(tmux_socket, _console(controller, state))
    pane.wait_for("delivered 1 report(s) a restart left pending")
    assert asyncio.run(_admin(controller, ""))[0].amount_cents == RESET_CENTS
    pane.type("open", then="round 3 open")
    pane.type("quit", then="CONSOLE EXITED 0")


@pytest.mark.slow
def test_a_held_round_a_refused_settle_and_a_lost_controller_never_crash_the_screen(
    system: tuple[RedisServer, ControllerProcess], tmp_path: Path, tmux_socket: Path
) -> None:
    _, controller = system
    metrics = free_port()
    extra = ("--metrics-port", str(metrics), "--offline-after", "2", "--retry-for", "120")
    pane = Pane(tmux_socket, _console(controller, tmp_path / "state", *extra))
    pane.wait_for("type open for the next round")

    # A chip count that differs: the round is held, settle is refused, the screen stays.
    pane.type("open", then="round 1 open")
    pane.type("wager 2 progressive", then="seat 2: Progressive Payout Wager $1.00")
    pane.type("lockout", then="round 1: NO MORE BETS")
    pane.type("count 3", then="call the floor supervisor to confirm or void round 1")
    pane.type("cards 2 AS KS QS JS TS", then="seat 2: AS KS QS JS TS")
    pane.type("dealer 4H 6H 9D QC KD", then="dealer: 4H 6H 9D QC KD")
    screen = pane.type("settle", then="REFUSED: round 1 is held")
    assert "call the floor supervisor to confirm or void round 1, then type settle again" in (
        screen.replace("\n", "")
    )
    assert "Unhandled exception" not in screen and "round 1: LOCKED" in screen
    asyncio.run(_resolve(controller, 1, pb.IRREGULARITY_DECISION_CONFIRM))
    pane.type("settle", then="round 1 settled")

    # A second held round, voided by the supervisor: its settle is refused, the round is over.
    pane.type("open", then="round 2 open")
    pane.type("wager 3 progressive", then="seat 3: Progressive Payout Wager $1.00")
    pane.type("lockout", then="round 2: NO MORE BETS")
    pane.type("count 0", then="call the floor supervisor to confirm or void round 2")
    pane.type("cards 3 2C 5D 8H JS KD", then="seat 3: 2C 5D 8H JS KD")
    pane.type("dealer 4H 6H 9D QC AD", then="dealer: 4H 6H 9D QC AD")
    asyncio.run(_resolve(controller, 2, pb.IRREGULARITY_DECISION_VOID))
    pane.type("settle", then="round 2 was voided by the floor supervisor")
    pane.wait_for("type open for the next round")

    # The controller lost mid-round, and back: the settlement goes through on its return.
    pane.type("open", then="round 3 open")
    pane.type("wager 4 progressive", then="seat 4: Progressive Payout Wager $1.00")
    pane.type("lockout", then="round 3: NO MORE BETS")
    pane.type("cards 4 2C 5D 8H JS KD", then="seat 4: 2C 5D 8H JS KD")
    pane.type("dealer 4H 6H 9D QC AD", then="dealer: 4H 6H 9D QC AD")
    controller.stop()
    screen = pane.type("settle", then="sending the settle to the controller...")
    screen = pane.wait_for("PROGRESSIVE OFFLINE")
    samples = scrape(metrics)  # the console's metrics: the table offline, a report in flight
    assert samples['jackpot_agent_progressive_offline{table="cs-1"}'] == 1
    assert samples['jackpot_agent_outbox_depth{table="cs-1"}'] == 1
    controller.start()
    screen = pane.wait_for("round 3 settled", timeout_s=60)
    assert "Unhandled exception" not in screen
    pane.wait_for(" ONLINE")  # the header again
    assert scrape(metrics)['jackpot_agent_outbox_depth{table="cs-1"}'] == 0
    pane.type("quit", then="CONSOLE EXITED 0")


@pytest.mark.slow
def test_a_texas_holdem_bonus_rest_of_round_void_entered_at_the_console(
    tmp_path: Path, pki: TestPKI, tmux_socket: Path
) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        rules = CARIBBEAN_RULES.with_name("texas-holdem-bonus.toml")
        with ControllerProcess(redis.url, tmp_path / "controller.log", pki=pki, rules=rules) as c:
            pane = Pane(tmux_socket, _console(c, tmp_path / "state", table="thb-1"))
            pane.wait_for("type open for the next round")
            pane.type("open", then="round 1 open")
            pane.type("wager 2 bonus 5", then="seat 2: Bonus Wager $5.00")
            pane.type("lockout", then="round 1: NO MORE BETS")
            pane.type("irregularity dealer_card_exposed", then="rest of the round void")
            pane.type("cards 2 AS KS", then="seat 2: AS KS")
            pane.type("dealer 2C 7D", then="dealer: 2C 7D")
            screen = pane.type("settle", then="round 1 settled")
            assert "§ 647a.13(d)" in screen and "Unhandled exception" not in screen
            pane.type("quit", then="CONSOLE EXITED 0")
            settles = [
                line
                for line in (tmp_path / "state" / "thb-1.outbox.jsonl").read_text().splitlines()
                if '"settle"' in line
            ]
            assert settles and "647a.13(d)" in settles[0], settles


@pytest.mark.slow
def test_the_dealer_enters_the_base_games_winnings_with_a_texas_holdem_bonus_settle(
    tmp_path: Path, pki: TestPKI, tmux_socket: Path
) -> None:
    """The Ante, Flop, Turn and River Wagers' winnings typed with ``settle`` reach the
    controller, whose payout limit per hand (§ 647a.12(c), $50,000 here) cuts the bonus; a
    bad entry is refused in words, sends nothing, and the round stays to settle."""
    with RedisServer(tmp_path / "redis") as redis:
        rules = CARIBBEAN_RULES.with_name("texas-holdem-bonus.toml")
        with ControllerProcess(redis.url, tmp_path / "controller.log", pki=pki, rules=rules) as c:
            pane = Pane(tmux_socket, _console(c, tmp_path / "state", table="thb-1"))
            pane.wait_for("type open for the next round")
            pane.type("open", then="round 1 open")
            pane.type("wager 2 bonus 5", then="seat 2: Bonus Wager $5.00")
            pane.type("lockout", then="round 1: NO MORE BETS")
            pane.type("cards 2 AS KS", then="seat 2: AS KS")
            pane.type("dealer 2C 7D", then="settle [SEAT WON ...]")
            pane.type("settle 2 lots", then="refused: seat 2's winnings: 'lots' is not an amount")
            pane.type("settle 3 10", then="refused: seat 3 holds no wager in round 1")
            screen = pane.type("settle 2 49,950", then="round 1 settled")
            assert "Ante, Flop, Turn and River Wagers won seat 2 $49,950.00" in screen
            # 25 to 1 on $5 wins $125: $50 of room is left under the limit, and the stake back.
            assert (
                "seat 2 Bonus Wager: ace-king (same suit) wins 25 to 1 = $55.00 (limited from "
                "$130.00 by the payout limit)" in screen
            ), screen
            assert "Unhandled exception" not in screen
            pane.type("quit", then="CONSOLE EXITED 0")
            records = [
                json.loads(line)
                for line in (tmp_path / "state" / "thb-1.outbox.jsonl").read_text().splitlines()
            ]
            (settle,) = [
                r["report"]["payload"]
                for r in records
                if "report" in r and r["report"]["phase"] == "settle"
            ]  # the refused entries sent nothing
            assert settle["base_game_win_cents"] == {"2": 4_995_000}
            [record] = [
                json.loads(line)
                for line in (tmp_path / "state" / "thb-1.rounds.jsonl").read_text().splitlines()
            ]
            assert record["base_game_win_cents"] == {"2": 4_995_000}
            assert [(r["amount_cents"], r["limited_from_cents"]) for r in record["results"]] == [
                (5_500, 13_000)
            ]


def test_the_console_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--table-id", TABLE, "--controller", "127.0.0.1:1", "--insecure"]
    assert console_main([*argv, "--state-dir", str(tmp_path)]) == 2
    assert "the dealer console runs in a terminal" in capsys.readouterr().err
