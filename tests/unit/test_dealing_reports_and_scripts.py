"""What the agent writes to its outbox reads back the same, and scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jackpot.hands.joker_poker import JOKER
from jackpot.kinds import WagerKind
from table_agent.deck import parse_deck_cards
from table_agent.reports import SettleReport
from table_agent.script import load_script, parse_script
from table_agent.wagers import PlacedWager


def test_wagers_round_trip_through_json() -> None:
    wagers = [
        PlacedWager(1, WagerKind.FIVE_CARD_BONUS, 500, on_dealer_hand=True),
        PlacedWager(2, WagerKind.FORTUNE_BONUS, 1_000, envy=True),
    ]
    data = json.loads(json.dumps([w.to_data() for w in wagers]))
    assert [PlacedWager.from_data(d) for d in data] == wagers


def test_settle_reports_round_trip_with_community_cards_joker_and_void() -> None:
    report = SettleReport(
        hands={1: parse_deck_cards("JK AS AH AD AC KS".split())},
        folded=(3,),
        dealer=parse_deck_cards("2C 3C 4C 5C 6C 7C".split()),
        community=parse_deck_cards("9D TD".split()),
        rest_of_round_void="exposed",
        base_game_win_cents={1: 2_500},
    )
    again = SettleReport.from_data(json.loads(json.dumps(report.to_data())))
    assert again == report
    assert again.hands[1][0] is JOKER


def test_a_script_with_wagers_community_cards_and_a_void(tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(
        json.dumps(
            {
                "label": "mini royal",
                "hands": {"4": "AS KS QS", "2": "2D 3D 4C"},
                "community": "JS TS",
                "wagers": {
                    "4": ["progressive", {"kind": "five_card_bonus", "amount_cents": 500}],
                    "2": [],
                },
                "rest_of_round_void": True,
            }
        )
    )
    label, round_ = load_script(path)
    assert label == "mini royal"
    assert [str(c) for c in round_.community] == ["JS", "TS"]
    assert round_.wagers == {
        4: [
            PlacedWager(4, WagerKind.PROGRESSIVE, 0),
            PlacedWager(4, WagerKind.FIVE_CARD_BONUS, 500),
        ],
        2: [],
    }
    assert round_.rest_of_round_void is True


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"hands": {"1": "AS KS"}, "wagers": {"2": ["bonus"]}}, "seat 2 has wagers but no hand"),
        ({"hands": {"1": "AS KS"}, "wagers": {"1": ["ante"]}}, "unknown wager kind 'ante'"),
        ({"hands": {"1": "AS KS"}, "folded": [3]}, "a folded seat must have its hand"),
        ({"hands": {"1": ["AS", "KS"]}}, "cards must be written as one string"),
        (
            {"hands": {"1": "AS KS"}, "wagers": {"1": [{"kind": "bonus", "amount_cents": 1.5}]}},
            "whole number of cents",
        ),
    ],
)
def test_script_errors_name_the_problem(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_script(data, "x")
