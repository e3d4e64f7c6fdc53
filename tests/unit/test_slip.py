"""What a settlement plan gives each award's hand-pay slip (the winning hand's cards, the
wager), and which fixed awards it holds for validation: those above the table's validation
threshold, a Rules Submission parameter per game (§ 639a.11(c)(5)(iii), read
conservatively)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from controller.domain.config import TableConfig
from controller.domain.rounds import Wager
from controller.domain.settlement import plan_settlement
from controller.domain.submission import parse_submission
from jackpot.errors import InvalidConfiguration
from jackpot.results import SeatOutcome
from tests.helpers import FOUR_TWOS, PAIR, ROYAL_SPADES
from tests.unit.rounds_kit import CARIBBEAN, TABLE, THREE_CARD, P, deal, seat
from tests.unit.test_submission import CARIBBEAN as CARIBBEAN_DATA


def test_an_award_carries_its_hand_and_wager() -> None:
    plan = plan_settlement(
        TABLE, [Wager(2, P, 100), Wager(4, P, 100)], deal(seat(2, ROYAL_SPADES), seat(4, PAIR))
    )
    no_award, royal = plan
    assert (royal.cards, royal.wager_cents, royal.pending_validation) == (ROYAL_SPADES, 100, False)
    assert no_award.outcome is SeatOutcome.NO_AWARD and (no_award.cards, no_award.wager_cents) == (
        "",
        0,
    )


def test_a_wager_on_the_dealers_hand_carries_the_dealers_cards() -> None:
    wagers = [Wager(3, "five_card_bonus", 300, on_dealer_hand=True)]
    plan = plan_settlement(CARIBBEAN, wagers, deal(seat(3, PAIR), dealer="2C 5C 7C 9C JC"))
    (flush,) = plan
    assert (flush.outcome, flush.hand) == (SeatOutcome.PAID, "flush")
    assert (flush.cards, flush.wager_cents, flush.on_dealer_hand) == ("2C 5C 7C 9C JC", 300, True)


def test_an_envy_bonus_carries_the_qualifying_hand() -> None:
    wagers = [Wager(s, P, 100) for s in (1, 3)]
    cards = deal(seat(1, "2C 7D 9H"), seat(3, "9S TS JS"), dealer="4S 5H 6C")
    (envy,) = [p for p in plan_settlement(THREE_CARD, wagers, cards) if p.envy_for_seat]
    assert (envy.seat, envy.envy_for_seat, envy.cards, envy.wager_cents) == (1, 3, "9S TS JS", 100)


@pytest.mark.parametrize(
    ("threshold", "held"),
    [(None, False), (0, True), (49_999, True), (50_000, False), (10_000_000, False)],
)
def test_a_fixed_award_above_the_threshold_awaits_validation(
    threshold: int | None, held: bool
) -> None:
    table = replace(TABLE, validation_threshold_cents=threshold)
    plan = plan_settlement(
        table, [Wager(2, P, 100), Wager(5, P, 100)], deal(seat(2, ROYAL_SPADES), seat(5, FOUR_TWOS))
    )
    four, royal = plan
    assert (four.amount_cents, four.pending_validation) == (50_000, held)
    assert not royal.pending_validation  # a percentage award: the store holds every one


def test_the_threshold_is_an_amount_the_controller_keeps() -> None:
    with pytest.raises(InvalidConfiguration, match="validation threshold must be"):
        replace(TABLE, validation_threshold_cents=-1)
    for threshold in (None, 0, 120_000):
        table = replace(TABLE, validation_threshold_cents=threshold)
        assert TableConfig.from_data(table.to_data()) == table


def test_the_rules_submission_declares_the_threshold_of_each_game() -> None:
    assert {
        t.validation_threshold_cents for t in parse_submission(CARIBBEAN_DATA).table_configs()
    } == {120_000}
    data = copy.deepcopy(CARIBBEAN_DATA)
    data["games"]["caribbean-stud"]["validation_threshold"] = "0"
    assert parse_submission(data).table_configs()[0].validation_threshold_cents == 0
    del data["games"]["caribbean-stud"]["validation_threshold"]
    with pytest.raises(InvalidConfiguration) as refused:
        parse_submission(data)
    assert "games.caribbean-stud: validation_threshold is required" in str(refused.value)
    assert "§ 639a.11(c)(5)(iii)" in str(refused.value)
    data["games"]["caribbean-stud"]["validation_threshold"] = 1200.5
    with pytest.raises(InvalidConfiguration, match="must be dollars as a string"):
        parse_submission(data)
