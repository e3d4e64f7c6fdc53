"""Every refusal of every command the dealer console sends, worded for the dealer
(:mod:`table_agent.console.refusals`): none escapes the desk, each says what to do next, and
the round is where the controller has it - retryable after a refusal, over once the floor
supervisor voided it. A held round (a chip count that differed) is retried after the
supervisor's decision. Seeded irregularities are entered, the Texas Hold 'Em Bonus rest of
the round void included (§ 647a.13)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest

from jackpot.kinds import IrregularityKind
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SettleResult,
    VoidResult,
)
from table_agent.client import ControllerClient, ControllerRefused, ControllerUnreachable
from table_agent.console.desk import Desk
from table_agent.console.record import RoundRecord
from table_agent.console.session import DealerSession, Phase, RoundSheet
from table_agent.games import game_procedure
from table_agent.link import Link, ProgressiveOffline
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import RoundState, RoundStateError, TableAgent
from table_agent.wagers import PlacedWager, TableLayout
from tests.unit.test_console_entry import CS_TABLE
from tests.unit.test_console_session import THB_TABLE, accepted, phase_of

METERS = (MeterValue("m", 1_000_000_000_000),)
HELD = (
    "round cs-1/2 is held: the dealer's chip count differed from the Progressive Payout Wagers "
    "accepted (§ 639a.8(b)); call a supervisor to confirm or void the round before it is settled"
)
VOIDED = "round cs-1/2 was voided; its wagers were returned and it cannot be settled"

REFUSALS: list[Exception] = [
    *(
        ControllerRefused(code, f"no ({code.name.lower()})")
        for code in grpc.StatusCode
        if code is not grpc.StatusCode.OK
    ),
    ControllerUnreachable("settle cs-1/2: controller unreachable for 300s (UNAVAILABLE: x)"),
    ProgressiveOffline("cs-1", 42),
    RoundStateError("round 2 of table cs-1 is open; this report needs it locked"),
    RuntimeError("a bug"),
]
"""Every way a report can fail: each status the controller can refuse with, no answer, the
table offline, a round out of step, anything else."""

NEXT_STEPS = ("type ", "call the ", "quit and start", "lock out once", "the wagers stay")
"""How a worded refusal tells the dealer what to do next."""

COMMANDS = {
    "lockout": "lockout",
    "count 1": "report_chip_count",
    "settle": "settle",
    "void misdeal at seat 2": "void_round",
    "irregularity misdeal": "report_irregularity",
}
"""Each command that goes to the controller, and the client call it makes."""


class Controller(ControllerClient):
    """Answers like a controller, except that ``fail[call]`` raises that exception once."""

    def __init__(self) -> None:  # no channel
        self.link = Link()
        self.fail: dict[str, Exception] = {}
        self.chips_accepted = 1
        self.irregularity_effect = "void"

    def _maybe_fail(self, call: str) -> None:
        error = self.fail.pop(call, None)
        if error is not None:
            raise error

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[PlacedWager]
    ) -> LockoutResult:
        self._maybe_fail("lockout")
        return LockoutResult(table_id, round_id, accepted(tuple(wagers)), METERS)

    async def report_chip_count(self, table_id: str, round_id: int, chips: int) -> ChipCountResult:
        self._maybe_fail("report_chip_count")
        return ChipCountResult(table_id, round_id, chips, self.chips_accepted, chips == 1)

    async def settle(self, table_id: str, round_id: int, report: SettleReport) -> SettleResult:
        self._maybe_fail("settle")
        self.settled = report
        return SettleResult(table_id, round_id, (), METERS)

    async def void_round(self, table_id: str, round_id: int, reason: str) -> VoidResult:
        self._maybe_fail("void_round")
        return VoidResult(table_id, round_id, (), METERS)

    async def report_irregularity(
        self,
        table_id: str,
        round_id: int,
        kind: IrregularityKind,
        *,
        after_initial_cards: bool = False,
    ) -> IrregularityResult:
        self._maybe_fail("report_irregularity")
        effect = self.irregularity_effect
        section = "§ 647a.13(d)" if effect == "bonus_settles" else "§ 639a.8(h)"
        return IrregularityResult(
            table_id, round_id, kind, effect, section, f"{kind.value}: the rule ({section})"
        )


def desk_at(tmp_path: Path, layout: TableLayout = CS_TABLE) -> tuple[Desk, Controller]:
    controller = Controller()
    agent = TableAgent(layout.table_id, controller, Outbox(tmp_path, layout.table_id))
    agent.continue_after(1)
    session = DealerSession(layout, game_procedure(layout.game))
    return Desk(agent, session, RoundRecord(tmp_path, layout.table_id)), controller


async def locked_desk(tmp_path: Path) -> tuple[Desk, Controller]:
    """Round 2 locked out with one progressive wager; seat 2's cards entered."""
    desk, controller = desk_at(tmp_path)
    for line in ("open", "wager 2 progressive", "lockout", "cards 2 AS KS QS JS TS"):
        assert await desk.submit(line)
    assert phase_of(desk.session) is Phase.LOCKED
    return desk, controller


