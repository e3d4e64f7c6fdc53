"""Settlement plans for every game (:mod:`controller.domain.settlement`): the order
(§ 639a.11(c), § 670a.11(h)), each wager's hand, folds (§ 639a.11(b)), the dealer's hand,
community cards (§ 649a.9(b)), the insurance (§ 670a.11(h)(2)), and every refusal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from controller.domain.games import SIX_CARD_FORTUNE_PAI_GOW, TEXAS_HOLDEM_BONUS
from controller.domain.rounds import Payout, RoundCards, Wager
from controller.domain.settlement import plan_settlement
from jackpot.cards import Card
from jackpot.errors import InvalidAmount, InvalidArgument, InvalidCards, InvalidSeat
from jackpot.results import SeatOutcome
from tests.helpers import PAIR, ROYAL_SPADES, STRAIGHT_FLUSH_HEARTS, THREE_SEVENS
from tests.unit.rounds_kit import (
    CARIBBEAN,
    HOLDEM,
    SIX_CARD,
    TABLE,
    THREE_CARD,
    P,
    deal,
    seat,
    summary,
)

FCB = "five_card_bonus"


def sequence(plan: tuple[Payout, ...]) -> list[tuple[int, str, int]]:
    return [(p.seat, p.kind, p.envy_for_seat) for p in plan]


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
        Wager(3, "five_card_bonus", 300, on_dealer_hand=True),
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


def test_639a_11_c_caribbean_stud_still_settles_each_seat_completely() -> None:
    """§ 639a.11(c): each player in succession, seat N first; (4)-(5) the bonus, then the
    progressive. Other games keep one phase."""
    wagers = [
        Wager(s, kind, 100, on_dealer_hand=dealer)
        for s in (2, 5)
        for kind, dealer in (("bonus", False), (FCB, False), (FCB, True), (P, False))
    ]
    cards = deal(seat(5, "2H 3H 4H 5H 9H"), seat(2, PAIR), dealer="AS AD AC AH KD")
    plan = plan_settlement(CARIBBEAN, wagers, cards)
    assert [(p.seat, p.kind, p.on_dealer_hand) for p in plan] == [
        (5, "bonus", False),
        (5, FCB, False),
        (5, FCB, True),
        (5, P, False),
        (2, "bonus", False),
        (2, FCB, False),
        (2, FCB, True),
        (2, P, False),
    ]


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


# ------------------------------------------------------------------ § 639a.11(b): a fold


def test_a_fold_forfeits_every_wager_the_bonus_on_the_dealers_hand_too() -> None:
    """§ 639a.11(b): "the player shall forfeit all wagers"."""
    wagers = [Wager(2, P, 100), Wager(2, "five_card_bonus", 100, on_dealer_hand=True)]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(2, folded=True), dealer=ROYAL_SPADES))
    assert summary(plan) == [
        (2, "five_card_bonus", "forfeited", 0, 0),
        (2, P, "forfeited", 0, 0),
    ]
    assert plan[0].on_dealer_hand


def test_639a_11_b_a_fold_forfeits_all_wagers_the_bonus_on_the_dealers_hand_too() -> None:
    """§ 639a.11(b): "If a player has placed an Ante Wager and a Caribbean Stud Bonus Wager or
    Progressive Payout Wager but does not make a Bet Wager, the player shall forfeit all
    wagers." The dealer's four aces would pay the dealer-hand bonus; the fold forfeits it."""
    wagers = [
        Wager(3, P, 100),
        Wager(3, "bonus", 500),
        Wager(3, FCB, 200),
        Wager(3, FCB, 300, on_dealer_hand=True),
    ]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(3, folded=True), dealer="AS AD AC AH KD"))
    assert [(p.seat, p.kind, p.on_dealer_hand, p.outcome, p.amount_cents) for p in plan] == [
        (3, "bonus", False, SeatOutcome.FORFEITED, 0),
        (3, FCB, False, SeatOutcome.FORFEITED, 0),
        (3, FCB, True, SeatOutcome.FORFEITED, 0),
        (3, P, False, SeatOutcome.FORFEITED, 0),
    ]
    assert all(p.award is None and p.hand == "" for p in plan)


def test_639a_11_b_a_folded_seat_with_a_dealer_hand_bonus_needs_no_cards_at_all() -> None:
    """§ 639a.11(b), (c): the forfeited wagers and cards are collected; a folded seat holding
    only a bonus on the dealer's hand reports no cards, and the dealer's cards are not needed
    for that forfeited wager."""
    wagers = [Wager(2, FCB, 100, on_dealer_hand=True)]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(2, folded=True)))
    assert [(p.seat, p.kind, p.on_dealer_hand, p.outcome) for p in plan] == [
        (2, FCB, True, SeatOutcome.FORFEITED)
    ]
    # A folded player's reported cards change nothing: still forfeited.
    plan = plan_settlement(
        CARIBBEAN, wagers, deal(seat(2, ROYAL_SPADES, folded=True), dealer="AH AD AC 2H 3H")
    )
    assert plan[0].outcome is SeatOutcome.FORFEITED


