"""The table's round state machine, with every report going through the outbox.

A round is OPEN while wagers are placed, LOCKED after "no more bets", then SETTLED or VOIDED.
Each report (lockout, chip count, settle, void, irregularity) is written to the outbox before
it is sent and marked when the controller acknowledged or refused it;
:meth:`TableAgent.recover` re-sends what a crash left unacknowledged, and voids a round left
locked by a crash (the cards of that round are gone with the process, so its wagers are
returned, as for any irregularity).

While the table is PROGRESSIVE OFFLINE (:mod:`table_agent.link`) a new round's lockout is
refused with :class:`~table_agent.link.ProgressiveOffline` before anything is written; the
reports of rounds already locked out (settlements, voids, a recovered lockout) are always sent.
The agent counts its reports by phase and outcome, and keeps the reports not yet answered and
the time of the last acknowledgement, for its metrics (:mod:`table_agent.metrics`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import Any, TypeVar

from jackpot.kinds import IrregularityKind
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    SettleResult,
    VoidResult,
)
from table_agent.client import ControllerClient, ControllerRefused, ControllerUnreachable
from table_agent.link import Link
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.wagers import PlacedWager

log = logging.getLogger("table_agent.table")

T = TypeVar("T")

RESTART_VOID_REASON = "agent restarted before the round was settled"

PHASES = ("lockout", "settle", "void", "chip_count", "irregularity")
OUTCOMES = ("acknowledged", "refused", "unreachable")
"""What became of a report: acknowledged by the controller, refused by it (final), or not
delivered within the retry window (it stays in the outbox, to be sent again at restart)."""


class RoundState(StrEnum):
    """Where a round is."""

    OPEN = "open"
    LOCKED = "locked"
    SETTLED = "settled"
    VOIDED = "voided"


class RoundStateError(Exception):
    """A report that the round's state does not allow (a bug in the caller, never sent)."""


