"""Envy bonuses (:mod:`controller.domain.envy`, § 670a.11(h)(1)(ii), (3)(ii)): each other
entitled seat is paid once per qualifying hand, never for its own."""

from __future__ import annotations

from controller.domain.rounds import Wager
from controller.domain.settlement import plan_settlement
from tests.unit.rounds_kit import THREE_CARD, P, deal, seat, summary


def test_three_card_envy_for_the_other_progressive_bettors() -> None:
    """Seats 1, 3 and 5 bet; seat 3 holds a qualifying hand: 1 and 5 get one envy each."""
    wagers = [Wager(s, P, 100) for s in (1, 3, 5)]
    cards = deal(seat(1, "2C 7D 9H"), seat(3, "9S TS JS"), seat(5, "3D 8C KH"), dealer="4S 5H 6C")
    envies = [p for p in plan_settlement(THREE_CARD, wagers, cards) if p.envy_for_seat]
    assert summary(tuple(envies)) == [(5, P, "paid", 5_000, 3), (1, P, "paid", 5_000, 3)]
    assert all(p.award_kind == "envy" and p.hand == "straight_flush" for p in envies)


def test_two_qualifying_hands_pay_two_envies_each_never_for_ones_own() -> None:
    wagers = [Wager(s, P, 100) for s in (1, 3, 5)]
    cards = deal(seat(1, "2C 7D 9H"), seat(3, "9S TS JS"), seat(5, "AD KD QD"), dealer="4S 5H 6C")
    envies = [
        (p.seat, p.envy_for_seat, p.amount_cents)
        for p in plan_settlement(THREE_CARD, wagers, cards)
        if p.envy_for_seat
    ]
    assert envies == [(3, 5, 10_000), (1, 5, 10_000), (5, 3, 5_000), (1, 3, 5_000)]


def test_a_seat_without_a_progressive_wager_qualifies_envies_but_gets_none() -> None:
    wagers = [Wager(1, P, 100)]
    cards = deal(seat(1, "2C 7D 9H"), seat(6, "9S TS JS"), dealer="4S 5H 6C")
    plan = plan_settlement(THREE_CARD, wagers, cards)
    assert summary(plan) == [
        (6, "", "no_wager", 0, 0),
        (1, P, "no_award", 0, 0),
        (1, P, "paid", 5_000, 6),
    ]


def test_a_folded_three_card_hand_still_qualifies_envy_bonuses() -> None:
    wagers = [Wager(s, P, 100) for s in (1, 3)]
    cards = deal(seat(1, "2C 7D 9H"), seat(3, "9S TS JS", folded=True), dealer="4S 5H 6C")
    plan = plan_settlement(THREE_CARD, wagers, cards)
    assert summary(plan) == [
        (3, P, "paid", 7_000, 0),  # the progressive is settled whether or not the player folds
        (1, P, "no_award", 0, 0),
        (1, P, "paid", 5_000, 3),
    ]
    assert plan[0].line == "straight_flush" and plan[2].line == "straight_flush"
