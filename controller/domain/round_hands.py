"""The hands a settlement reads: which cards make a wager's hand, the paytable lines it
makes and the name the answer gives it. The controller evaluates every hand itself; a
reported rank is never trusted."""

from __future__ import annotations

from controller.domain.config import TableConfig
from controller.domain.rounds import Cards, RoundCards
from controller.domain.wagers import WagerTable
from jackpot.hands.poker import evaluate
from jackpot.kinds import Extra


def hand_cards(rules: WagerTable, wager_on_dealer: bool, seat: Cards, cards: RoundCards) -> Cards:
    """The cards of a wager's hand: the dealer's for a wager on the dealer's hand, the seat's
    with the community cards for a five-card wager, else the seat's."""
    if wager_on_dealer:
        return cards.dealer
    if rules.facts.extra is Extra.COMMUNITY:
        return seat + cards.community
    return seat


def lines_made(rules: WagerTable, hand: Cards, cards: RoundCards) -> tuple[str, ...]:
    """Every line of the wager's paytables that ``hand`` makes (with the dealer's cards where
    the wager reads them)."""
    return rules.lines_of(hand, cards.dealer if rules.facts.extra is Extra.DEALER else ())


def hand_name(table: TableConfig, rules: WagerTable, hand: Cards) -> str:
    """The hand's name in the answer: the five-card category for a five-card wager, else the
    game's name for it."""
    if rules.facts.extra is Extra.COMMUNITY:
        return evaluate(hand).category.label
    return table.game_rules.name_hand(hand)