@pytest.mark.parametrize("error", REFUSALS, ids=lambda error: str(error)[:40])
@pytest.mark.parametrize("command", COMMANDS)
async def test_every_refusal_of_every_command_is_worded_and_nothing_escapes(
    tmp_path: Path, command: str, error: Exception
) -> None:
    desk, controller = await locked_desk(tmp_path)
    session, agent = desk.session, desk.agent
    if command == "lockout":  # the lockout of a new round
        desk, controller = desk_at(tmp_path / "lockout")
        session, agent = desk.session, desk.agent
        for line in ("open", "wager 2 progressive"):
            await desk.submit(line)
    before = len(session.messages)
    controller.fail[COMMANDS[command]] = error
    assert await desk.submit(command) is True  # never raises
    said = session.messages[before + 1 :]  # after the echo of the command
    assert said, f"nothing was said after {command!r} failed with {error!r}"
    line = said[0]
    assert "Traceback" not in line and "Error" not in line
    assert any(step in " ".join(said) for step in NEXT_STEPS), said  # what to do next
    assert session.sending == ""
    if isinstance(error, (ControllerUnreachable, RoundStateError, RuntimeError)):
        assert phase_of(session) is Phase.HALTED
        assert "quit and start the console again" in line
        return
    if isinstance(error, ProgressiveOffline):
        assert "once the table is ONLINE again" in line
    else:
        assert isinstance(error, ControllerRefused) and line.startswith("REFUSED")
        if error.code not in (
            grpc.StatusCode.INVALID_ARGUMENT,
            grpc.StatusCode.OUT_OF_RANGE,
            grpc.StatusCode.FAILED_PRECONDITION,
            grpc.StatusCode.ALREADY_EXISTS,
        ):
            assert "call the" in line
    # The round is where the controller has it: the same command goes through now.
    expected = Phase.WAGERS if command == "lockout" else Phase.LOCKED
    assert phase_of(session) is expected
    if command != "lockout":
        assert agent.states[session.round_id] is RoundState.LOCKED
    again = len(session.messages)
    assert await desk.submit(command)
    answered = session.messages[again + 1 :]
    assert answered and not any(m.startswith(("REFUSED", "refused")) for m in answered), answered


async def test_a_held_round_asks_for_the_supervisor_and_settles_after_the_confirmation(
    tmp_path: Path,
) -> None:
    desk, controller = await locked_desk(tmp_path)
    session = desk.session
    await desk.submit("count 3")  # one progressive wager accepted: the round is held
    assert "call the floor supervisor to confirm or void round 2" in session.messages[-1]
    assert session.expected() == (
        "round 2 is held: call the floor supervisor to confirm or void it, then settle"
    )
    controller.fail["settle"] = ControllerRefused(grpc.StatusCode.FAILED_PRECONDITION, HELD)
    assert await desk.submit("settle")
    assert session.messages[-1] == (
        "REFUSED: round 2 is held because the chip count differed from the accepted "
        "progressive wagers (§ 639a.8(b)): call the floor supervisor to confirm or void "
        "round 2, then type settle again"
    )
    assert phase_of(session) is Phase.LOCKED
    controller.fail["settle"] = ControllerRefused(grpc.StatusCode.FAILED_PRECONDITION, HELD)
    assert await desk.submit("settle")  # asked again before the supervisor decided
    assert "call the floor supervisor" in session.messages[-1]
    # jackpotctl irregularities confirm cs-1 2: the settlement goes through.
    assert await desk.submit("settle")
    assert session.messages[-1].startswith("round 2 settled")
    assert phase_of(session) is Phase.IDLE
    assert desk.agent.states[2] is RoundState.SETTLED


