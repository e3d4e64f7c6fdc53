"""The games the controller settles, with the numbers their regulation fixes.

Each :class:`Game` names its chapter, how many seats a table may have, how many cards a hand
holds, the lowest reset amount its progressive meter may have, the paytables a Rules
Submission may choose from, and the order in which the dealer settles a round's wagers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from controller.domain.paytables import Paytable
from controller.domain.wagers import (
    CARIBBEAN_STUD_WAGERS,
    SIX_CARD_FORTUNE_WAGERS,
    TEXAS_HOLDEM_BONUS_WAGERS,
    THREE_CARD_POKER_WAGERS,
    WagerTable,
)
from jackpot import games as facts
from jackpot.cards import Card
from jackpot.games import GameFacts
from jackpot.hands import three_card, two_card
from jackpot.hands.joker_poker import evaluate_best_five
from jackpot.hands.poker import evaluate


@dataclass(frozen=True, slots=True)
class Game:
    """One game's rules as the controller settles them: its facts
    (:class:`jackpot.games.GameFacts`), its wagers' paytables and line tables, and how a round
    is settled. Amounts in cents.

    Settlement order: the dealer walks the seats from seat N down to seat 1 once per phase
    of :attr:`phases`, settling at each seat that phase's wagers in ``settle_order``; the envy
    bonuses of a phase's wagers follow the phase. ``settle_phases`` empty: one phase, every
    seat settled completely before the next (§ 639a.11(c)); otherwise each phase is settled at
    every seat before the next begins (§ 670a.11(h)), and the phases together list
    ``settle_order``.
    """

    facts: GameFacts
    min_reset_cents: int  # the progressive meter's lowest reset amount (0: no progressive)
    min_reset_citation: str
    wagers: dict[str, WagerTable]  # by kind, in the order of ``facts.wagers``
    name_hand: Callable[[Sequence[Card]], str]  # the hand's rank, e.g. "royal_flush"
    settle_order: tuple[str, ...]  # a seat's wagers in the order the dealer settles them
    settle_phases: tuple[tuple[str, ...], ...] = ()  # () = one phase, seat by seat
    rest_void_citation: str = ""  # where a bonus still settles when the round is otherwise void
    payout_limit_floor_cents: int = 0  # the lowest aggregate payout limit per hand (0: none)
    payout_limit_citation: str = ""
    payout_limit_wagers: tuple[str, ...] = ()  # the side wagers the payout limit counts
    names_five_card_category: bool = False  # name_hand is the hand's five-card category

    def __post_init__(self) -> None:
        if tuple(table.facts for table in self.wagers.values()) != self.facts.wagers:
            raise ValueError(f"{self.facts.title}: the wager tables are not the game's wagers")
        listed = tuple(kind for phase in self.phases for kind in phase)
        if listed != self.settle_order:
            raise ValueError(
                f"{self.facts.title}: settle phases {self.settle_phases} do not list the settle "
                f"order {self.settle_order}"
            )

    @property
    def phases(self) -> tuple[tuple[str, ...], ...]:
        """The settlement phases: each settled at every seat, seat N first, before the next."""
        return self.settle_phases or (self.settle_order,)

    def paytable(self, name: str) -> Paytable:
        """The progressive paytable called ``name``; refuse a name the regulation does not list."""
        return self.wager("progressive").paytable(name)

    def wager(self, kind: str) -> WagerTable:
        """The wager of ``kind`` (``progressive``, ``bonus``); refuse an unknown one."""
        table = self.wagers.get(kind)  # every settlement asks, for each seat's wagers
        if table is not None:
            return table
        return self.wagers[self.facts.wager(kind).kind]


CARIBBEAN_STUD = Game(
    facts=facts.CARIBBEAN_STUD,
    min_reset_cents=1_000_000,  # $10,000
    min_reset_citation="§ 639a.12(d)(3)",
    wagers=CARIBBEAN_STUD_WAGERS,
    name_hand=lambda cards: evaluate(cards).category.label,
    names_five_card_category=True,
    # § 639a.11(c): each seat completely, seat N first; (4)-(5): the Bonus Wager, then the
    # Progressive Payout Wager.
    settle_order=("bonus", "five_card_bonus", "progressive"),
)

TEXAS_HOLDEM_BONUS = Game(
    facts=facts.TEXAS_HOLDEM_BONUS,
    min_reset_cents=0,
    min_reset_citation="",
    wagers=TEXAS_HOLDEM_BONUS_WAGERS,
    name_hand=lambda cards: two_card.classify(cards).value,
    settle_order=("bonus",),
    rest_void_citation="§ 647a.13(a), (d)",
    payout_limit_floor_cents=5_000_000,  # $50,000
    payout_limit_citation="§ 647a.12(c)",
    # § 647a.12(c) limits the Ante, Flop, Turn, River and Texas Hold 'Em Bonus Wagers; only
    # the bonus is registered with the controller (the base game is reported as a win).
    payout_limit_wagers=("bonus",),
)

THREE_CARD_POKER = Game(
    facts=facts.THREE_CARD_POKER,
    min_reset_cents=0,
    min_reset_citation="",
    wagers=THREE_CARD_POKER_WAGERS,
    name_hand=lambda cards: three_card.evaluate(cards).category.label,
    settle_order=("progressive", "five_card_bonus", "five_card_progressive"),
)

SIX_CARD_FORTUNE_PAI_GOW = Game(
    facts=facts.SIX_CARD_FORTUNE_PAI_GOW,
    min_reset_cents=0,
    min_reset_citation="",
    wagers=SIX_CARD_FORTUNE_WAGERS,
    name_hand=lambda cards: evaluate_best_five(cards).category.label,
    # § 670a.11(h): every Fortune Bonus Wager, then their Envy Bonuses ((1)(ii): "After all
    # Fortune Bonus Wagers have been settled"); every Insurance Wager; every Progressive
    # Payout Wager, then their Envy Bonuses ((3)(ii)).
    settle_order=("fortune_bonus", "insurance", "progressive"),
    settle_phases=(("fortune_bonus",), ("insurance",), ("progressive",)),
)

GAMES: dict[str, Game] = {
    game.facts.name: game
    for game in (CARIBBEAN_STUD, TEXAS_HOLDEM_BONUS, THREE_CARD_POKER, SIX_CARD_FORTUNE_PAI_GOW)
}


def get_game(name: str) -> Game:
    """The game called ``name`` (e.g. ``caribbean-stud``); refuse an unknown one."""
    game = GAMES.get(name)  # every settlement asks, for each seat's wagers
    if game is not None:
        return game
    return GAMES[facts.game_facts(name).name]
