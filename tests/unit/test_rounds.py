"""Lockout and settlement checks and plans for every game: the order (§ 639a.11(c)), each
wager's hand, folds, the dealer's hand, community cards (§ 649a.9(b)), envy bonuses
(§ 670a.11(h)), the insurance (§ 670a.11(h)(2)) and the payout limit (§ 647a.12(c))."""

from __future__ import annotations

import pytest

from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint, settle_fingerprint
from controller.domain.lockout import check_lockout
from controller.domain.records import SeatOutcome
from controller.domain.rounds import Payout, RoundCards, Wager
from controller.domain.settlement import plan_settlement
from controller.errors import InvalidAmount, InvalidArgument, InvalidCards, InvalidSeat
from tests.helpers import PAIR, ROYAL_SPADES, STRAIGHT_FLUSH_HEARTS, THREE_SEVENS
from tests.unit.rounds_kit import (
    CARIBBEAN,
    HOLDEM,
    SIX_CARD,
    THREE_CARD,
    P,
    deal,
    seat,
)

TABLE = TableConfig.progressive("t1", "caribbean-stud", "B", 7, "g", "m")


def summary(plan: tuple[Payout, ...]) -> list[tuple[int, str, str, int, int]]:
    return [(p.seat, p.wager, str(p.outcome), p.amount_cents, p.envy_for_seat) for p in plan]


# ------------------------------------------------------------------ lockout


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
            Wager(2, "bonus", 100, on_dealer=True),
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
    both = [Wager(3, "five_card_bonus", 100), Wager(3, "five_card_bonus", 100, on_dealer=True)]
    assert len(check_lockout(CARIBBEAN, both)) == 2


# ------------------------------------------------------------------ Caribbean Stud


def test_plan_is_in_settlement_order_and_evaluated_by_the_controller() -> None:
    wagers = [Wager(s, P, 100) for s in (2, 4, 5, 6)]
    plan = plan_settlement(
        TABLE,
        wagers,
        deal(
            seat(2, ROYAL_SPADES),
            seat(6, STRAIGHT_FLUSH_HEARTS),
            seat(4, PAIR),
            seat(5, folded=True),
        ),
    )
    assert [p.seat for p in plan] == [6, 5, 4, 2]
    assert [p.hand for p in plan] == ["straight_flush", "", "pair", "royal_flush"]
    assert plan[0].award is not None and plan[0].award.text == "10% of meter"
    assert plan[0].meter_id == "m"
    assert plan[1].outcome is SeatOutcome.FORFEITED and plan[1].award is None
    assert plan[2].outcome is SeatOutcome.NO_AWARD
    assert plan[3].award is not None and plan[3].award.text == "100% of meter"


def test_caribbean_bonus_then_progressive_and_the_five_card_bonus_on_either_hand() -> None:
    wagers = [
        Wager(3, P, 100),
        Wager(3, "bonus", 1_000),
        Wager(3, "five_card_bonus", 200),
        Wager(3, "five_card_bonus", 300, on_dealer=True),
    ]
    plan = plan_settlement(
        CARIBBEAN, wagers, deal(seat(3, "2H 3H 4H 5H 9H"), dealer="AS AD AC AH KD")
    )
    assert summary(plan) == [
        (3, "bonus", "paid", 41_000, 0),  # flush 40 to 1 on $10 (§ 639a.12(c) A)
        (3, "five_card_bonus", "paid", 3_200, 0),  # player's flush, 15 to 1 on $2
        (3, "five_card_bonus", "paid", 30_300, 0),  # dealer's four aces, 100 to 1 on $3
        (3, P, "paid", 5_000, 0),  # flush 50 for 1 (§ 639a.12(d)(1) B)
    ]
    assert [p.hand for p in plan] == ["flush", "flush", "four_of_a_kind", "flush"]


def test_a_fold_forfeits_every_wager_the_bonus_on_the_dealers_hand_too() -> None:
    """§ 639a.11(b): "the player shall forfeit all wagers" (tests/unit/test_rule_corrections)."""
    wagers = [Wager(2, P, 100), Wager(2, "five_card_bonus", 100, on_dealer=True)]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(2, folded=True), dealer=ROYAL_SPADES))
    assert summary(plan) == [
        (2, "five_card_bonus", "forfeited", 0, 0),
        (2, P, "forfeited", 0, 0),
    ]
    assert plan[0].on_dealer


def test_a_bonus_on_the_dealers_hand_needs_the_dealers_cards() -> None:
    wagers = [Wager(2, "five_card_bonus", 100, on_dealer=True)]
    with pytest.raises(InvalidCards, match="the dealer has 0 cards; the game deals exactly 5"):
        plan_settlement(CARIBBEAN, wagers, deal(seat(2, PAIR)))