async def test_a_held_round_the_supervisor_voided_is_over(tmp_path: Path) -> None:
    desk, controller = await locked_desk(tmp_path)
    session = desk.session
    await desk.submit("count 0")
    controller.fail["settle"] = ControllerRefused(grpc.StatusCode.FAILED_PRECONDITION, VOIDED)
    assert await desk.submit("settle")
    assert session.messages[-1] == (
        "round 2 was voided by the floor supervisor: its wagers are returned to the players; "
        "type open for the next round"
    )
    assert phase_of(session) is Phase.IDLE and desk.agent.states[2] is RoundState.VOIDED
    assert await desk.submit("open")
    assert session.round_id == 3


async def test_a_seeded_irregularity_voids_the_round(tmp_path: Path) -> None:
    desk, _ = await locked_desk(tmp_path)
    assert await desk.submit("irregularity misdeal")
    assert desk.session.messages[-1] == (
        "round 2 VOID (misdeal: the rule (§ 639a.8(h))): 0 wager(s) returned to the players"
    )
    assert phase_of(desk.session) is Phase.IDLE and desk.agent.states[2] is RoundState.VOIDED
    assert [r["outcome"] for r in desk.record.rounds()] == ["void"]


async def test_an_irregularity_the_game_does_not_rule_on_is_refused_locally(
    tmp_path: Path,
) -> None:
    desk, _ = await locked_desk(tmp_path)
    for line, said in (
        ("irregularity", "irregularity KIND [after]: wrong_card_count, misdeal, cards_exposed"),
        ("irregularity chip_count", "the rules of Caribbean Stud Poker give no effect"),
        ("irregularity jam", "no irregularity 'jam'"),
        ("irregularity misdeal later", "irregularity KIND [after]"),
    ):
        await desk.submit(line)
        assert said in desk.session.messages[-1], desk.session.messages[-1]
    assert phase_of(desk.session) is Phase.LOCKED


async def test_a_texas_holdem_bonus_rest_of_round_void_is_entered_and_settled(
    tmp_path: Path,
) -> None:
    desk, controller = desk_at(tmp_path, THB_TABLE)
    controller.irregularity_effect = "bonus_settles"
    for line in ("open", "wager 2 bonus 5", "lockout", "irregularity dealer_card_exposed"):
        assert await desk.submit(line)
    session = desk.session
    assert session.messages[-2] == (
        "round 2: rest of the round void: dealer_card_exposed: the rule (§ 647a.13(d))"
    )
    assert phase_of(session) is Phase.LOCKED
    await desk.submit("irregularity misdeal")
    assert "the rest of this round is already void" in session.messages[-1]
    late = DealerSession(THB_TABLE, game_procedure(THB_TABLE.game))
    late.phase, late.sheet = Phase.LOCKED, RoundSheet(7)
    send = late.handle("irregularity cards_exposed after")  # § 647a.13(a)
    assert send is not None and send.kind is IrregularityKind.CARDS_EXPOSED
    assert send.after_initial_cards and send.round_id == 7
    await desk.submit("cards 2 AS KS")
    await desk.submit("dealer 2C 3D")
    assert session.missing_cards() == [], session.messages[-3:]
    assert await desk.submit("settle")
    assert controller.settled.rest_of_round_void == ("dealer_card_exposed: the rule (§ 647a.13(d))")
    assert phase_of(session) is Phase.IDLE


async def test_a_failure_of_the_console_itself_is_said_and_stops_it(tmp_path: Path) -> None:
    desk, _ = await locked_desk(tmp_path)

    def broken(_: list[str]) -> None:
        raise KeyError("seat")

    phases, _command = desk.session._commands["cards"]
    desk.session._commands["cards"] = (phases, broken)
    assert await desk.submit("cards 3 2C 3C 4C 5C 6C")
    assert desk.session.messages[-1] == (
        "the console failed on the cards of round 2 ('seat'): quit and start the console "
        "again; nothing is lost: the outbox re-sends what was not answered"
    )
    assert phase_of(desk.session) is Phase.HALTED
    assert await desk.submit("quit") is False
