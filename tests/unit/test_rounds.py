"""Lockout and settlement checks, and the settlement plan's order (§ 639a.11(c))."""

from __future__ import annotations

import pytest

from controller.domain.cards import parse_cards
from controller.domain.config import TableConfig
from controller.domain.rounds import (
    SeatCards,
    Wager,
    WagerKind,
    check_lockout,
    lockout_fingerprint,
    plan_settlement,
    settle_fingerprint,
)
from controller.errors import InvalidAmount, InvalidCards, InvalidSeat
from tests.helpers import PAIR, ROYAL_SPADES, STRAIGHT_FLUSH_HEARTS, THREE_SEVENS

TABLE = TableConfig("t1", "caribbean-stud", "B", 7, "g", "m")
P = WagerKind.PROGRESSIVE


def seat(number: int, cards: str = "", folded: bool = False) -> SeatCards:
    return SeatCards(number, parse_cards(cards.split()), folded)


def test_lockout_orders_wagers_by_seat() -> None:
    wagers = check_lockout(TABLE, [Wager(5, P, 100), Wager(1, P, 100)])
    assert [w.seat for w in wagers] == [1, 5]


@pytest.mark.parametrize(
    ("wager", "error", "message"),
    [
        (Wager(0, P, 100), InvalidSeat, "seat 0 does not exist at table t1; its seats are 1 to 7"),
        (Wager(8, P, 100), InvalidSeat, "seat 8 does not exist"),
        (Wager(2, P, 0), InvalidAmount, "seat 2: wager amount must be positive, got 0"),
        (Wager(2, P, -100), InvalidAmount, "must be positive"),
        (Wager(2, P, 500), InvalidAmount, "fixed at 100 cents"),
    ],
)
def test_lockout_refusals(wager: Wager, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        check_lockout(TABLE, [wager])


def test_lockout_refuses_two_wagers_on_one_seat() -> None:
    with pytest.raises(InvalidSeat, match="seat 3 has two"):
        check_lockout(TABLE, [Wager(3, P, 100), Wager(3, P, 100)])


def test_plan_is_in_settlement_order_and_evaluated_by_the_controller() -> None:
    plan = plan_settlement(
        TABLE,
        [
            seat(2, ROYAL_SPADES),
            seat(6, STRAIGHT_FLUSH_HEARTS),
            seat(4, PAIR),
            seat(5, folded=True),
        ],
        (),
    )
    assert [p.seat for p in plan] == [6, 5, 4, 2]
    assert [p.hand for p in plan] == ["straight_flush", "", "pair", "royal_flush"]
    assert plan[0].award is not None and plan[0].award.text == "10% of meter"
    assert plan[1].folded and plan[1].award is None
    assert plan[2].award is None
    assert plan[3].award is not None and plan[3].award.text == "100% of meter"


@pytest.mark.parametrize(
    ("seats", "dealer", "error", "message"),
    [
        ([seat(1, "AS KS QS JS")], "", InvalidCards, "seat 1 has 4 cards"),
        ([seat(1, "AS KS QS JS TS 9S")], "", InvalidCards, "seat 1 has 6 cards"),
        (
            [seat(1, ROYAL_SPADES), seat(2, "AS 2H 3H 4H 6D")],
            "",
            InvalidCards,
            "card AS is reported twice",
        ),
        ([seat(1, ROYAL_SPADES)], "AS 2H 3H 4H 6D", InvalidCards, "card AS is reported twice"),
        ([seat(1, ROYAL_SPADES)], "2H 3H 4H", InvalidCards, "the dealer has 3 cards"),
        ([seat(0, ROYAL_SPADES)], "", InvalidSeat, "seat 0 does not exist"),
        ([seat(8, ROYAL_SPADES)], "", InvalidSeat, "seat 8 does not exist"),
        ([seat(1, ROYAL_SPADES), seat(1, THREE_SEVENS)], "", InvalidSeat, "reported twice"),
    ],
)
def test_settlement_refusals(
    seats: list[SeatCards], dealer: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        plan_settlement(TABLE, seats, parse_cards(dealer.split()))


def test_fingerprints_ignore_order_and_card_spelling() -> None:
    a = [Wager(1, P, 100), Wager(2, P, 100)]
    assert lockout_fingerprint(a) == lockout_fingerprint(list(reversed(a)))
    assert lockout_fingerprint(a) != lockout_fingerprint(a[:1])
    tens = settle_fingerprint([seat(1, "10H JH QH KH AH")], ())
    assert tens == settle_fingerprint([seat(1, "TH JH QH KH AH")], ())
    assert tens != settle_fingerprint([seat(1, "TH JH QH KH AH")], parse_cards(["2C"]))
