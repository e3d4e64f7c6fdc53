"""A faithful Caribbean Stud Poker table for demonstrations, tests and load.

Each round: occupied seats place the Ante and, with the configured probability, the $1
Progressive Payout Wager; the dealer locks out; one shuffled deck is dealt by § 639a.8(d);
each player makes the Bet Wager or folds (§ 639a.11(b)); the controller settles. Optionally
a round is voided for an irregularity (a misdeal, § 639a.13(c)) after the lockout.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.domain.cards import Card
from controller.domain.money import format_cents
from table_agent.client import SeatAward
from table_agent.dealing import deal, makes_bet, shuffled_deck, stack_deck
from table_agent.table import TableAgent

_rng = secrets.SystemRandom()

MISDEAL = "misdeal: a player was dealt an incorrect number of cards (§ 639a.13(c))"


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """How the simulated table plays. Probabilities are in percent (integers, 0-100)."""

    seats: int = 7
    occupancy_percent: int = 85
    wager_percent: int = 60
    wager_cents: int = 100
    void_percent: int = 0
    pace_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ScriptedRound:
    """A round with chosen hands: ``hands`` by seat (each of them wagers), optional dealer."""

    hands: Mapping[int, Sequence[Card]]
    dealer: Sequence[Card] = ()


@dataclass
class Tally:
    """What a table has played so far (cents)."""

    rounds: int = 0
    voids: int = 0
    wagers: int = 0
    awards: list[tuple[int, SeatAward]] = field(default_factory=list)

    @property
    def awards_cents(self) -> int:
        """Every award's amount, added up."""
        return sum(award.amount_cents for _, award in self.awards)


class TableSimulator:
    """Plays rounds at one table through its :class:`TableAgent`."""

    def __init__(
        self,
        agent: TableAgent,
        config: SimulationConfig,
        say: Callable[[str], None] = print,
    ) -> None:
        self.agent = agent
        self.config = config
        self.say = say
        self.tally = Tally()

    def _place_wagers(self) -> tuple[list[int], list[tuple[int, int]]]:
        occupied = [
            seat
            for seat in range(1, self.config.seats + 1)
            if _rng.randrange(100) < self.config.occupancy_percent
        ]
        wagers = [
            (seat, self.config.wager_cents)
            for seat in occupied
            if _rng.randrange(100) < self.config.wager_percent
        ]
        return occupied, wagers

    async def play_round(self, scripted: ScriptedRound | None = None) -> int:
        """Play one round; return its id."""
        agent = self.agent
        round_id = agent.new_round()
        if scripted is None:
            players, wagers = self._place_wagers()
        else:
            players = sorted(scripted.hands)
            wagers = [(seat, self.config.wager_cents) for seat in players]
        await agent.lockout(round_id, wagers)
        self.tally.rounds += 1
        self.tally.wagers += len(wagers)
        if scripted is None and _rng.randrange(100) < self.config.void_percent:
            await agent.void(round_id, MISDEAL)
            self.tally.voids += 1
            self.say(f"table {agent.table_id} round {round_id}: void, {MISDEAL}")
            return round_id
        if scripted is None:
            deck = shuffled_deck()
        else:
            deck = stack_deck(players, scripted.hands, scripted.dealer)
        cards = deal(deck, players)
        staying = {
            seat: hand
            for seat, hand in cards.hands.items()
            if scripted is not None or makes_bet(hand)
        }
        folded = [seat for seat in cards.hands if seat not in staying]
        settlement = await agent.settle(round_id, staying, folded, cards.dealer)
        for award in settlement.awards:
            self.tally.awards.append((round_id, award))
            self.say(describe_award(agent.table_id, round_id, award))
        return round_id

    async def run(self, rounds: int) -> Tally:
        """Play ``rounds`` rounds at the configured pace."""
        for _ in range(rounds):
            await self.play_round()
            if self.config.pace_s:
                await asyncio.sleep(self.config.pace_s)
        return self.tally


def describe_award(table_id: str, round_id: int, award: SeatAward) -> str:
    """One line for the dealer and the log: who won what, and whether it waits validation."""
    line = (
        f"table {table_id} round {round_id}: seat {award.seat} {award.hand} wins "
        f"{award.award_text} = {format_cents(award.amount_cents)}"
    )
    if award.pending_validation:
        line += (
            f" (meter {format_cents(award.meter_before_cents)} -> "
            f"{format_cents(award.meter_after_cents)}; jackpot {award.jackpot_id} awaits "
            "a supervisor's validation)"
        )
    return line