def test_a_bonus_on_the_dealers_hand_needs_the_dealers_cards() -> None:
    wagers = [Wager(2, "five_card_bonus", 100, on_dealer_hand=True)]
    with pytest.raises(InvalidCards, match="the dealer has 0 cards; the game deals exactly 5"):
        plan_settlement(CARIBBEAN, wagers, deal(seat(2, PAIR)))


def test_639a_11_b_the_dealers_cards_are_still_needed_for_a_bonus_that_survives() -> None:
    """§ 639a.7(d)(4), § 639a.11(b): a seat that made the Bet Wager keeps its bonus on the
    dealer's hand, which needs the dealer's cards even when another seat folded."""
    wagers = [Wager(2, FCB, 100, on_dealer_hand=True), Wager(4, FCB, 100, on_dealer_hand=True)]
    with pytest.raises(InvalidCards, match="the dealer has 0 cards; the game deals exactly 5"):
        plan_settlement(CARIBBEAN, wagers, deal(seat(2, folded=True), seat(4, PAIR)))
    plan = plan_settlement(
        CARIBBEAN, wagers, deal(seat(2, folded=True), seat(4, PAIR), dealer=ROYAL_SPADES)
    )
    assert [(p.seat, p.outcome, p.amount_cents) for p in plan] == [
        (4, SeatOutcome.PAID, 100_100),  # the dealer's royal flush, 1,000 to 1 on $1
        (2, SeatOutcome.FORFEITED, 0),
    ]


def test_three_card_poker_wagers_still_settle_when_the_player_folds() -> None:
    """The seeds are silent at Three Card Poker (§ 649a.9): its wagers settle whether or not
    the player folds, so a folded seat must report its cards."""
    wagers = [Wager(3, P, 100)]
    with pytest.raises(InvalidCards, match="settled even when the player folds"):
        plan_settlement(THREE_CARD, wagers, deal(seat(3, folded=True), dealer="4S 5H 6C"))
    plan = plan_settlement(
        THREE_CARD, wagers, deal(seat(3, "9S TS JS", folded=True), dealer="4S 5H 6C")
    )
    assert [(p.seat, p.outcome, p.amount_cents) for p in plan] == [(3, SeatOutcome.PAID, 7_000)]


def test_a_game_without_a_fold_refuses_a_folded_seat() -> None:
    with pytest.raises(InvalidArgument, match="no player folds at Six-Card Fortune Pai Gow Poker"):
        plan_settlement(SIX_CARD, [], deal(seat(1, "2C 5D 7H 9S JC KD", folded=True)))


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


