"""Three-card hand ranking: exhaustive counts, the ordering rules and the tie-breaks."""

from __future__ import annotations

import itertools
from collections import Counter
from math import comb

import pytest

from jackpot.cards import FULL_DECK, RANKS, SUITS, Card, parse_cards
from jackpot.errors import InvalidCards
from jackpot.hands.three_card import ThreeCardCategory, ThreeCardValue, evaluate


def value(text: str) -> ThreeCardValue:
    return evaluate(parse_cards(text.split()))


def _expected_counts() -> dict[ThreeCardCategory, int]:
    """The category counts of the 22,100 hands, from combinatorics alone."""
    suits, ranks = len(SUITS), len(RANKS)
    sequences = ranks - 1  # A-2-3, 2-3-4, ..., Q-K-A: no wrap-around
    straight_flushes = sequences * suits
    mini_royals = suits
    return {
        ThreeCardCategory.MINI_ROYAL: mini_royals,
        ThreeCardCategory.STRAIGHT_FLUSH: straight_flushes - mini_royals,
        ThreeCardCategory.THREE_OF_A_KIND: ranks * comb(suits, 3),
        ThreeCardCategory.STRAIGHT: sequences * suits**3 - straight_flushes,
        ThreeCardCategory.FLUSH: suits * comb(ranks, 3) - straight_flushes,
        ThreeCardCategory.PAIR: ranks * comb(suits, 2) * (ranks - 1) * suits,
        ThreeCardCategory.HIGH_CARD: (comb(ranks, 3) - sequences) * (suits**3 - suits),
    }


@pytest.mark.slow
def test_every_three_card_hand_is_counted_as_combinatorics_says() -> None:
    counts = Counter(evaluate(hand).category for hand in itertools.combinations(FULL_DECK, 3))
    assert counts == _expected_counts()
    assert counts == {
        ThreeCardCategory.MINI_ROYAL: 4,
        ThreeCardCategory.STRAIGHT_FLUSH: 44,
        ThreeCardCategory.THREE_OF_A_KIND: 52,
        ThreeCardCategory.STRAIGHT: 720,
        ThreeCardCategory.FLUSH: 1_096,
        ThreeCardCategory.PAIR: 3_744,
        ThreeCardCategory.HIGH_CARD: 16_440,
    }
    assert counts[ThreeCardCategory.MINI_ROYAL] + counts[ThreeCardCategory.STRAIGHT_FLUSH] == 48
    assert sum(counts.values()) == comb(52, 3) == 22_100


@pytest.mark.slow
def test_every_hand_is_independent_of_card_order_and_ranks_by_category_first() -> None:
    values = {}
    for hand in itertools.combinations(FULL_DECK, 3):
        got = evaluate(hand)
        assert all(evaluate(order) == got for order in itertools.permutations(hand))
        values[hand] = got
    distinct = sorted(set(values.values()))
    # A higher category beats every hand of a lower one, whatever the tie-break ranks.
    for lower, higher in itertools.pairwise(distinct):
        assert lower.category <= higher.category
    assert distinct[0] == ThreeCardValue(ThreeCardCategory.HIGH_CARD, (5, 3, 2))
    assert distinct[-1] == ThreeCardValue(ThreeCardCategory.MINI_ROYAL, (14,))


def test_categories_rank_low_to_high_with_their_labels() -> None:
    assert list(ThreeCardCategory) == sorted(ThreeCardCategory)
    assert [category.label for category in ThreeCardCategory] == [
        "high_card",
        "pair",
        "flush",
        "straight",
        "three_of_a_kind",
        "straight_flush",
        "mini_royal",
    ]
    for category in ThreeCardCategory:
        assert ThreeCardCategory.from_label(category.label) is category
    with pytest.raises(KeyError):
        ThreeCardCategory.from_label("royal_flush")


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        ("AS KS QS", ThreeCardCategory.MINI_ROYAL),
        ("QH AH KH", ThreeCardCategory.MINI_ROYAL),
        ("KH QH JH", ThreeCardCategory.STRAIGHT_FLUSH),
        ("3D 2D AD", ThreeCardCategory.STRAIGHT_FLUSH),
        ("AC 2C 3C", ThreeCardCategory.STRAIGHT_FLUSH),
        ("9C 9D 9H", ThreeCardCategory.THREE_OF_A_KIND),
        ("AS AH AD", ThreeCardCategory.THREE_OF_A_KIND),
        ("AS KH QD", ThreeCardCategory.STRAIGHT),
        ("3S 2H AD", ThreeCardCategory.STRAIGHT),
        ("TS 9H 8D", ThreeCardCategory.STRAIGHT),
        ("AH KH JH", ThreeCardCategory.FLUSH),
        ("2C 3C 5C", ThreeCardCategory.FLUSH),
        ("2S 2H KC", ThreeCardCategory.PAIR),
        ("AS KH KD", ThreeCardCategory.PAIR),
        ("AS KH JD", ThreeCardCategory.HIGH_CARD),
        ("5S 3H 2D", ThreeCardCategory.HIGH_CARD),
    ],
)
def test_categories(cards: str, category: ThreeCardCategory) -> None:
    assert value(cards).category is category


