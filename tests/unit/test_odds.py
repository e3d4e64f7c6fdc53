"""Exact odds: the static line tables and the combinatorial counts they come from, returns
and break-even meters, and the commands."""

from __future__ import annotations

import io
import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from controller.ctl.hands import classify_stream
from controller.ctl.main import main as jackpotctl
from controller.domain.games import (
    CARIBBEAN_STUD,
    GAMES,
    SIX_CARD_FORTUNE_PAI_GOW,
    TEXAS_HOLDEM_BONUS,
    THREE_CARD_POKER,
)
from controller.domain.line_counting import COUNTERS
from controller.domain.line_tables import LINE_TABLES
from controller.domain.odds import PaytableOdds, line_counts, paytable_odds
from controller.domain.wagers import CARIBBEAN_STUD_WAGERS, TEXAS_HOLDEM_BONUS_WAGERS
from jackpot.errors import InvalidConfiguration

FIVE_CARD_HANDS = 2_598_960
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


def single_lines(wager: str) -> dict[str, int]:
    counts = CARIBBEAN_STUD_WAGERS[wager].line_counts()
    assert counts.total == FIVE_CARD_HANDS
    assert all(len(lines) == 1 for lines in counts.counts)
    return {lines[0]: count for lines, count in counts.counts.items()}


def test_combinatorial_counts_equal_the_enumeration() -> None:
    assert single_lines("progressive") == CATEGORY_COUNTS
    split = single_lines("bonus")
    # five ranks (10, J, Q, K, A) of the thirteen make a pair of 10s or better
    assert split["pair_of_tens_or_better"] == 1_098_240 * 5 // 13
    assert split["pair"] + split["pair_of_tens_or_better"] == 1_098_240


def odds_of(wager: str, paytable: str, meter_cents: int, wager_cents: int = 100) -> PaytableOdds:
    table = CARIBBEAN_STUD_WAGERS[wager]
    return paytable_odds(
        table.paytable(paytable),
        table.line_counts(),
        meter_cents=meter_cents,
        wager_cents=wager_cents,
    )


def test_progressive_paytable_b_at_a_meter() -> None:
    odds = odds_of("progressive", "B", 2_500_000)
    royal = odds.lines[0]
    assert (royal.hand, royal.probability) == ("royal_flush", Fraction(4, FIVE_CARD_HANDS))
    assert royal.returns == 25_000  # 100% of $25,000 for a $1 wager
    fixed = Fraction(
        624 * 500 + 3_744 * 100 + 5_108 * 50 + 10_200 * 10 + 54_912 * 3 + 123_552 * 2,
        FIVE_CARD_HANDS,
    )
    meter_part = Fraction(4 * 25_000 + 36 * 2_500, FIVE_CARD_HANDS)
    assert odds.expected_return == fixed + meter_part
    paying = sum(c for h, c in CATEGORY_COUNTS.items() if h not in ("pair", "high_card"))
    assert odds.hit_frequency == Fraction(paying, FIVE_CARD_HANDS)


@pytest.mark.parametrize("name", ["A", "B", "C"])
def test_breakeven_meter_is_the_first_cent_at_which_the_return_reaches_one(name: str) -> None:
    breakeven = odds_of("progressive", name, 1_000_000).breakeven_meter_cents
    assert breakeven is not None
    assert odds_of("progressive", name, breakeven).expected_return >= 1
    assert odds_of("progressive", name, breakeven - 1).expected_return < 1


def test_bonus_wager_has_no_breakeven_meter_and_pays_to_one() -> None:
    odds = odds_of("bonus", "A", 0, wager_cents=500)
    assert odds.breakeven_meter_cents is None
    pair_line = odds.lines[-1]
    assert pair_line.hand == "pair_of_tens_or_better" and pair_line.award.text == "1 to 1"
    assert pair_line.returns == Fraction(2)


