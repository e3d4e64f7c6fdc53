"""The dealer console's desk (:mod:`table_agent.console.desk`): reports go through the
table's agent and its outbox, the answers move the session, refusals leave the round where
the controller has it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import grpc

from jackpot.results import LockoutResult, MeterValue, SettleResult, VoidResult
from table_agent.client import ControllerClient, ControllerRefused
from table_agent.console.desk import Desk
from table_agent.console.record import RoundRecord
from table_agent.console.session import DealerSession, Phase
from table_agent.games import game_procedure
from table_agent.link import Link
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.table import RoundState, TableAgent
from table_agent.wagers import PlacedWager
from tests.unit.test_console_entry import CS_TABLE
from tests.unit.test_console_session import accepted, phase_of

METERS = (MeterValue("m", 1_000_000_000_000),)


class Controller(ControllerClient):
    """Answers like a controller; refuses the first settlement and lockouts of round 1."""

    def __init__(self) -> None:  # no channel
        self.link = Link()
        self.settles = 0

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[PlacedWager]
    ) -> LockoutResult:
        if round_id == 1:
            raise ControllerRefused(grpc.StatusCode.FAILED_PRECONDITION, "round 1 is taken")
        return LockoutResult(table_id, round_id, accepted(tuple(wagers)), METERS)

    async def settle(self, table_id: str, round_id: int, report: SettleReport) -> SettleResult:
        self.settles += 1
        if self.settles == 1:
            raise ControllerRefused(grpc.StatusCode.INVALID_ARGUMENT, "seat 9 does not exist")
        return SettleResult(table_id, round_id, (), METERS)

    async def void_round(self, table_id: str, round_id: int, reason: str) -> VoidResult:
        return VoidResult(table_id, round_id, (), METERS)


async def test_reports_go_through_the_outbox_and_refusals_leave_the_round_correctable(
    tmp_path: Path,
) -> None:
    agent = TableAgent("cs-1", Controller(), Outbox(tmp_path, "cs-1"))
    session = DealerSession(CS_TABLE, game_procedure("caribbean-stud"))
    desk = Desk(agent, session, RoundRecord(tmp_path, "cs-1"))
    for line in ("open", "wager 2 progressive", "wager 9 bonus 5", "lockout"):
        assert await desk.submit(line)
    assert "refused: '9' is not a seat of this table (1 to 7)" in session.messages
    assert session.messages[-2] == "REFUSED by the controller: round 1 is taken"
    assert session.round_id == 2 and 2 in agent.states  # the wagers kept for round 2
    assert await desk.submit("lockout")
    assert phase_of(session) is Phase.LOCKED and agent.states[2] is RoundState.LOCKED
    assert session.meters == {"m": 1_000_000}
    await desk.submit("cards 2 AS KS QS JS TS")
    await desk.submit("settle")
    assert session.messages[-1] == (
        "REFUSED by the controller: seat 9 does not exist; correct the cards and type settle again"
    )
    assert phase_of(session) is Phase.LOCKED and agent.states.get(2) is RoundState.LOCKED
    await desk.submit("settle")  # corrected and sent again
    assert phase_of(session) is Phase.IDLE and agent.states.get(2) is RoundState.SETTLED
    assert [r["round_id"] for r in desk.record.rounds()] == [2]
    assert agent.outbox is not None and agent.outbox.pending() == []
    assert agent.outbox.tally()["acks"] == 2  # the lockout and the settlement
    assert await desk.submit("quit") is False


async def test_a_lockout_while_progressive_offline_sends_nothing(tmp_path: Path) -> None:
    clock = [0.0]
    controller = Controller()
    controller.link = Link(1, table_id="cs-1", clock=lambda: clock[0])
    agent = TableAgent("cs-1", controller, Outbox(tmp_path, "cs-1"))
    session = DealerSession(CS_TABLE, game_procedure("caribbean-stud"))
    desk = Desk(agent, session, RoundRecord(tmp_path, "cs-1"))
    agent.continue_after(1)
    clock[0] = 5.0
    await desk.submit("open")
    assert desk.offline and session.messages[-1].startswith("PROGRESSIVE OFFLINE")
    await desk.submit("wager 2 progressive")
    await desk.submit("lockout")
    assert session.messages[-1].startswith("PROGRESSIVE OFFLINE: no progressive wagers")
    assert phase_of(session) is Phase.WAGERS and agent.outbox is not None
    assert agent.states[2] is RoundState.OPEN
    assert not agent.outbox.path.exists()  # nothing written