def test_a_straight_beats_a_flush_with_three_cards() -> None:
    assert value("2S 3H 4D") > value("AH KH JH")
    assert value("3S 2H AD") > value("AC KC JC")
    assert value("2C 2D 2H") > value("AS KH QD")  # three of a kind beats any straight
    assert value("3D 2D AD") > value("AS AH AD")  # any straight flush beats three of a kind
    assert value("AH KH JH") > value("AS AD KC")  # any flush beats any pair


def test_ace_low_straight_is_the_lowest_straight_and_straight_flush() -> None:
    assert value("3S 2H AD") == ThreeCardValue(ThreeCardCategory.STRAIGHT, (3,))
    assert value("3S 2H AD") < value("4S 3H 2D")
    assert value("3D 2D AD") == ThreeCardValue(ThreeCardCategory.STRAIGHT_FLUSH, (3,))
    assert value("3D 2D AD") < value("4H 3H 2H")


def test_ace_high_straight_is_the_highest_and_mini_royal_tops_the_straight_flushes() -> None:
    assert value("QS KH AD") == ThreeCardValue(ThreeCardCategory.STRAIGHT, (14,))
    assert value("QS KH AD") > value("JS QH KD")
    assert value("KH QH JH") == ThreeCardValue(ThreeCardCategory.STRAIGHT_FLUSH, (13,))
    assert value("KH QH JH") < value("AS KS QS")
    assert value("AS KS QS") == value("AC KC QC")  # all four mini royals tie


def test_no_wrap_around_straight() -> None:
    assert value("KS AH 2D").category is ThreeCardCategory.HIGH_CARD
    assert value("KH AH 2H").category is ThreeCardCategory.FLUSH
    assert value("AS 2H 4D").category is ThreeCardCategory.HIGH_CARD


def test_ties_go_to_the_highest_card_not_in_the_other_hand() -> None:
    assert value("AS KH 9D") > value("AH KD 8C")
    assert value("AS 5H 3D") > value("KH QD 9S")
    assert value("AH KH 9H") > value("AC KC 8C")
    assert value("3S 3H 2D") > value("2C 2S AD")  # the pair's rank before the kicker
    assert value("KS KH 5D") > value("KD KC 4S")  # then the kicker
    assert value("KS KH AD") > value("KD KC QS")
    assert value("3S 3H 3D") > value("2C 2S 2D")
    assert value("JS QH KD") > value("TS JH QD")
    assert value("JH QH KH") > value("TD JD QD")


def test_identical_ranks_in_other_suits_tie() -> None:
    assert value("AS KH 9D") == value("AH KD 9C")
    assert value("7S 7H 2D") == value("7D 7C 2S")
    assert value("AH KH 9H") == value("AS KS 9S")
    assert value("3S 2H AD") == value("3H 2C AS")


def test_values_carry_the_tie_break_ranks_most_significant_first() -> None:
    assert value("2S KH 2D") == ThreeCardValue(ThreeCardCategory.PAIR, (2, 13))
    assert value("KS 2H KD") == ThreeCardValue(ThreeCardCategory.PAIR, (13, 2))
    assert value("9H 4H JH") == ThreeCardValue(ThreeCardCategory.FLUSH, (11, 9, 4))
    assert value("9H 4C JH") == ThreeCardValue(ThreeCardCategory.HIGH_CARD, (11, 9, 4))
    assert value("5S 5H 5D") == ThreeCardValue(ThreeCardCategory.THREE_OF_A_KIND, (5,))


@pytest.mark.parametrize(
    "cards",
    [
        (),
        (Card(14, "S"),),
        (Card(14, "S"), Card(13, "S")),
        (Card(14, "S"), Card(13, "S"), Card(12, "S"), Card(11, "S")),
        tuple(FULL_DECK),
    ],
)
def test_a_hand_of_other_than_three_cards_is_refused(cards: tuple[Card, ...]) -> None:
    with pytest.raises(InvalidCards, match="3 cards"):
        evaluate(cards)


def test_the_same_card_twice_is_refused() -> None:
    with pytest.raises(InvalidCards, match="same card twice"):
        value("AS AS KH")
    with pytest.raises(InvalidCards, match="same card twice"):
        value("7D 7D 7D")