def test_texas_holdem_bonus_counts_and_paytables() -> None:
    bonus = TEXAS_HOLDEM_BONUS_WAGERS["bonus"]
    counts = bonus.line_counts()
    deals = 1_326 * 1_225
    assert counts.total == deals
    player_only: Counter[str] = Counter()
    for lines, count in counts.counts.items():
        player_only[lines[-1]] += count
    assert {line: count // 1_225 for line, count in player_only.items()} == {
        "ace_ace": 6,
        "ace_king_suited": 4,
        "ace_queen_or_ace_jack_suited": 8,
        "ace_king_offsuit": 12,
        "king_king_queen_queen_or_jack_jack": 18,
        "ace_queen_or_ace_jack_offsuit": 24,
        "pair_2_through_10": 54,
        "none": 1_200,
    }
    a = paytable_odds(bonus.paytable("A"), counts, meter_cents=0, wager_cents=100)
    b = paytable_odds(bonus.paytable("B"), counts, meter_cents=0, wager_cents=100)
    assert a.lines[0].hand == "ace_ace_dealer_and_player"
    assert a.lines[0].combinations == 6  # the player's and the dealer's aces: all four
    assert a.lines[1].combinations == 6 * 1_225 - 6
    assert b.lines[0].hand == "ace_ace" and b.lines[0].combinations == 6 * 1_225
    assert a.expected_return - b.expected_return == Fraction(6 * (1_001 - 31), deals)


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


