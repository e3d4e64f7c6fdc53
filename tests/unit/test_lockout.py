"""The lockout's checks (:mod:`controller.domain.lockout`): each wager offered, once per seat
(and hand), within the table's limits; the dealer's hand and the Envy lammer only where the
game has them."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.lockout import check_lockout
from controller.domain.rounds import Wager
from jackpot.errors import InvalidAmount, InvalidArgument, InvalidSeat
from tests.unit.rounds_kit import CARIBBEAN, SIX_CARD, TABLE, P


def test_lockout_orders_wagers_by_seat_then_the_games_order() -> None:
    wagers = check_lockout(
        CARIBBEAN,
        [
            Wager(1, P, 100),
            Wager(5, P, 100),
            Wager(5, "bonus", 500),
            Wager(5, "five_card_bonus", 100),
        ],
    )
    assert [(w.seat, w.kind) for w in wagers] == [
        (1, P),
        (5, "bonus"),
        (5, "five_card_bonus"),
        (5, P),
    ]


@pytest.mark.parametrize(
    ("table", "wager", "error", "message"),
    [
        (TABLE, Wager(0, P, 100), InvalidSeat, "seat 0 does not exist at table t1; its seats are"),
        (TABLE, Wager(8, P, 100), InvalidSeat, "seat 8 does not exist"),
        (TABLE, Wager(2, P, 0), InvalidAmount, "seat 2 progressive: wager amount must be positive"),
        (TABLE, Wager(2, P, -100), InvalidAmount, "must be positive"),
        (TABLE, Wager(2, P, 500), InvalidAmount, "fixed at 100 cents"),
        (TABLE, Wager(2, "bonus", 500), InvalidArgument, "does not offer the bonus wager"),
        (CARIBBEAN, Wager(2, "bonus", 50), InvalidAmount, "takes 100 to 10000 cents"),
        (CARIBBEAN, Wager(2, "bonus", 10_001), InvalidAmount, "takes 100 to 10000 cents"),
        (
            CARIBBEAN,
            Wager(2, "bonus", 100, on_dealer_hand=True),
            InvalidArgument,
            "is not placed on the dealer's hand",
        ),
        (CARIBBEAN, Wager(2, P, 100, envy=True), InvalidArgument, "has no Envy lammer"),
        (SIX_CARD, Wager(2, "insurance", 500, envy=True), InvalidArgument, "no Envy lammer"),
    ],
)
def test_lockout_refusals(
    table: TableConfig, wager: Wager, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        check_lockout(table, [wager])


def test_lockout_refuses_a_wager_placed_twice_but_takes_both_hands() -> None:
    with pytest.raises(InvalidSeat, match="seat 3 progressive is placed twice"):
        check_lockout(TABLE, [Wager(3, P, 100), Wager(3, P, 100)])
    both = [Wager(3, "five_card_bonus", 100), Wager(3, "five_card_bonus", 100, on_dealer_hand=True)]
    assert len(check_lockout(CARIBBEAN, both)) == 2
