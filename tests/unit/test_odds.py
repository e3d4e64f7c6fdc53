"""Exact odds: combinatorial counts, returns and break-even meters (§ 639a.12(c) and (d))."""

from __future__ import annotations

import io
import json
from fractions import Fraction

import pytest

from controller.ctl.hands import classify_stream
from controller.ctl.main import main as jackpotctl
from controller.domain.games import CARIBBEAN_STUD
from controller.domain.odds import FIVE_CARD_HANDS, five_card_line_counts, paytable_odds
from controller.domain.paytables import CARIBBEAN_STUD_WAGERS, category_line, pair_of_tens_line

# All 2,598,960 five-card hands (enumerated exhaustively in test_poker.py).
CATEGORY_COUNTS = {
    "royal_flush": 4,
    "straight_flush": 36,
    "four_of_a_kind": 624,
    "full_house": 3_744,
    "flush": 5_108,
    "straight": 10_200,
    "three_of_a_kind": 54_912,
    "two_pair": 123_552,
    "pair": 1_098_240,
    "high_card": 1_302_540,
}


def test_combinatorial_counts_equal_the_enumeration() -> None:
    assert five_card_line_counts(category_line) == CATEGORY_COUNTS
    split = five_card_line_counts(pair_of_tens_line)
    # five ranks (10, J, Q, K, A) of the thirteen make a pair of 10s or better
    assert split["pair_of_tens_or_better"] == 1_098_240 * 5 // 13
    assert split["pair"] + split["pair_of_tens_or_better"] == 1_098_240


def test_progressive_paytable_b_at_a_meter() -> None:
    wager = CARIBBEAN_STUD_WAGERS["progressive"]
    odds = paytable_odds(
        wager.paytable("B"),
        five_card_line_counts(wager.line_of),
        FIVE_CARD_HANDS,
        meter_cents=2_500_000,
        wager_cents=100,
    )
    royal = odds.lines[0]
    assert (royal.hand, royal.probability) == ("royal_flush", Fraction(4, 2_598_960))
    assert royal.returns == 25_000  # 100% of $25,000 for a $1 wager
    fixed = Fraction(
        624 * 500 + 3_744 * 100 + 5_108 * 50 + 10_200 * 10 + 54_912 * 3 + 123_552 * 2,
        FIVE_CARD_HANDS,
    )
    meter_part = Fraction(4 * 25_000 + 36 * 2_500, FIVE_CARD_HANDS)
    assert odds.expected_return == fixed + meter_part
    assert odds.hit_frequency == Fraction(
        sum(c for h, c in CATEGORY_COUNTS.items() if h not in ("pair", "high_card")),
        FIVE_CARD_HANDS,
    )


@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_breakeven_meter_is_the_first_cent_at_which_the_return_reaches_one(name: str) -> None:
    wager = CARIBBEAN_STUD_WAGERS["progressive"]
    counts = five_card_line_counts(wager.line_of)

    def at(meter_cents: int) -> Fraction:
        return paytable_odds(
            wager.paytable(name), counts, FIVE_CARD_HANDS, meter_cents=meter_cents, wager_cents=100
        ).expected_return

    breakeven = paytable_odds(
        wager.paytable(name), counts, FIVE_CARD_HANDS, meter_cents=1_000_000, wager_cents=100
    ).breakeven_meter_cents
    assert breakeven is not None
    assert at(breakeven) >= 1 > at(breakeven - 1)


def test_bonus_wager_has_no_breakeven_meter_and_pays_to_one() -> None:
    wager = CARIBBEAN_STUD_WAGERS["bonus"]
    odds = paytable_odds(
        wager.paytable("A"),
        five_card_line_counts(wager.line_of),
        FIVE_CARD_HANDS,
        meter_cents=0,
        wager_cents=500,
    )
    assert odds.breakeven_meter_cents is None
    pair_line = odds.lines[-1]
    assert (pair_line.hand, pair_line.award.text, pair_line.returns) == (
        "pair_of_tens_or_better",
        "1 to 1",
        Fraction(2),
    )


def test_classify_names_hands_and_what_each_paytable_pays() -> None:
    out = io.StringIO()
    bad = classify_stream(
        CARIBBEAN_STUD,
        [
            "AS KS QS JS TS",
            "TD TC 2S 3S 4H | 2C 3C 4C 5C 7D",
            "AS AS KD QC 2S",
            "",
            "JK 2C 3C 4C 5C",
        ],
        out,
    )
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert bad == 2
    assert lines[0]["hand"] == "royal_flush"
    assert lines[0]["pays"]["progressive"] == {
        "A": "100% of meter",
        "B": "100% of meter",
        "C": "100% of meter",
    }
    assert lines[1]["pays"]["bonus"]["A"] == "1 to 1"
    assert lines[1]["pays"]["progressive"]["A"] is None
    assert lines[1]["dealer_hand"] == "high_card"
    assert "card AS is reported twice (the hand)" in lines[2]["error"]
    assert lines[3]["line"] == 5 and "not a card: 'JK'" in lines[3]["error"]


def test_odds_command_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        jackpotctl(
            [
                "odds",
                "--game",
                "caribbean-stud",
                "--wager",
                "progressive",
                "--paytable",
                "A",
                "--meter",
                "10000",
                "--format",
                "json",
                "--rate",
                "15",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert set(document) >= {"hands", "hit_frequency", "return", "breakeven_meter_cents"}
    assert document["hands"][0] == {
        "hand": "royal_flush",
        "combinations": 4,
        "probability": 4 / 2_598_960,
        "probability_exact": "1/649740",
        "award": "100% of meter",
    }
    assert document["contribution_microcents_per_wager"] == 15_000_000
    assert (
        jackpotctl(
            [
                "odds",
                "--game",
                "caribbean-stud",
                "--wager",
                "side",
                "--paytable",
                "A",
                "--meter",
                "10000",
            ]
        )
        == 1
    )
    assert "has no wager 'side'" in capsys.readouterr().err