def test_five_card_wagers_use_the_two_community_cards() -> None:
    wagers = [Wager(2, "five_card_progressive", 100), Wager(2, "five_card_bonus", 500)]
    cards = deal(seat(2, "AS KS QS"), dealer="2C 7D 9H", community="JS TS")
    plan = plan_settlement(THREE_CARD, wagers, cards)
    assert [(p.kind, p.hand, p.award.text if p.award else "", p.meter_id) for p in plan] == [
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


# ------------------------------------------------------------------ Six-Card Fortune (§ 670a.11(h))


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


def test_670a_11_h_each_wager_at_every_seat_then_its_envy_bonuses() -> None:
    """§ 670a.11(h): (1) the Fortune Bonus Wagers, (1)(ii) "After all Fortune Bonus Wagers
    have been settled" their Envy Bonuses, (2) the Insurance Wagers, (3) the Progressive Payout
    Wagers, (3)(ii) "After all Progressive Payout Wagers have been settled" theirs; each
    wager seat N down to seat 1 (§ 670a.11(e)). Seat 4 bets nothing: one NO_WAGER result, at
    its turn in the first phase, and its five aces qualify envy bonuses of both kinds."""
    wagers = [
        Wager(s, kind, cents, envy=kind == "fortune_bonus" and s != 3)
        for s in (2, 3, 5)
        for kind, cents in (("fortune_bonus", 500), ("insurance", 500), (P, 100))
    ]
    cards = deal(
        seat(5, "QS QH QD QC 4S 6H"),  # four of a kind
        seat(4, "AS AH AD AC JK 8D"),  # five aces, no wager
        seat(3, "7C 8C 9C TC JC 3D"),  # straight flush
        seat(2, "2C 5D 7H 9S JD KH"),  # king high
        dealer="2H 3H 4H 6S 3S 5S",
    )
    plan = plan_settlement(SIX_CARD, wagers, cards)
    assert sequence(plan) == [
        # (1) every Fortune Bonus Wager, seat N first; seat 4's NO_WAGER at its turn.
        (5, "fortune_bonus", 0),
        (4, "", 0),
        (3, "fortune_bonus", 0),
        (2, "fortune_bonus", 0),
        # (1)(ii) the Fortune Bonus envies, to seats 5 and 2 (the Envy lammer), never their own.
        (2, "fortune_bonus", 5),
        (5, "fortune_bonus", 4),
        (2, "fortune_bonus", 4),
        (5, "fortune_bonus", 3),
        (2, "fortune_bonus", 3),
        # (2) every Insurance Wager.
        (5, "insurance", 0),
        (3, "insurance", 0),
        (2, "insurance", 0),
        # (3) every Progressive Payout Wager.
        (5, P, 0),
        (3, P, 0),
        (2, P, 0),
        # (3)(ii) the Progressive envies, to every progressive bettor but the hand's own.
        (3, P, 5),
        (2, P, 5),
        (5, P, 4),
        (3, P, 4),
        (2, P, 4),
        (5, P, 3),
        (2, P, 3),
    ]
    assert [(p.seat, p.outcome) for p in plan if p.outcome is SeatOutcome.NO_WAGER] == [
        (4, SeatOutcome.NO_WAGER)
    ]
    assert [p.amount_cents for p in plan[:4]] == [25_500, 0, 50_500, 0]  # 50 and 100 to 1
    assert [(p.outcome, p.amount_cents) for p in plan[9:12]] == [
        (SeatOutcome.NO_AWARD, 0),
        (SeatOutcome.NO_AWARD, 0),
        (SeatOutcome.PAID, 3_000),  # king high, 5 to 1 (§ 670a.11(h)(2))
    ]


def test_670a_11_h_the_phases_are_data_on_the_game() -> None:
    assert SIX_CARD_FORTUNE_PAI_GOW.phases == (("fortune_bonus",), ("insurance",), (P,))
    assert TEXAS_HOLDEM_BONUS.phases == (("bonus",),)
    with pytest.raises(ValueError, match="do not list the settle order"):
        replace(SIX_CARD_FORTUNE_PAI_GOW, settle_phases=(("insurance",), ("fortune_bonus",)))


def test_insurance_loses_with_an_ace_or_the_joker() -> None:
    wagers = [Wager(1, "insurance", 500)]
    for hand in ("AC 5D 7H 9S JC KD", "JK 5D 7H 9S JC KD"):
        plan = plan_settlement(SIX_CARD, wagers, deal(seat(1, hand)))
        assert plan[0].outcome is SeatOutcome.NO_AWARD, hand


# ------------------------------------------------------------------ Texas Hold 'Em Bonus


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


def test_the_paid_line_names_ace_ace_with_the_dealers_aces() -> None:
    plan = plan_settlement(HOLDEM, [Wager(1, "bonus", 500)], deal(seat(1, "AS AH"), dealer="AD AC"))
    assert (plan[0].hand, plan[0].line) == ("ace_ace", "ace_ace_dealer_and_player")


def test_each_hand_is_read_once_per_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six-Card Fortune reads a hand alike for the Fortune Bonus, its envy bonuses, the
    Progressive Payout Wager and its envy bonuses: one reading per hand for the whole plan."""
    game = SIX_CARD.game_rules
    read: list[tuple[object, ...]] = []
    shared = game.wager(P).lines_of

    def counted(hand: Sequence[Card], extra: Sequence[Card]) -> tuple[str, ...]:
        read.append(tuple(hand))
        return shared(hand, extra)

    for kind in ("fortune_bonus", P):
        monkeypatch.setitem(game.wagers, kind, replace(game.wager(kind), lines_of=counted))
    hands = ["AS AH AD AC JK 8D", "QS QH QD QC 4S 6H", "7C 8C 9C TC JC 3D", "2C 5D 7H 9S JD KH"]
    wagers = [
        Wager(s, kind, cents, envy=kind == "fortune_bonus")
        for s in (1, 2, 3, 4)
        for kind, cents in (("fortune_bonus", 500), (P, 100))
    ]
    cards = deal(*(seat(n, hand) for n, hand in enumerate(hands, start=1)))
    plan = plan_settlement(SIX_CARD, wagers, cards)
    # three hands qualify, each pays the three other seats, for both wagers
    assert len([p for p in plan if p.envy_for_seat]) == 2 * 3 * 3
    assert sorted(read) == sorted({tuple(report.cards) for report in cards.seats})