@pytest.mark.parametrize(
    ("cards", "error", "message"),
    [
        (deal(seat(1, "AS KS QS JS")), InvalidCards, "seat 1 has 4 cards"),
        (deal(seat(1, "AS KS QS JS TS 9S")), InvalidCards, "seat 1 has 6 cards"),
        (
            deal(seat(1, ROYAL_SPADES), seat(2, "AS 2H 3H 4H 6D")),
            InvalidCards,
            "card AS is reported twice",
        ),
        (
            deal(seat(1, ROYAL_SPADES), dealer="AS 2H 3H 4H 6D"),
            InvalidCards,
            "card AS is reported twice",
        ),
        (deal(seat(1, ROYAL_SPADES), dealer="2H 3H 4H"), InvalidCards, "the dealer has 3 cards"),
        (deal(seat(0, ROYAL_SPADES)), InvalidSeat, "seat 0 does not exist"),
        (deal(seat(8, ROYAL_SPADES)), InvalidSeat, "seat 8 does not exist"),
        (deal(seat(1, ROYAL_SPADES), seat(1, THREE_SEVENS)), InvalidSeat, "reported twice"),
        (deal(seat(2, ROYAL_SPADES)), InvalidSeat, "seat 1 progressive was accepted at lockout"),
        (deal(seat(1, ROYAL_SPADES), community="2C 3C"), InvalidCards, "deals no community cards"),
        (
            deal(seat(1, ROYAL_SPADES), void="exposed"),
            InvalidArgument,
            "settles no wager of a round",
        ),
        (deal(seat(1, ROYAL_SPADES, base_win=-1)), InvalidAmount, "cannot be negative"),
    ],
)
def test_settlement_refusals(cards: RoundCards, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        plan_settlement(TABLE, [Wager(1, P, 100)], cards)


# ------------------------------------------------------------------ Three Card Poker


def test_three_card_progressive_pays_the_declared_suit_above_other_mini_royals() -> None:
    wagers = [Wager(4, P, 100), Wager(2, P, 100)]
    plan = plan_settlement(
        THREE_CARD, wagers, deal(seat(4, "AS KS QS"), seat(2, "AH KH QH"), dealer="2C 7D 9H")
    )
    assert [(p.seat, p.hand, p.award.text if p.award else "") for p in plan[:2]] == [
        (4, "mini_royal", "100% of meter"),
        (2, "mini_royal", "$500.00"),
    ]
    assert plan[0].meter_id == "tcp-main"


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


def test_five_card_wagers_use_the_two_community_cards() -> None:
    wagers = [Wager(2, "five_card_progressive", 100), Wager(2, "five_card_bonus", 500)]
    cards = deal(seat(2, "AS KS QS"), dealer="2C 7D 9H", community="JS TS")
    plan = plan_settlement(THREE_CARD, wagers, cards)
    assert [(p.wager, p.hand, p.award.text if p.award else "", p.meter_id) for p in plan] == [
        ("five_card_bonus", "royal_flush", "1,000 to 1", ""),
        ("five_card_progressive", "royal_flush", "100% of meter", "tcp-five"),
    ]
    assert plan[0].amount_cents == 500_500


def test_community_cards_only_with_a_five_card_wager() -> None:
    with pytest.raises(InvalidCards, match=r"dealt only when .* \(§ 649a\.9\(b\)\)"):
        plan_settlement(
            THREE_CARD, [Wager(2, P, 100)], deal(seat(2, "AS KS QS"), community="JS TS")
        )
    with pytest.raises(InvalidCards, match="the community has 0 cards; the game deals exactly 2"):
        plan_settlement(THREE_CARD, [Wager(2, "five_card_bonus", 100)], deal(seat(2, "AS KS QS")))


# ------------------------------------------------------------------ Six-Card Fortune


def test_six_card_fortune_bonus_insurance_progressive_and_envies() -> None:
    wagers = [
        Wager(1, "fortune_bonus", 500, envy=True),
        Wager(1, "insurance", 500),
        Wager(2, "fortune_bonus", 500),  # no Envy lammer: no fortune envy
        Wager(2, P, 100),
        Wager(4, P, 100),
    ]
    cards = deal(
        seat(1, "2C 5D 7H 9S JC KD"),  # king high: insurance wins
        seat(2, "AS AH AD AC JK 8D"),  # five aces
        seat(4, "QS QH QD QC 4S 6H"),  # four of a kind
        dealer="2D 3D 4D 6S 9C TC",
    )
    plan = plan_settlement(SIX_CARD, wagers, cards)
    assert summary(plan) == [
        # § 670a.11(h)(1): every Fortune Bonus Wager, seat N first.
        (2, "fortune_bonus", "paid", 500_500, 0),  # five aces: 1,000 to 1
        (1, "fortune_bonus", "no_award", 0, 0),
        # Fortune Bonus envies (§ 670a.11(h)(1)(ii)): only seat 1 holds the Envy lammer.
        (1, "fortune_bonus", "paid", 5_000, 4),
        (1, "fortune_bonus", "paid", 100_000, 2),
        (1, "insurance", "paid", 3_000, 0),  # king high: 5 to 1 (§ 670a.11(h)(2))
        # § 670a.11(h)(3): every Progressive Payout Wager.
        (4, P, "paid", 5_000, 0),  # four of a kind: $50
        (2, P, "paid", 0, 0),  # five aces: 100% of the meter, computed by the store
        # Progressive envies (§ 670a.11(h)(3)(ii)): each for the other's hand, never its own.
        (2, P, "paid", 2_500, 4),
        (4, P, "paid", 50_000, 2),
    ]


def test_insurance_loses_with_an_ace_or_the_joker() -> None:
    wagers = [Wager(1, "insurance", 500)]
    for hand in ("AC 5D 7H 9S JC KD", "JK 5D 7H 9S JC KD"):
        plan = plan_settlement(SIX_CARD, wagers, deal(seat(1, hand)))
        assert plan[0].outcome is SeatOutcome.NO_AWARD, hand


# ------------------------------------------------------------------ Texas Hold 'Em Bonus


def test_holdem_ace_ace_with_the_dealers_aces_is_cut_to_the_payout_limit() -> None:
    wagers = [Wager(1, "bonus", 10_000), Wager(2, "bonus", 500)]
    cards = deal(seat(1, "AS AH", base_win=1_000_000), seat(2, "KS KH"), dealer="AD AC")
    plan = plan_settlement(HOLDEM, wagers, cards)
    first, second = plan[1], plan[0]
    assert first.hand == "ace_ace" and first.award is not None
    assert first.award.text == "1,000 to 1"
    # $100 x 1,000 = $100,000 winnings; the limit is $50,000 per hand, $10,000 already won
    # by the base game: $40,000 plus the $100 wager back.
    assert first.limited_from_cents == 10_010_000
    assert first.amount_cents == 4_000_000 + 10_000
    assert (second.amount_cents, second.limited_from_cents) == (5_500, 0)  # 10 to 1


def test_holdem_bonus_settles_when_the_rest_of_the_round_is_void() -> None:
    wagers = [Wager(1, "bonus", 500)]
    cards = deal(seat(1, "AS KS"), dealer="2D 7C", void="dealer card exposed (§ 647a.13(d))")
    assert summary(plan_settlement(HOLDEM, wagers, cards)) == [(1, "bonus", "paid", 13_000, 0)]
    with pytest.raises(InvalidAmount, match="the rest of the round is void"):
        plan_settlement(
            HOLDEM, wagers, deal(seat(1, "AS KS", base_win=100), dealer="2D 7C", void="x")
        )


def test_holdem_bonus_is_settled_for_a_player_who_folds() -> None:
    wagers = [Wager(1, "bonus", 500)]
    with pytest.raises(InvalidCards, match="settled even when the player folds"):
        plan_settlement(HOLDEM, wagers, deal(seat(1, folded=True), dealer="2D 7C"))
    plan = plan_settlement(HOLDEM, wagers, deal(seat(1, "AS AD", folded=True), dealer="2D 7C"))
    assert summary(plan) == [(1, "bonus", "paid", 15_500, 0)]


# ------------------------------------------------------------------ fingerprints


def test_fingerprints_ignore_order_and_card_spelling() -> None:
    a = [Wager(1, P, 100), Wager(2, P, 100)]
    assert lockout_fingerprint(a) == lockout_fingerprint(list(reversed(a)))
    assert lockout_fingerprint(a) != lockout_fingerprint(a[:1])
    assert lockout_fingerprint(a) != lockout_fingerprint([Wager(1, P, 100, envy=True), a[1]])
    tens = settle_fingerprint(deal(seat(1, "10H JH QH KH AH")))
    assert tens == settle_fingerprint(deal(seat(1, "TH JH QH KH AH")))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH"), dealer="2C"))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH", base_win=5)))
    assert tens != settle_fingerprint(deal(seat(1, "TH JH QH KH AH"), void="x"))


# ------------------------------------------------------------------ review findings


def test_a_game_without_a_fold_refuses_a_folded_seat() -> None:
    with pytest.raises(InvalidArgument, match="no player folds at Six-Card Fortune Pai Gow Poker"):
        plan_settlement(SIX_CARD, [], deal(seat(1, "2C 5D 7H 9S JC KD", folded=True)))


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


def test_a_base_game_win_is_reported_only_where_a_payout_limit_counts_it() -> None:
    with pytest.raises(InvalidAmount, match="only at a table with a payout limit per hand"):
        plan_settlement(TABLE, [Wager(1, P, 100)], deal(seat(1, ROYAL_SPADES, base_win=100)))


def test_the_paid_line_names_ace_ace_with_the_dealers_aces() -> None:
    plan = plan_settlement(HOLDEM, [Wager(1, "bonus", 500)], deal(seat(1, "AS AH"), dealer="AD AC"))
    assert (plan[0].hand, plan[0].line) == ("ace_ace", "ace_ace_dealer_and_player")
