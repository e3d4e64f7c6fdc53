"""Five-card hand ranking, § 639a.6: exhaustive counts and the ordering rules."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from jackpot.cards import FULL_DECK, parse_cards
from jackpot.errors import InvalidCards
from jackpot.hands.poker import HandCategory, HandValue, evaluate


def value(text: str) -> HandValue:
    return evaluate(parse_cards(text.split()))


@pytest.mark.slow
def test_every_five_card_hand_is_counted_as_combinatorics_says() -> None:
    counts = Counter(evaluate(hand).category for hand in itertools.combinations(FULL_DECK, 5))
    assert counts == {
        HandCategory.ROYAL_FLUSH: 4,
        HandCategory.STRAIGHT_FLUSH: 36,
        HandCategory.FOUR_OF_A_KIND: 624,
        HandCategory.FULL_HOUSE: 3_744,
        HandCategory.FLUSH: 5_108,
        HandCategory.STRAIGHT: 10_200,
        HandCategory.THREE_OF_A_KIND: 54_912,
        HandCategory.TWO_PAIR: 123_552,
        HandCategory.PAIR: 1_098_240,
        HandCategory.HIGH_CARD: 1_302_540,
    }
    assert sum(counts.values()) == 2_598_960


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        ("AS KS QS JS TS", HandCategory.ROYAL_FLUSH),
        ("KH QH JH TH 9H", HandCategory.STRAIGHT_FLUSH),
        ("5D 4D 3D 2D AD", HandCategory.STRAIGHT_FLUSH),
        ("9C 9D 9H 9S 2C", HandCategory.FOUR_OF_A_KIND),
        ("AS AH AD KS KH", HandCategory.FULL_HOUSE),
        ("AH KH QH JH 9H", HandCategory.FLUSH),
        ("AS KH QD JC TS", HandCategory.STRAIGHT),
        ("5S 4H 3D 2C AS", HandCategory.STRAIGHT),
        ("7S 7H 7D KC 2S", HandCategory.THREE_OF_A_KIND),
        ("AS AH KD KC 2S", HandCategory.TWO_PAIR),
        ("2S 2H 9D KC AS", HandCategory.PAIR),
        ("AS KH QD JC 9S", HandCategory.HIGH_CARD),
    ],
)
def test_categories(cards: str, category: HandCategory) -> None:
    assert value(cards).category is category


def test_ace_low_straight_is_the_lowest_straight_and_straight_flush() -> None:
    assert value("5S 4H 3D 2C AS") < value("6S 5H 4D 3C 2S")
    assert value("5D 4D 3D 2D AD") < value("6H 5H 4H 3H 2H")
    assert value("KH QH JH TH 9H") < value("AH KH QH JH TH")


def test_no_wrap_around_straight() -> None:
    assert value("QS KH AD 2C 3S").category is HandCategory.HIGH_CARD
    assert value("QH KH AH 2H 3H").category is HandCategory.FLUSH


def test_ties_go_to_the_highest_card_not_in_the_other_hand() -> None:
    assert value("AS KH QD JC 9S") > value("AH KD QC JS 8H")
    assert value("AS AH KD QC 3S") > value("AD AC KH QS 2S")  # pair of aces, last kicker
    assert value("KS KH 5D 5C 9S") > value("KD KC 5S 5H 8S")  # two pair, kicker
    assert value("3S 3H 3D 2C 2S") > value("2H 2D 2S AC AS")  # full house: trips first
    assert value("AS KS 9S 7S 5S") > value("AH KH 9H 7H 4H")


def test_identical_ranks_in_other_suits_tie() -> None:
    assert value("AS KH QD JC 9S") == value("AH KD QC JS 9D")


def test_every_category_outranks_the_one_below() -> None:
    ladder = [
        "AS 2H 4D 7C 9S",
        "2S 2H 4D 7C 9S",
        "2S 2H 4D 4C 9S",
        "2S 2H 2D 7C 9S",
        "2S 3H 4D 5C 6S",
        "2S 4S 6S 8S TS",
        "2S 2H 2D 3C 3S",
        "2S 2H 2D 2C 3S",
        "2S 3S 4S 5S 6S",
        "TS JS QS KS AS",
    ]
    values = [value(hand) for hand in ladder]
    assert values == sorted(values)
    assert [v.category for v in values] == sorted(HandCategory)


@pytest.mark.parametrize("cards", ["AS KS QS JS", "AS KS QS JS TS 9S", "AS AS KD QC 2S"])
def test_not_a_five_card_hand(cards: str) -> None:
    with pytest.raises(InvalidCards):
        value(cards)


def test_labels_round_trip() -> None:
    for category in HandCategory:
        assert HandCategory.from_label(category.label) is category
    assert HandCategory.ROYAL_FLUSH.label == "royal_flush"