def test_classify_texas_holdem_bonus_with_the_dealers_cards() -> None:
    out = io.StringIO()
    assert (
        classify_stream(TEXAS_HOLDEM_BONUS, ["AS AH | AD AC", "AS AH", "AS KS", "AS KS QS"], out)
        == 1
    )
    first, second, third, bad = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["pays"]["bonus"] == {"A": "1,000 to 1", "B": "30 to 1"}
    assert second["hand"] == "ace_ace" and second["pays"]["bonus"]["A"] == "30 to 1"
    assert third["pays"]["bonus"] == {"A": "25 to 1", "B": "25 to 1"}
    assert "the hand has 3 cards; the game deals exactly 2" in bad["error"]


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
        "probability": 4 / FIVE_CARD_HANDS,
        "probability_exact": "1/649740",
        "award": "100% of meter",
    }
    assert document["contribution_microcents_per_wager"] == 15_000_000
    assert (
        jackpotctl(
            [
                "odds",
                "--game",
                "texas-holdem-bonus",
                "--wager",
                "bonus",
                "--paytable",
                "B",
                "--meter",
                "0",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out  # hands in words for people; the JSON keeps the labels
    assert "ace-king (same suit)" in table and "a pair of 10-10 through 2-2" in table
    assert "ace_ace" not in table
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


def test_three_card_line_counts_with_suits() -> None:
    counts = THREE_CARD_POKER.wager("progressive").line_counts()
    assert counts.total == 22_100
    by_line = {lines: count for lines, count in counts.counts.items()}
    for suit in ("spades", "hearts", "diamonds", "clubs"):
        assert by_line[(f"mini_royal_in_{suit}", "mini_royal", "straight_flush")] == 1
        assert by_line[(f"straight_flush_in_{suit}", "straight_flush")] == 11
        assert by_line[(f"flush_in_{suit}", "flush")] == 1_096 // 4
    assert by_line[("three_of_a_kind",)] == 52 and by_line[("straight",)] == 720


@pytest.mark.slow
def test_six_card_line_counts_agree_with_the_brute_force_reference() -> None:
    from tests.unit.test_joker_poker import independent_counts

    counts = SIX_CARD_FORTUNE_PAI_GOW.wager("progressive").line_counts()
    assert counts.total == 22_957_480
    categories: Counter[str] = Counter()
    for lines, count in counts.counts.items():
        categories[next(line for line in lines if "_in_" not in line)] += count
    reference = independent_counts(6)
    assert categories == {category.label: n for category, n in reference.items()}
    royal_in_spades = counts.counts[("royal_flush_in_spades", "royal_flush", "straight_flush")]
    assert royal_in_spades * 4 == categories["royal_flush"]


def test_odds_of_a_written_paytable_from_a_submission(capsys: pytest.CaptureFixture[str]) -> None:
    rules = str(Path(__file__).parents[2] / "deploy" / "rules" / "three-card-poker.toml")
    three_card = [
        "odds",
        "--game",
        "three-card-poker",
        "--wager",
        "progressive",
        "--meter",
        "10000",
    ]
    assert (
        jackpotctl([*three_card, "--paytable", "TCP-1", "--rules", rules, "--format", "json"]) == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["hands"][0] == {
        "hand": "mini_royal_in_spades",
        "combinations": 1,
        "probability": 1 / 22_100,
        "probability_exact": "1/22100",
        "award": "100% of meter",
    }
    assert document["hands"][1]["combinations"] == 3  # the other suits' mini royals
    assert jackpotctl([*three_card, "--paytable", "X", "--rules", rules]) == 1
    assert "uses paytable 'TCP-1', not 'X'" in capsys.readouterr().err
    assert jackpotctl([*three_card, "--paytable", "TCP-1"]) == 1
    assert "the seeds print no paytable" in capsys.readouterr().err


def test_classify_three_card_and_six_card_hands() -> None:
    out = io.StringIO()
    assert classify_stream(THREE_CARD_POKER, ["AS KS QS", "AS 2D 3H"], out) == 0
    assert (
        classify_stream(
            SIX_CARD_FORTUNE_PAI_GOW,
            ["JK AS AH AD AC 2S", "JK 2C 3C 4C 9H 9D", "JK JK 2C 3C 4C 5C"],
            out,
        )
        == 1
    )
    hands = [json.loads(line).get("hand") for line in out.getvalue().splitlines()]
    assert hands == ["mini_royal", "straight", "five_aces", "pair", None]


def test_classify_with_a_submission_shows_its_written_paytables_and_community_cards(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = str(Path(__file__).parents[2] / "deploy" / "rules" / "three-card-poker.toml")
    monkeypatch.setattr("sys.stdin", io.StringIO("AH KH QH | JH TH\n2C 2D 2H\nAS KS | 2C\n"))
    assert jackpotctl(["hands", "classify", "--game", "three-card-poker", "--rules", rules]) == 1
    first, second, third = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert first["five_card_hand"] == "royal_flush"
    assert first["pays"] == {
        "progressive": {"TCP-1": "$500.00"},  # a mini royal outside the declared suit
        "five_card_bonus": {"TCP-5B": "1,000 to 1"},
        "five_card_progressive": {"TCP-5P": "100% of meter"},
    }
    assert second["pays"] == {"progressive": {"TCP-1": "$60.00"}}  # no community cards
    assert "the hand has 2 cards" in third["error"]


@pytest.mark.parametrize(
    ("game", "wager", "paytable", "hand", "combinations"),
    [
        ("six-card-fortune-pai-gow", "insurance", "SCF-I", "king_high_or_less", 3_517_500),
        ("three-card-poker", "five_card_progressive", "TCP-5P", "royal_flush", 4),
        ("caribbean-stud", "five_card_bonus", "FCHB-1", "flush", 5_108),
    ],
)
def test_odds_of_the_new_wagers_are_exact(
    game: str,
    wager: str,
    paytable: str,
    hand: str,
    combinations: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = str(Path(__file__).parents[2] / "deploy" / "rules" / f"{game}.toml")
    argv = ["odds", "--game", game, "--wager", wager, "--paytable", paytable, "--meter", "25000"]
    assert jackpotctl([*argv, "--rules", rules, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    line = next(h for h in document["hands"] if h["hand"] == hand)
    assert line["combinations"] == combinations


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(name, marks=pytest.mark.slow) if name.startswith("six_card") else name
        for name in sorted(COUNTERS)
    ],
)
def test_each_static_line_table_is_the_exhaustive_count(table: str) -> None:
    """The tables requests read (controller/domain/line_tables.py) are what counting every
    deal gives; scripts/gen_line_counts.py --check runs the same comparison in make check."""
    assert set(LINE_TABLES) == set(COUNTERS)
    assert line_counts(table) == COUNTERS[table]()


def test_every_wager_reads_a_static_line_table_and_an_unknown_one_is_refused() -> None:
    for game in GAMES.values():
        for wager in game.wagers.values():
            assert wager.line_table in LINE_TABLES, (game.facts.name, wager.facts.kind)
            assert wager.line_counts().total == LINE_TABLES[wager.line_table][0]
    with pytest.raises(InvalidConfiguration, match="no line table 'seven_card'; the tables are"):
        line_counts("seven_card")
