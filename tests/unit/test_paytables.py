"""Every line of the Caribbean Stud progressive paytables A, B and C, § 639a.12(d)(1)."""

from __future__ import annotations

import pytest

from controller.domain.paytables import CARIBBEAN_STUD_PROGRESSIVE, AwardRule
from jackpot.hands.poker import HandCategory as H
from jackpot.kinds import AwardKind

# As printed: hand -> (A, B, C); None is "N/A" / not on the table.
PRINTED = {
    H.ROYAL_FLUSH: ("100% of meter", "100% of meter", "100% of meter"),
    H.STRAIGHT_FLUSH: ("5,000 for 1", "10% of meter", "10% of meter"),
    H.FOUR_OF_A_KIND: ("500 for 1", "500 for 1", "200 for 1"),
    H.FULL_HOUSE: ("100 for 1", "100 for 1", "50 for 1"),
    H.FLUSH: ("50 for 1", "50 for 1", "40 for 1"),
    H.STRAIGHT: ("10 for 1", "10 for 1", "30 for 1"),
    H.THREE_OF_A_KIND: ("3 for 1", "3 for 1", "9 for 1"),
    H.TWO_PAIR: ("2 for 1", "2 for 1", None),
    H.PAIR: (None, None, None),
    H.HIGH_CARD: (None, None, None),
}


@pytest.mark.parametrize("column", [0, 1, 2])
@pytest.mark.parametrize("category", list(PRINTED))
def test_every_line(category: H, column: int) -> None:
    table = CARIBBEAN_STUD_PROGRESSIVE["ABC"[column]]
    rule = table.award_for(category.label)
    expected = PRINTED[category][column]
    assert (rule.text if rule else None) == expected


def test_only_the_three_regulation_paytables_exist() -> None:
    assert sorted(CARIBBEAN_STUD_PROGRESSIVE) == ["A", "B", "C"]
    assert all(t.citation == "§ 639a.12(d)(1)" for t in CARIBBEAN_STUD_PROGRESSIVE.values())


def test_for_one_includes_the_wager_and_to_one_adds_it() -> None:
    assert AwardRule.for_one(500).fixed_award_cents(100) == 50_000
    assert AwardRule(AwardKind.TO_ONE, multiplier=50).fixed_award_cents(100) == 5_100
    with pytest.raises(ValueError, match="computed from the meter"):
        AwardRule.percent_of_meter(10).fixed_award_cents(100)


def test_percentages_are_exact_ppm() -> None:
    assert AwardRule.percent_of_meter(100).meter_ppm == 1_000_000
    assert AwardRule.percent_of_meter(10).meter_ppm == 100_000
