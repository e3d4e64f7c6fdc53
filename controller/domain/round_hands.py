"""The hands a settlement reads: which cards make a wager's hand, the paytable lines it
makes and the name the answer gives it. The controller evaluates every hand itself; a
reported rank is never trusted.

:class:`RoundHands` is made once per settlement plan and reads each hand once: a hand's lines
for one way of reading them (a wager's ``lines_of``, shared by wagers that read hands alike)
and its name are computed at their first use and reused by the later wagers, phases and envy
bonuses of the round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.domain.config import TableConfig
from controller.domain.rounds import Cards, RoundCards
from controller.domain.wagers import WagerTable
from jackpot.cards import Card
from jackpot.hands.poker import evaluate
from jackpot.kinds import Extra

LinesOf = Callable[[Sequence[Card], Sequence[Card]], tuple[str, ...]]


class RoundHands:
    """One round's hands, each read once (see the module)."""

    def __init__(self, table: TableConfig, cards: RoundCards) -> None:
        self._table = table
        self._cards = cards
        self._lines: dict[tuple[LinesOf, Cards, Cards], tuple[str, ...]] = {}
        self._names: dict[tuple[bool, Cards], str] = {}

    def cards_of(self, rules: WagerTable, on_dealer_hand: bool, seat: Cards) -> Cards:
        """The cards of a wager's hand: the dealer's for a wager on the dealer's hand, the
        seat's with the community cards for a five-card wager, else the seat's."""
        if on_dealer_hand:
            return self._cards.dealer
        if rules.facts.extra is Extra.COMMUNITY:
            return seat + self._cards.community
        return seat

    def lines(self, rules: WagerTable, hand: Cards) -> tuple[str, ...]:
        """Every line of the wager's paytables that ``hand`` makes (with the dealer's cards
        where the wager reads them), highest first."""
        dealer = self._cards.dealer if rules.facts.extra is Extra.DEALER else ()
        key = (rules.lines_of, hand, dealer)
        lines = self._lines.get(key)
        if lines is None:
            lines = self._lines[key] = rules.lines_of(hand, dealer)
        return lines

    def name(self, rules: WagerTable | None, hand: Cards) -> str:
        """The hand's name in the answer: the five-card category for a five-card wager, else
        the game's name for it (``rules`` None: a seat without a wager)."""
        five_card = rules is not None and rules.facts.extra is Extra.COMMUNITY
        key = (five_card, hand)
        name = self._names.get(key)
        if name is None:
            if five_card:
                name = evaluate(hand).category.label
            else:
                name = self._table.game_rules.name_hand(hand)
            self._names[key] = name
        return name
