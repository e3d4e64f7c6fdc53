"""A settlement plan reads each hand once: a Caribbean Stud hand's name and lines come from one
evaluation, whatever reads them, and a memo hit is taken only for the very same cards."""

from __future__ import annotations

import random
from unittest import mock

from controller.domain import round_hands
from controller.domain.config import TableConfig
from controller.domain.games import CARIBBEAN_STUD
from controller.domain.round_hands import RoundHands
from controller.domain.rounds import RoundCards, SeatCards, Wager
from controller.domain.settlement import plan_settlement
from jackpot.cards import FULL_DECK, parse_cards
from jackpot.hands.poker import evaluate

TABLE = TableConfig.progressive("t1", "caribbean-stud", "B", 7, "g", "m", 100)


def _round(seed: int) -> RoundCards:
    deck = list(FULL_DECK)
    random.Random(seed).shuffle(deck)
    seats = tuple(SeatCards(s, tuple(deck[5 * (s - 1) : 5 * s])) for s in range(1, 8))
    return RoundCards(seats, dealer=tuple(deck[35:40]))


def test_each_hand_is_evaluated_once_for_its_name_and_its_lines() -> None:
    wagers = tuple(Wager(seat, "progressive", 100) for seat in range(1, 8))
    counting = mock.Mock(side_effect=evaluate)
    with mock.patch.object(round_hands, "evaluate", counting):
        plan = plan_settlement(TABLE, wagers, _round(7))
    assert counting.call_count == 7  # one per seat's hand; no wager reads the dealer's
    for payout, report in zip(plan, sorted(_round(7).seats, key=lambda r: -r.seat), strict=True):
        assert payout.hand == evaluate(report.cards).category.label


def test_names_and_lines_are_those_of_the_game_and_the_wager() -> None:
    rules = CARIBBEAN_STUD.wager("progressive")
    for seed in range(200):
        cards = _round(seed)
        hands = RoundHands(TABLE, cards)
        for report in cards.seats:
            assert hands.name(rules, report.cards) == CARIBBEAN_STUD.name_hand(report.cards)
            assert hands.lines(rules, report.cards) == rules.lines_of(report.cards, ())


def test_equal_cards_in_another_tuple_are_read_for_themselves() -> None:
    """A memo is keyed by identity and checked: another tuple is never taken for a hand it
    is not (even one made after the first was freed, which may reuse its id)."""
    rules = CARIBBEAN_STUD.wager("progressive")
    royal = parse_cards("AS KS QS JS TS".split())
    cards = RoundCards((SeatCards(1, royal),), dealer=())
    hands = RoundHands(TABLE, cards)
    assert hands.name(rules, royal) == "royal_flush"
    for text in ("2H 2D 5C 9S KD", "AH KH QH JH TH", "3C 3D 3H 7S 7C"):
        other = parse_cards(text.split())
        assert hands.name(rules, other) == evaluate(other).category.label
        assert hands.lines(rules, other) == rules.lines_of(other, ())
        del other
    assert hands.name(rules, royal) == "royal_flush"
