"""The hands a settlement reads: which cards make a wager's hand, the paytable lines it
makes and the name the answer gives it. The controller evaluates every hand itself; a
reported rank is never trusted.

:class:`RoundHands` is made once per settlement plan and reads each hand once: a hand's lines
for one way of reading them (a wager's ``lines_of``, shared by wagers that read hands alike)
and its name are computed at their first use and reused by the later wagers, phases and envy
bonuses of the round. A five-card poker hand is evaluated once for both its name and its lines
(where the wager's lines come from its value alone, :attr:`WagerTable.lines_of_value`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.domain.config import TableConfig
from controller.domain.rounds import Cards, RoundCards
from controller.domain.wagers import WagerTable
from jackpot.cards import Card
from jackpot.hands.poker import HandValue, evaluate
from jackpot.kinds import Extra

LinesOf = Callable[[Sequence[Card], Sequence[Card]], tuple[str, ...]]


class RoundHands:
    """One round's hands, each read once (see the module).

    A hand is known by identity: the round's cards are tuples that live as long as this
    object (a seat's with the community cards is made once per seat), so each memo is keyed
    by the ids of the tuples and holds them, and a hit is taken only for the very same
    tuples - no hashing of cards on every use."""

    def __init__(self, table: TableConfig, cards: RoundCards) -> None:
        self._table = table
        self._cards = cards
        self._lines: dict[tuple[int, int, int], tuple[Cards, Cards, tuple[str, ...]]] = {}
        self._names: dict[tuple[bool, int], tuple[Cards, str]] = {}
        self._values: dict[int, tuple[Cards, HandValue]] = {}
        self._with_community: dict[int, tuple[Cards, Cards]] = {}

    def cards_of(self, rules: WagerTable, on_dealer_hand: bool, seat: Cards) -> Cards:
        """The cards of a wager's hand: the dealer's for a wager on the dealer's hand, the
        seat's with the community cards for a five-card wager, else the seat's."""
        if on_dealer_hand:
            return self._cards.dealer
        if rules.facts.extra is Extra.COMMUNITY:
            known = self._with_community.get(id(seat))
            if known is None or known[0] is not seat:
                known = self._with_community[id(seat)] = (seat, seat + self._cards.community)
            return known[1]
        return seat

    def lines(self, rules: WagerTable, hand: Cards) -> tuple[str, ...]:
        """Every line of the wager's paytables that ``hand`` makes (with the dealer's cards
        where the wager reads them), highest first."""
        dealer = self._cards.dealer if rules.facts.extra is Extra.DEALER else ()
        key = (id(rules.lines_of), id(hand), id(dealer))
        known = self._lines.get(key)
        if known is not None and known[0] is hand and known[1] is dealer:
            return known[2]
        if rules.lines_of_value is not None and not dealer:
            lines = rules.lines_of_value(self._value(hand))
        else:
            lines = rules.lines_of(hand, dealer)
        self._lines[key] = (hand, dealer, lines)
        return lines

    def name(self, rules: WagerTable | None, hand: Cards) -> str:
        """The hand's name in the answer: the five-card category for a five-card wager, else
        the game's name for it (``rules`` None: a seat without a wager)."""
        five_card = rules is not None and rules.facts.extra is Extra.COMMUNITY
        key = (five_card, id(hand))
        known = self._names.get(key)
        if known is not None and known[0] is hand:
            return known[1]
        game = self._table.game_rules
        if five_card or game.names_five_card_category:
            name = self._value(hand).category.label
        else:
            name = game.name_hand(hand)
        self._names[key] = (hand, name)
        return name

    def _value(self, hand: Cards) -> HandValue:
        """The five-card value of ``hand`` (evaluated at its first use)."""
        known = self._values.get(id(hand))
        if known is not None and known[0] is hand:
            return known[1]
        value = evaluate(hand)
        self._values[id(hand)] = (hand, value)
        return value
