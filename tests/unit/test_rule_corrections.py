"""Three settlement rules the seeds state, each test citing its section.

* § 639a.11(b): a Caribbean Stud player who folds forfeits all wagers, a Five Card Hand Bonus
  on the dealer's hand too.
* § 647a.12(c): the payout limit per hand is at least the greater of $50,000 and what one
  patron could win per round betting the minimum wager.
* § 670a.11(h): Six-Card Fortune settles every Fortune Bonus, then their envy bonuses, every
  Insurance, every Progressive Payout Wager, then their envy bonuses.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import replace

import pytest

from controller.domain.config import TableConfig, WagerOffer, payout_limit_floor_cents
from controller.domain.games import SIX_CARD_FORTUNE_PAI_GOW, TEXAS_HOLDEM_BONUS
from controller.domain.paytables import AwardRule
from controller.domain.records import SeatOutcome
from controller.domain.rounds import Payout, Wager
from controller.domain.settlement import plan_settlement
from controller.domain.submission import parse_submission
from controller.domain.wagers import TEXAS_HOLDEM_BONUS_WAGERS
from controller.errors import InvalidCards, InvalidConfiguration
from tests.helpers import PAIR, ROYAL_SPADES
from tests.unit.rounds_kit import (
    CARIBBEAN,
    RULES,
    SIX_CARD,
    THREE_CARD,
    P,
    deal,
    seat,
)

FCB = "five_card_bonus"


def sequence(plan: tuple[Payout, ...]) -> list[tuple[int, str, int]]:
    return [(p.seat, p.wager, p.envy_for_seat) for p in plan]


# ------------------------------------------------------------------ § 639a.11(b)


def test_639a_11_b_a_fold_forfeits_all_wagers_the_bonus_on_the_dealers_hand_too() -> None:
    """§ 639a.11(b): "If a player has placed an Ante Wager and a Caribbean Stud Bonus Wager or
    Progressive Payout Wager but does not make a Bet Wager, the player shall forfeit all
    wagers." The dealer's four aces would pay the dealer-hand bonus; the fold forfeits it."""
    wagers = [
        Wager(3, P, 100),
        Wager(3, "bonus", 500),
        Wager(3, FCB, 200),
        Wager(3, FCB, 300, on_dealer=True),
    ]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(3, folded=True), dealer="AS AD AC AH KD"))
    assert [(p.seat, p.wager, p.on_dealer, p.outcome, p.amount_cents) for p in plan] == [
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
    wagers = [Wager(2, FCB, 100, on_dealer=True)]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(2, folded=True)))
    assert [(p.seat, p.wager, p.on_dealer, p.outcome) for p in plan] == [
        (2, FCB, True, SeatOutcome.FORFEITED)
    ]
    # A folded player's reported cards change nothing: still forfeited.
    plan = plan_settlement(
        CARIBBEAN, wagers, deal(seat(2, ROYAL_SPADES, folded=True), dealer="AH AD AC 2H 3H")
    )
    assert plan[0].outcome is SeatOutcome.FORFEITED


def test_639a_11_b_the_dealers_cards_are_still_needed_for_a_bonus_that_survives() -> None:
    """§ 639a.7(d)(4), § 639a.11(b): a seat that made the Bet Wager keeps its bonus on the
    dealer's hand, which needs the dealer's cards even when another seat folded."""
    wagers = [Wager(2, FCB, 100, on_dealer=True), Wager(4, FCB, 100, on_dealer=True)]
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


# ------------------------------------------------------------------ § 647a.12(c)


def holdem_table(min_cents: int, limit_cents: int, paytable: str = "A") -> TableConfig:
    bonus = TEXAS_HOLDEM_BONUS_WAGERS["bonus"].paytable(paytable)
    offer = WagerOffer("bonus", bonus, min_cents, 10_000)
    return TableConfig("thb-9", "texas-holdem-bonus", 6, "pit", (offer,), limit_cents)


def test_647a_12_c_winnings_exclude_the_returned_wager() -> None:
    """§ 647a.12(c) limits what wagers win: "N to 1" wins N wagers, "N for 1" N - 1, "$A" A."""
    assert AwardRule.parse("1,000 to 1").winnings_cents(6_000) == 6_000_000
    assert AwardRule.parse("500 for 1").winnings_cents(100) == 49_900
    assert AwardRule.parse("$500").winnings_cents(6_000) == 50_000
    with pytest.raises(ValueError, match="computed from the meter"):
        AwardRule.parse("10% of meter").winnings_cents(100)
    paytable_a = TEXAS_HOLDEM_BONUS_WAGERS["bonus"].paytable("A")
    assert paytable_a.largest_winnings_cents(6_000) == 6_000_000  # ace-ace (dealer and player)