class TableAgent:
    """One table's agent: round ids, states, the outbox and the controller client."""

    def __init__(self, table_id: str, client: ControllerClient, outbox: Outbox | None = None):
        self.table_id = table_id
        self.client = client
        self.outbox = outbox
        self.states: dict[int, RoundState] = {}
        self._last_round_id = outbox.last_round_id() if outbox else 0
        if outbox:
            client.known = outbox.last_position()
        self.reports: dict[tuple[str, str], int] = {(p, o): 0 for p in PHASES for o in OUTCOMES}
        """Reports by (phase, outcome), every pair from zero."""
        self._unanswered = {report["id"] for report in outbox.pending()} if outbox else set()
        self.held: set[int] = set()
        """Rounds whose chip count differed (§ 639a.8(b)): held for a supervisor."""
        self._last_ack = time.monotonic()

    @property
    def link(self) -> Link:
        """The link to the controller (whether the table is PROGRESSIVE OFFLINE)."""
        return self.client.link

    @property
    def outbox_depth(self) -> int:
        """Reports written but not yet answered (acknowledged or refused)."""
        return len(self._unanswered)

    def seconds_since_last_ack(self) -> float:
        """Seconds since the controller last acknowledged a report (since the agent started,
        if it has not yet)."""
        return max(0.0, time.monotonic() - self._last_ack)

    async def keep_link(self) -> None:
        """Watch the link until cancelled, asking the controller whenever it has been quiet
        (:meth:`Link.keep`); run it beside the table's play."""
        await self.link.keep(lambda: self.client.probe(self.table_id))

    def continue_after(self, round_id: int) -> None:
        """Continue after the controller's last locked-out round of this table
        (TableService.GetTable). Call it once :meth:`recover` has delivered (or seen refused)
        every report of the outbox: the controller's count is then the truth, also when this
        agent's is higher (a lockout it refused, ids from an older agent's clock, a Redis
        restored from a backup), so the next id is never refused for jumping ahead."""
        self._last_round_id = round_id

    def new_round(self) -> int:
        """Open a new round: the last id this agent or the controller knows, plus one, so ids
        increase across restarts and never jump (the controller refuses a jump)."""
        round_id = self._last_round_id + 1
        self._last_round_id = round_id
        self.states[round_id] = RoundState.OPEN
        return round_id

    def _expect(self, round_id: int, expected: RoundState) -> None:
        state = self.states.get(round_id)
        if state is not expected:
            raise RoundStateError(
                f"round {round_id} of table {self.table_id} is {state or 'unknown'}; "
                f"this report needs it {expected}"
            )

    def _move(self, round_id: int, expected: RoundState, new: RoundState) -> None:
        self._expect(round_id, expected)
        self.states[round_id] = new

    async def _report(
        self,
        phase: str,
        round_id: int,
        payload: dict[str, Any],
        send: Callable[[], Awaitable[T]],
        sums: Callable[[T], dict[str, int]],
    ) -> T:
        report_id = f"{round_id}:{phase}"
        if self.outbox:
            self.outbox.put(report_id, phase, round_id, payload)
        self._unanswered.add(report_id)
        try:
            answer = await send()
        except ControllerRefused as refusal:
            if self.outbox:
                self.outbox.ack(report_id, refused=refusal.message)  # final: never re-sent
            self._unanswered.discard(report_id)
            self.reports[(phase, "refused")] += 1
            raise
        except ControllerUnreachable:
            self.reports[(phase, "unreachable")] += 1
            raise
        if self.outbox:
            self.outbox.ack(
                report_id,
                position=self.client.known,
                sums=sums(answer),
                answer=answer_data(answer),
            )
        self._unanswered.discard(report_id)
        self.reports[(phase, "acknowledged")] += 1
        self._last_ack = time.monotonic()
        return answer

    async def lockout(self, round_id: int, wagers: Sequence[PlacedWager]) -> LockoutResult:
        """ "No more bets" with the accepted wagers. While the table is PROGRESSIVE OFFLINE,
        :class:`ProgressiveOffline` and nothing else: the round stays open."""
        self.link.refuse_if_offline()
        return await self._lockout(round_id, wagers)

    async def _lockout(self, round_id: int, wagers: Sequence[PlacedWager]) -> LockoutResult:
        placed = list(wagers)
        self._move(round_id, RoundState.OPEN, RoundState.LOCKED)
        return await self._report(
            "lockout",
            round_id,
            {"wagers": [wager.to_data() for wager in placed]},
            lambda: self.client.lockout(self.table_id, round_id, placed),
            lambda lockout: {"contributed_microcents": lockout.contributed_microcents},
        )

    async def settle(self, round_id: int, report: SettleReport) -> SettleResult:
        """Report the cards of a locked round. A round held by a chip count that differed is
        refused until a supervisor resolves it; it stays LOCKED, to be settled again."""
        self._move(round_id, RoundState.LOCKED, RoundState.SETTLED)
        try:
            return await self._report(
                "settle",
                round_id,
                report.to_data(),
                lambda: self.client.settle(self.table_id, round_id, report),
                lambda settlement: {"paid_cents": settlement.paid_cents},
            )
        except ControllerRefused:
            if round_id in self.held:
                self.states[round_id] = RoundState.LOCKED
            raise

    async def void(self, round_id: int, reason: str) -> VoidResult:
        """VoidResult a locked round for an irregularity; its wagers are returned."""
        self._move(round_id, RoundState.LOCKED, RoundState.VOIDED)
        return await self._report(
            "void",
            round_id,
            {"reason": reason},
            lambda: self.client.void_round(self.table_id, round_id, reason),
            lambda void: {"reversed_microcents": void.reversed_microcents},
        )

    def still_locked(self, round_id: int) -> None:
        """The controller refused a report of a locked-out round (its settlement, void, chip
        count or irregularity): a refusal changes nothing, so the round is still locked out
        there, to be settled (with corrected cards, or once the floor supervisor confirmed a
        held round) or voided again. Calling it again, or after a refusal that already left
        the round locked (a held round's settlement), changes nothing. The dealer's console
        calls this; the simulator never does. :class:`RoundStateError` for a round that was
        never locked out."""
        state = self.states.get(round_id)
        if state not in (RoundState.LOCKED, RoundState.SETTLED, RoundState.VOIDED):
            raise RoundStateError(
                f"round {round_id} of table {self.table_id} is {state or 'unknown'}; only a "
                "locked-out round can stay locked out after a refusal"
            )
        self.states[round_id] = RoundState.LOCKED

    def voided_elsewhere(self, round_id: int) -> None:
        """The controller answered that the round is void: the floor supervisor voided it
        (a held round, ``jackpotctl irregularities void``); it is over here too."""
        self.held.discard(round_id)
        self.states[round_id] = RoundState.VOIDED

    async def report_chip_count(self, round_id: int, chips: int) -> ChipCountResult:
        """Report the dealer's count of the value chips collected for Progressive Payout
        Wagers after the lockout (§ 639a.8(b)). A count that differs from the wagers accepted
        holds the round: its settlement is refused until a supervisor confirms it (then settle
        it again) or voids it (``jackpotctl irregularities confirm|void``)."""
        self._expect(round_id, RoundState.LOCKED)
        result = await self._report(
            "chip_count",
            round_id,
            {"chips": chips},
            lambda: self.client.report_chip_count(self.table_id, round_id, chips),
            lambda count: {},
        )
        if not result.matched:
            self.held.add(round_id)
            log.warning(
                "round %s: %d chips counted but %d Progressive Payout Wagers accepted "
                "(§ 639a.8(b)); call a supervisor to confirm or void the round",
                round_id,
                result.chips,
                result.accepted,
            )
        return result

    async def report_irregularity(
        self, round_id: int, kind: IrregularityKind, *, after_initial_cards: bool = False
    ) -> IrregularityResult:
        """Report a seeded irregularity of a locked round (misdeal, wrong number of cards,
        cards exposed, dealer's card exposed, shoe jam). The controller applies the game's
        rule and answers it: ``voided`` (the round is VOIDED, its wagers returned), or
        ``bonus_settles`` (Texas Hold 'Em Bonus, § 647a.13): the round stays LOCKED, to be
        settled with ``rest_of_round_void`` = the answer's ``reason``."""
        self._expect(round_id, RoundState.LOCKED)
        result = await self._report(
            "irregularity",
            round_id,
            {"kind": kind.value, "after_initial_cards": after_initial_cards},
            lambda: self.client.report_irregularity(
                self.table_id, round_id, kind, after_initial_cards=after_initial_cards
            ),
            _irregularity_sums,
        )
        if result.voided:
            self.states[round_id] = RoundState.VOIDED
        return result

    async def recover(self) -> int:
        """Re-send every unacknowledged report, void any round a crash left locked, then
        compact the outbox. Returns how many reports were sent. A report the controller
        refuses is final: it is logged for the dealer, marked refused, and recovery goes on."""
        if self.outbox is None:
            return 0
        sent = 0
        for report in self.outbox.pending():
            round_id, phase, payload = report["round_id"], report["phase"], report["payload"]
            log.warning("re-sending the %s of round %s, never acknowledged", phase, round_id)
            try:
                await self._resend(round_id, phase, payload)
            except ControllerRefused as refusal:
                log.error("the %s of round %s was refused: %s", phase, round_id, refusal)
            sent += 1
        for round_id in self.outbox.unfinished_rounds():
            log.warning("voiding round %s: %s", round_id, RESTART_VOID_REASON)
            self.states[round_id] = RoundState.LOCKED
            try:
                await self.void(round_id, RESTART_VOID_REASON)
            except ControllerRefused as refusal:
                log.error("round %s could not be voided: %s", round_id, refusal)
            sent += 1
        self.outbox.compact()
        return sent

    async def _resend(self, round_id: int, phase: str, payload: dict[str, Any]) -> None:
        if phase == "lockout":
            self.states[round_id] = RoundState.OPEN  # locked out before: sent even offline
            await self._lockout(round_id, [PlacedWager.from_data(w) for w in payload["wagers"]])
        elif phase == "settle":
            self.states[round_id] = RoundState.LOCKED
            await self.settle(round_id, SettleReport.from_data(payload))
        elif phase == "chip_count":
            self.states[round_id] = RoundState.LOCKED
            await self.report_chip_count(round_id, payload["chips"])
        elif phase == "irregularity":
            self.states[round_id] = RoundState.LOCKED
            await self.report_irregularity(
                round_id,
                IrregularityKind(payload["kind"]),
                after_initial_cards=payload["after_initial_cards"],
            )
        else:
            self.states[round_id] = RoundState.LOCKED
            await self.void(round_id, payload["reason"])


def answer_data(answer: object) -> dict[str, Any] | None:
    """An answer as the outbox keeps it: the result record's fields as plain data (enums as
    their values); None for anything that is not a result record."""
    if not dataclasses.is_dataclass(answer) or isinstance(answer, type):
        return None
    data: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(answer)))
    return data


def _irregularity_sums(result: IrregularityResult) -> dict[str, int]:
    """What an irregularity moved: a void's reversal (its acknowledgement then finishes the
    round in the outbox); nothing when the round is still to be settled."""
    return {"reversed_microcents": result.reversed_microcents} if result.voided else {}
