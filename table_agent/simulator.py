"""A faithful table of any game the controller settles, for demonstrations, tests and load.

Each round: occupied seats play the base game and, each with the configured probability, place
every side wager the table offers (:mod:`table_agent.placement`); the dealer locks out; one
shuffled deck (CSPRNG) is dealt by the game's procedure (:mod:`table_agent.games`); at
Caribbean Stud each player makes the Bet Wager or folds (§ 639a.11(b)); the controller
settles. Optionally a round is voided for a misdeal after the lockout (each game's rule), or a
Texas Hold 'Em Bonus round loses the rest of its play after the first two cards (§ 647a.13(d)),
settling only the bonus wagers; optionally the dealer reports the chip count after the lockout
(§ 639a.8(b)), and a round meets a seeded irregularity that the controller applies. Every
seat dealt cards is reported: other seats' hands matter to envy bonuses and are checked
against the deck.

While the table is PROGRESSIVE OFFLINE (:mod:`table_agent.link`) the simulated table takes no
side wagers: it plays no round the agent would report until the controller answers again (its
base game, which the agent never sees, is not simulated), and gives up with
:class:`ControllerUnreachable` once the controller has been silent for the client's retry
window. A round asked for meanwhile (a scripted one) is refused with
:class:`~table_agent.link.ProgressiveOffline` before it starts. A round already locked out when
the controller went away finishes when the controller is back: its reports are retried.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jackpot.games import DEFAULT_WAGER_CENTS
from jackpot.hands.words import hand_words
from jackpot.irregularities import COUNTED_WAGERS, RULES
from jackpot.kinds import wager_title
from jackpot.money import format_cents
from jackpot.results import METER_AFTER, LockoutResult, SeatResult, SettleResult
from table_agent.client import ControllerUnreachable
from table_agent.deck import COMMUNITY, DEALER, DeckCard
from table_agent.games import GameProcedure, game_procedure
from table_agent.link import ProgressiveOffline
from table_agent.placement import (
    default_wagers,
    place_random_wagers,
    unplaceable_offers,
    with_minimum_amounts,
)
from table_agent.reports import SettleReport
from table_agent.script import ScriptedRound, ScriptError
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager, TableLayout, progressive_only

log = logging.getLogger("table_agent.simulator")

_rng = secrets.SystemRandom()

DEFAULT_GAME = "caribbean-stud"


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """How the simulated table plays. Probabilities are in percent (integers, 0-100).

    ``seats`` caps the seats in play (the table's registered seats otherwise); ``wager_cents``
    is the Progressive Payout Wager of a table whose registration the agent was not given.
    ``wager_percent`` is the chance that an occupied seat places each offered side wager.
    ``chip_count_percent`` is the chance that the dealer reports the chips collected after the
    lockout (§ 639a.8(b); the simulated dealer counts right). ``irregularity_percent`` is the
    chance that a round meets one of the game's seeded irregularities
    (:mod:`jackpot.irregularities`), reported for the controller to apply: a void, or at
    Texas Hold 'Em Bonus the bonus wagers settle.
    """

    seats: int = 7
    occupancy_percent: int = 85
    wager_percent: int = 60
    wager_cents: int = DEFAULT_WAGER_CENTS
    void_percent: int = 0
    rest_of_round_void_percent: int = 0
    pace_s: float = 0.0
    chip_count_percent: int = 0
    irregularity_percent: int = 0


@dataclass
class MeterTally:
    """What one meter received from the table's wagers, net of voided rounds (microcents),
    and how many wagers contributed."""

    to_meter_microcents: int = 0
    to_reserve_microcents: int = 0
    wagers: int = 0


@dataclass
class Tally:
    """What a table has played so far. Amounts in cents unless named otherwise.

    ``wagers`` and ``wagers_by_kind`` count every wager accepted at lockout (voided rounds
    included, as their wagers were taken); ``meters`` the contributions net of voids.
    """

    rounds: int = 0
    voids: int = 0
    rest_of_round_voids: int = 0
    wagers: int = 0
    wagers_by_kind: dict[str, int] = field(default_factory=dict)
    wagered_cents: int = 0
    meters: dict[str, MeterTally] = field(default_factory=dict)
    results: int = 0
    awards: list[tuple[int, SeatResult]] = field(default_factory=list)

    @property
    def awards_cents(self) -> int:
        """Every award's amount, added up."""
        return sum(award.amount_cents for _, award in self.awards)

    def add_lockout(self, lockout: LockoutResult, sign: int = 1) -> None:
        """Count a lockout's accepted wagers and contributions (``sign`` -1: its void)."""
        for accepted in lockout.accepted:
            for contribution in accepted.contributions:
                meter = self.meters.setdefault(contribution.meter_id, MeterTally())
                meter.to_meter_microcents += sign * contribution.to_meter_microcents
                meter.to_reserve_microcents += sign * contribution.to_reserve_microcents
                meter.wagers += sign
            if sign > 0:
                kind = accepted.kind.value
                self.wagers += 1
                self.wagers_by_kind[kind] = self.wagers_by_kind.get(kind, 0) + 1
                self.wagered_cents += accepted.amount_cents

    def add_settlement(self, round_id: int, settlement: SettleResult) -> None:
        """Count a settlement's results and keep its awards."""
        self.results += len(settlement.results)
        self.awards += [(round_id, award) for award in settlement.awards]


class TableSimulator:
    """Plays rounds at one table through its :class:`TableAgent`.

    ``layout`` is the table's registration (game, seats, offered wagers); without it the table
    is a Caribbean Stud table offering only the progressive wager of ``config.wager_cents``.
    """

    def __init__(
        self,
        agent: TableAgent,
        config: SimulationConfig,
        say: Callable[[str], None] = print,
        layout: TableLayout | None = None,
    ) -> None:
        self.agent = agent
        self.config = config
        self.say = say
        self.layout = layout or progressive_only(
            agent.table_id, DEFAULT_GAME, config.seats, config.wager_cents
        )
        self.game: GameProcedure = game_procedure(self.layout.game)
        self.seats = min(config.seats, self.layout.seats)
        self.tally = Tally()
        for kind in unplaceable_offers(self.game, self.layout):
            log.warning(
                "table %s offers %s, which %s has no place for; never placed",
                agent.table_id,
                kind.value,
                self.game.facts.title,
            )

    def _chance(self, percent: int) -> bool:
        return _rng.randrange(100) < percent

    def _seat_players(self) -> tuple[list[int], list[PlacedWager]]:
        players = [
            seat for seat in range(1, self.seats + 1) if self._chance(self.config.occupancy_percent)
        ]
        wagers = [
            wager
            for seat in players
            for wager in place_random_wagers(
                self.game, self.layout, seat, self.config.wager_percent, _rng
            )
        ]
        return players, wagers

    def _scripted_wagers(self, scripted: ScriptedRound) -> list[PlacedWager]:
        wagers: list[PlacedWager] = []
        for seat in sorted(scripted.hands):
            chosen = scripted.wagers.get(seat)
            wagers += default_wagers(self.game, self.layout, seat) if chosen is None else chosen
        return with_minimum_amounts(self.layout, wagers)

    def _stacked_deck(
        self, players: Sequence[int], wagers: Sequence[PlacedWager], scripted: ScriptedRound
    ) -> list[DeckCard]:
        wanted: dict[int, Sequence[DeckCard]] = dict(scripted.hands)
        if scripted.dealer:
            wanted[DEALER] = scripted.dealer
        if scripted.community:
            wanted[COMMUNITY] = scripted.community
        try:
            return self.game.stack(players, wagers, wanted)
        except ValueError as error:
            raise ScriptError(
                f"the scripted round does not fit {self.game.facts.title}: {error}"
            ) from None

    def _rest_of_round_void(self, scripted: ScriptedRound | None) -> str:
        reason = self.game.rest_of_round_void_reason
        if scripted is not None:
            given = scripted.rest_of_round_void
            return reason if given is True else str(given or "")
        if reason and self._chance(self.config.rest_of_round_void_percent):
            return reason
        return ""

    async def play_round(self, scripted: ScriptedRound | None = None) -> int:
        """Play one round (``scripted``: with its chosen cards and wagers); return its id.
        While the table is PROGRESSIVE OFFLINE, :class:`ProgressiveOffline` before anything
        happens (no round id is taken)."""
        agent = self.agent
        agent.link.refuse_if_offline()
        round_id = agent.new_round()
        if scripted is None:
            players, wagers = self._seat_players()
            deck = self.game.shuffled_deck()
        else:
            players, wagers = sorted(scripted.hands), self._scripted_wagers(scripted)
            deck = self._stacked_deck(players, wagers, scripted)  # before the lockout: it may fail
        lockout = await agent.lockout(round_id, wagers)
        self.tally.rounds += 1
        self.tally.add_lockout(lockout)
        if self._chance(self.config.chip_count_percent):
            chips = sum(1 for a in lockout.accepted if a.kind in COUNTED_WAGERS)
            await agent.report_chip_count(round_id, chips)
        if scripted is None and self._chance(self.config.void_percent):
            await agent.void(round_id, self.game.misdeal_reason)
            self.tally.voids += 1
            self.tally.add_lockout(lockout, sign=-1)
            self.say(f"table {agent.table_id} round {round_id}: void, {self.game.misdeal_reason}")
            return round_id
        irregularity = None
        kinds = sorted(RULES.get(self.layout.game, {}))
        if scripted is None and kinds and self._chance(self.config.irregularity_percent):
            irregularity = await agent.report_irregularity(round_id, _rng.choice(kinds))
            self.say(f"table {agent.table_id} round {round_id}: {irregularity.reason}")
            if irregularity.voided:
                self.tally.voids += 1
                self.tally.add_lockout(lockout, sign=-1)
                return round_id
        cards = self.game.deal(deck, players, wagers)
        if scripted is not None:
            folded = set(scripted.folded)
        else:
            folds = self.game.folds
            folded = {seat for seat, hand in cards.hands.items() if folds and folds(hand)}
        rest_void = irregularity.reason if irregularity else self._rest_of_round_void(scripted)
        report = SettleReport(
            hands={seat: hand for seat, hand in cards.hands.items() if seat not in folded},
            folded=tuple(sorted(folded)),
            dealer=cards.dealer,
            community=cards.community,
            rest_of_round_void=rest_void,
        )
        settlement = await agent.settle(round_id, report)
        self.tally.add_settlement(round_id, settlement)
        if rest_void:
            self.tally.rest_of_round_voids += 1
            self.say(
                f"table {agent.table_id} round {round_id}: rest of the round void, {rest_void}"
            )
        for award in settlement.awards:
            self.say(describe_award(agent.table_id, round_id, award))
        return round_id

    async def run(self, rounds: int) -> Tally:
        """Play ``rounds`` rounds at the configured pace, none while the table is PROGRESSIVE
        OFFLINE (the agent's :meth:`TableAgent.keep_link` must run meanwhile)."""
        played = 0
        while played < rounds:
            await self.wait_until_open()
            try:
                await self.play_round()
            except ProgressiveOffline:
                continue  # offline between the check and the lockout: nothing was sent
            played += 1
            if self.config.pace_s:
                await asyncio.sleep(self.config.pace_s)
        return self.tally

    async def wait_until_open(self) -> None:
        """Return once the table takes side wagers; :class:`ControllerUnreachable` once the
        controller has been silent for the client's retry window."""
        agent = self.agent
        if not agent.link.check():
            return
        try:
            await agent.link.wait_online(agent.client.retry_for_s)
        except TimeoutError as error:
            raise ControllerUnreachable(
                f"table {agent.table_id}: PROGRESSIVE OFFLINE, and {error}"
            ) from None


def describe_award(table_id: str, round_id: int, award: SeatResult) -> str:
    """One line for the dealer and the log: who won what on which wager (and for whose hand,
    for an envy bonus), whether the payout limit cut it, and whether it awaits validation."""
    wager = wager_title(award.kind, on_dealer_hand=award.on_dealer_hand) if award.kind else "wager"
    hand = hand_words(award.hand)
    if award.envy_for_seat:
        what = f"envy bonus ({wager}) for seat {award.envy_for_seat}'s {hand}"
    else:
        what = f"{wager}: {hand}"
    amount = format_cents(award.amount_cents)
    wins = award.award_text if award.award_text == amount else f"{award.award_text} = {amount}"
    line = f"table {table_id} round {round_id}: seat {award.seat} {what} wins {wins}"
    if award.limited_from_cents:
        line += f" (limited from {format_cents(award.limited_from_cents)} by the payout limit)"
    if award.pending_validation:
        meter = (
            f"meter {format_cents(award.meter_before_cents)} -> "
            f"{format_cents(award.meter_after_cents)} {METER_AFTER}; "
            if award.meter_id  # a fixed award held for validation moves no meter
            else ""
        )
        line += f" ({meter}jackpot {award.jackpot_id} awaits a supervisor's validation)"
    return line