def test_647a_12_c_the_floor_is_what_the_minimum_wager_can_win_when_above_50000() -> None:
    """§ 647a.12(c): "$50,000 or the maximum amount that one patron could win per round when
    betting the minimum wager, whichever is greater." Paytable A's top line is 1,000 to 1: a
    $60 minimum can win $60,000, so a $50,000 limit is refused and $60,000 accepted."""
    with pytest.raises(InvalidConfiguration) as refused:
        holdem_table(6_000, 5_000_000)
    message = str(refused.value)
    assert "payout limit $50,000.00 is below $60,000.00" in message
    assert "greater of $50,000.00 and what one patron could win per round betting the minimum" in (
        message
    )
    assert "(§ 647a.12(c))" in message
    assert "$60,000.00 on the bonus wager's $60.00 minimum" in message
    assert holdem_table(6_000, 6_000_000).payout_limit_floor_cents == 6_000_000
    with pytest.raises(InvalidConfiguration, match=r"below \$60,000\.00"):
        holdem_table(6_000, 5_999_999)


def test_647a_12_c_a_small_minimum_keeps_the_50000_floor() -> None:
    """§ 647a.12(c): with a $5 minimum, paytable A wins at most $5,000: the floor is $50,000."""
    table = holdem_table(500, 5_000_000)
    assert table.payout_limit_floor_cents == 5_000_000
    with pytest.raises(InvalidConfiguration, match=r"below \$50,000\.00.*§ 647a\.12\(c\)"):
        holdem_table(500, 4_999_999)
    # Paytable B's top line is ace-ace, 30 to 1: a $60 minimum wins $1,800.
    assert holdem_table(6_000, 5_000_000, "B").payout_limit_floor_cents == 5_000_000
    offers = [WagerOffer("bonus", TEXAS_HOLDEM_BONUS_WAGERS["bonus"].paytable("A"), 7_500, 9_000)]
    assert payout_limit_floor_cents(TEXAS_HOLDEM_BONUS, offers) == 7_500_000
    assert payout_limit_floor_cents(SIX_CARD_FORTUNE_PAI_GOW, offers) == 0


def test_647a_12_c_a_table_without_its_limit_is_told_the_computed_floor() -> None:
    with pytest.raises(InvalidConfiguration, match=r"at least \$60,000\.00 \(§ 647a\.12\(c\)\)"):
        holdem_table(6_000, 0)


def test_647a_12_c_a_limit_too_large_to_limit_anything_is_refused() -> None:
    """A limit of 2**63 - 1 cents would switch the limit the regulation requires off."""
    with pytest.raises(InvalidConfiguration, match="payout limit must be above"):
        holdem_table(500, 2**63 - 1)


def test_647a_12_c_a_rules_submission_is_checked_against_the_computed_floor() -> None:
    data = tomllib.loads((RULES / "texas-holdem-bonus.toml").read_text())
    assert parse_submission(data).payout_limits == {"texas-holdem-bonus": 5_000_000}
    raised = copy.deepcopy(data)
    raised["games"]["texas-holdem-bonus"]["wagers"]["bonus"]["min"] = "60"
    with pytest.raises(InvalidConfiguration, match=r"thb-1: payout limit \$50,000\.00 is below"):
        parse_submission(raised)
    raised["games"]["texas-holdem-bonus"]["payout_limit"] = "60000"
    assert parse_submission(raised).payout_limits == {"texas-holdem-bonus": 6_000_000}
    del raised["games"]["texas-holdem-bonus"]["payout_limit"]
    with pytest.raises(InvalidConfiguration, match=r"at least \$60,000\.00 \(§ 647a\.12\(c\)\)"):
        parse_submission(raised)


# ------------------------------------------------------------------ § 670a.11(h)


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


def test_639a_11_c_caribbean_stud_still_settles_each_seat_completely() -> None:
    """§ 639a.11(c): each player in succession, seat N first; (4)-(5) the bonus, then the
    progressive. Other games keep one phase."""
    wagers = [
        Wager(s, kind, 100, on_dealer=dealer)
        for s in (2, 5)
        for kind, dealer in (("bonus", False), (FCB, False), (FCB, True), (P, False))
    ]
    cards = deal(seat(5, "2H 3H 4H 5H 9H"), seat(2, PAIR), dealer="AS AD AC AH KD")
    plan = plan_settlement(CARIBBEAN, wagers, cards)
    assert [(p.seat, p.wager, p.on_dealer) for p in plan] == [
        (5, "bonus", False),
        (5, FCB, False),
        (5, FCB, True),
        (5, P, False),
        (2, "bonus", False),
        (2, FCB, False),
        (2, FCB, True),
        (2, P, False),
    ]
