"""The aggregate payout limit per hand, § 647a.12(c) (:mod:`controller.domain.payout_limit`):
at least the greater of $50,000 and what one patron could win per round betting the minimum
wager; winnings exclude the returned wager; a cut falls on the last wager paid."""

from __future__ import annotations

import copy
import tomllib

import pytest

from controller.domain.config import TableConfig, WagerOffer, payout_limit_floor_cents
from controller.domain.games import SIX_CARD_FORTUNE_PAI_GOW, TEXAS_HOLDEM_BONUS
from controller.domain.paytables import AwardRule
from controller.domain.rounds import Wager
from controller.domain.settlement import plan_settlement
from controller.domain.submission import parse_submission
from controller.domain.wagers import TEXAS_HOLDEM_BONUS_WAGERS
from jackpot.errors import InvalidAmount, InvalidConfiguration
from tests.helpers import ROYAL_SPADES
from tests.unit.rounds_kit import HOLDEM, RULES, TABLE, P, deal, seat


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


def test_a_base_game_win_is_reported_only_where_a_payout_limit_counts_it() -> None:
    with pytest.raises(InvalidAmount, match="only at a table with a payout limit per hand"):
        plan_settlement(TABLE, [Wager(1, P, 100)], deal(seat(1, ROYAL_SPADES, base_win=100)))


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
