"""Best five of 5-7 cards from the 53-card deck, joker as a bug (§ 670a.11(h)).

The exhaustive tests count every hand with the fast evaluator and compare the counts with
an independent computation: exact combinatorics over rank multisets and suit patterns,
where one representative hand per pattern is ranked by brute force (best of its five-card
subsets, the joker replaced explicitly by each card it may stand for, ranked by
:func:`jackpot.hands.poker.evaluate`). That path shares no code with the evaluator's
tables.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import random
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from math import comb
from operator import attrgetter

import pytest

from jackpot.cards import ACE, FULL_DECK, SUITS, Card
from jackpot.errors import InvalidCards
from jackpot.hands import poker
from jackpot.hands.joker_poker import (
    JOKER,
    JOKER_DECK,
    Joker,
    JokerCategory,
    JokerHandValue,
    evaluate_best_five,
    parse_joker_card,
    parse_joker_cards,
    pattern_classes,
)

C = JokerCategory

# The joker may stand for any card when it completes one of these; otherwise only an ace.
_JOKER_ANY_CARD = {
    poker.HandCategory.STRAIGHT,
    poker.HandCategory.FLUSH,
    poker.HandCategory.STRAIGHT_FLUSH,
    poker.HandCategory.ROYAL_FLUSH,
}

# Under the bug rule. Tables often quoted for 53-card poker (four of a kind 3,120, full house
# 6,552, three of a kind 137,280, two pair 123,552, pair 1,268,088) are for a fully wild
# joker: there joker + K-K-K is four kings, here it is three kings and an ace.
FIVE_CARD_COUNTS = {
    C.FIVE_ACES: 1,
    C.ROYAL_FLUSH: 24,
    C.STRAIGHT_FLUSH: 180,
    C.FOUR_OF_A_KIND: 828,
    C.FULL_HOUSE: 4_368,
    C.FLUSH: 7_804,
    C.STRAIGHT: 20_532,
    C.THREE_OF_A_KIND: 63_360,
    C.TWO_PAIR: 138_600,
    C.PAIR: 1_215_024,
    C.HIGH_CARD: 1_418_964,
}
SIX_CARD_COUNTS = {
    C.FIVE_ACES: 48,
    C.ROYAL_FLUSH: 1_132,
    C.STRAIGHT_FLUSH: 8_248,
    C.FOUR_OF_A_KIND: 19_752,
    C.FULL_HOUSE: 196_896,
    C.FLUSH: 314_944,
    C.STRAIGHT: 696_228,
    C.THREE_OF_A_KIND: 853_264,
    C.TWO_PAIR: 2_873_952,
    C.PAIR: 10_809_876,
    C.HIGH_CARD: 7_183_140,
}


def value(text: str) -> JokerHandValue:
    return evaluate_best_five(parse_joker_cards(text.split()))


# --- the independent reference ----------------------------------------------------------


def reference_five(hand: Sequence[Card | Joker]) -> JokerHandValue:
    """Five cards by brute force: try every card the joker may stand for."""
    return _reference_five(frozenset(hand))


@functools.cache
def _reference_five(hand: frozenset[Card | Joker]) -> JokerHandValue:
    naturals = [card for card in hand if isinstance(card, Card)]
    if len(naturals) == 5:
        natural = poker.evaluate(naturals)
        return JokerHandValue(JokerCategory[natural.category.name], natural.tiebreak)
    if all(card.rank == ACE for card in naturals):
        return JokerHandValue(C.FIVE_ACES, (ACE,))
    options = []
    for stand_in in FULL_DECK:
        if stand_in in naturals:
            continue
        played = poker.evaluate([*naturals, stand_in])
        if stand_in.rank == ACE or played.category in _JOKER_ANY_CARD:
            options.append(JokerHandValue(JokerCategory[played.category.name], played.tiebreak))
    return max(options)


def reference_best(hand: Sequence[Card | Joker]) -> JokerHandValue:
    return max(reference_five(five) for five in itertools.combinations(hand, 5))


def independent_counts(hand_size: int) -> Counter[JokerCategory]:
    """Category counts over all ``hand_size``-card hands of the 53-card deck, by patterns.

    :func:`pattern_classes` groups the hands into classes that rank alike; each class is
    ranked here by brute force on one representative (:func:`reference_best`), a code path
    that shares nothing with the evaluator's tables. The exhaustive tests check both the
    grouping and the evaluator against every hand.
    """
    counts: Counter[JokerCategory] = Counter()
    for hand, ways, _ in pattern_classes(hand_size):
        counts[reference_best(hand).category] += ways
    return counts


def _count_from(first: int) -> Counter[JokerCategory]:
    """Six-card hands whose lowest deck position is ``first`` (one worker's share)."""
    hands = map((JOKER_DECK[first],).__add__, itertools.combinations(JOKER_DECK[first + 1 :], 5))
    return Counter(map(attrgetter("category"), map(evaluate_best_five, hands)))


# --- exhaustive counts -------------------------------------------------------------------


def test_five_card_combinatorics() -> None:
    counts = independent_counts(5)
    assert counts == FIVE_CARD_COUNTS
    assert sum(counts.values()) == comb(53, 5) == 2_869_685


@pytest.mark.slow
def test_every_five_card_hand() -> None:
    hands = itertools.combinations(JOKER_DECK, 5)
    counts = Counter(map(attrgetter("category"), map(evaluate_best_five, hands)))
    assert counts == independent_counts(5) == FIVE_CARD_COUNTS


@pytest.mark.slow
def test_every_six_card_hand() -> None:
    # Two worker processes count (biggest shares first) while this one does the combinatorics.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        shares = pool.map(_count_from, range(len(JOKER_DECK) - 5))
        expected = independent_counts(6)
        counts: Counter[JokerCategory] = sum(shares, Counter())
    assert sum(counts.values()) == comb(53, 6) == 22_957_480
    assert counts == expected == SIX_CARD_COUNTS


def test_random_hands_match_brute_force_values() -> None:
    generator = random.Random(670)
    for size in (5, 6, 7):
        for _ in range(150):
            naturals = generator.sample(FULL_DECK, size - 1)
            hand: list[Card | Joker] = [*naturals, JOKER]
            generator.shuffle(hand)
            assert evaluate_best_five(hand) == reference_best(hand), hand
            natural_hand: list[Card] = [
                *naturals,
                generator.choice([c for c in FULL_DECK if c not in hand]),
            ]
            assert evaluate_best_five(natural_hand) == reference_best(natural_hand)


def test_joker_in_a_flush_is_the_highest_card_the_flush_lacks() -> None:
    for suit in SUITS:
        suited = [card for card in FULL_DECK if card.suit == suit]
        for four in itertools.combinations(suited, 4):
            hand: list[Card | Joker] = [*four, JOKER]
            assert evaluate_best_five(hand) == reference_best(hand)


# --- the rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "category", "tiebreak"),
    [
        ("AS AH AD AC JK", C.FIVE_ACES, (14,)),
        ("AS AH AD AC JK 2C", C.FIVE_ACES, (14,)),
        ("AS AH AD JK KS 2C", C.FOUR_OF_A_KIND, (14, 13)),
        ("JK KS QS JS TS 2C", C.ROYAL_FLUSH, (14,)),
        ("AH JK QH JH TH 2C", C.ROYAL_FLUSH, (14,)),
        ("9D TD JK QD KD 2C", C.STRAIGHT_FLUSH, (13,)),
        ("AC 2C 3C JK 5C KD", C.STRAIGHT_FLUSH, (5,)),
        ("2C 3C 4C 5C JK KD", C.STRAIGHT_FLUSH, (6,)),
        ("AS 2H 3D JK 5C KD", C.STRAIGHT, (5,)),
        ("2S 3H 4D 5C JK KD", C.STRAIGHT, (6,)),
        ("7S 8H JK TD JC 2D", C.STRAIGHT, (11,)),
        ("KS QH JD TC JK 2D", C.STRAIGHT, (14,)),
        ("2H 6H 9H JH JK 3C", C.FLUSH, (14, 11, 9, 6, 2)),
        ("2H 6H 9H AH JK 3C", C.FLUSH, (14, 13, 9, 6, 2)),
        ("KS KH JK 7D 4C 2S", C.PAIR, (13, 14, 7, 4)),
        ("KS KH KD JK 7C 2S", C.THREE_OF_A_KIND, (13, 14, 7)),
        ("KS KH KD JK AC 2S", C.FULL_HOUSE, (13, 14)),
        ("AS AH JK KD KC 2S", C.FULL_HOUSE, (14, 13)),
        ("KS KH QD QC JK 2S", C.TWO_PAIR, (13, 12, 14)),
        ("AS JK 9D 7C 4S 2S", C.PAIR, (14, 9, 7, 4)),
        ("JK KD 9D 7C 4S 2S", C.HIGH_CARD, (14, 13, 9, 7, 4)),
        ("AS AH KD KC QS QH", C.TWO_PAIR, (14, 13, 12)),
        ("9S 9H 9D 5C 5S 5H", C.FULL_HOUSE, (9, 5)),
        ("AS KS QS JS TS 9S", C.ROYAL_FLUSH, (14,)),
    ],
)
def test_rules(cards: str, category: JokerCategory, tiebreak: tuple[int, ...]) -> None:
    assert value(cards) == JokerHandValue(category, tiebreak)


def test_joker_is_an_ace_not_a_wild_card() -> None:
    assert value("KS KH KD JK 7C 2S").category is C.THREE_OF_A_KIND  # not four kings
    assert value("KS KH JK 7D 4C 2S").category is C.PAIR  # not three kings
    assert value("KS KH JK 7D 4C 2S") == value("KD KC AS 7H 4D 2C")  # the ace kicker
    assert value("KS KH JK 7D 4C 2S") > value("KD KC QS 7H 4D 2C")
    assert value("KS KH JK 7D 4C 2S") < value("AD AC 3S 7H 4D 2C")
    assert value("2S 2H JK 7C 9S 4D").category is C.PAIR


def test_tie_breaks() -> None:
    assert value("AS 2H 3D JK 5C KD") < value("2S 3H 4D 5C JK KD")  # the wheel is lowest
    assert value("AC 2C 3C JK 5C KD") < value("2D 3D 4D 5D JK KS")
    assert value("9D TD JK QD KD 2C") < value("JK KS QS JS TS 2C")
    assert value("JK KS QS JS TS 2C") < value("AS AH AD AC JK 2C")
    assert value("2H 6H 9H AH JK 3C") > value("2D 6D 9D AD QD 3C")  # joker plays as the king
    assert value("2H 6H 9H JH JK 3C") == value("2D 6D 9D JD AD 3C")  # joker plays as the ace
    assert value("AS AH JK KD KC 2S") > value("KS KH KD AC AD 2S")  # aces full beats kings
    assert value("AS JK 9D 7C 4S 2S") == value("AD AC 9H 7S 4H 3C")
    assert value("7S 8H JK TD JC 2D") == value("7D 8D 9C TC JH 2S")


def test_every_category_outranks_the_one_below() -> None:
    ladder = [
        "JK KD 9D 7C 4S 2S",
        "2S 2H 4D 7C 9S JK",
        "2S 2H 4D 4C 9S 7H",
        "2S 2H 2D 7C 9S 4D",
        "2S 3H 4D 5C JK 9S",
        "2S 4S 6S 8S JK 9D",
        "2S 2H 2D 3C 3S 9D",
        "2S 2H 2D 2C 3S 9D",
        "2S 3S 4S 5S JK 9D",
        "TS JS QS JK AS 9D",
        "AS AH AD AC JK 9D",
    ]
    values = [value(hand) for hand in ladder]
    assert values == sorted(values)
    assert [v.category for v in values] == list(JokerCategory)


def test_order_of_cards_does_not_matter() -> None:
    hand = parse_joker_cards("AH JK QH JH TH 2C 9S".split())
    expected = evaluate_best_five(hand)
    for permutation in itertools.islice(itertools.permutations(hand), 0, 5040, 97):
        assert evaluate_best_five(permutation) == expected


def test_seven_cards() -> None:
    assert value("2S 2H 2D 3C 3S 3H JK") == JokerHandValue(C.FULL_HOUSE, (3, 2))
    assert value("AS KS 9S 7S 5S 3S JK") == JokerHandValue(C.FLUSH, (14, 13, 12, 9, 7))


# --- parsing and refusals ----------------------------------------------------------------


def test_parse_joker() -> None:
    assert parse_joker_card("JK") is JOKER
    assert parse_joker_card(" jk ") is JOKER
    assert parse_joker_card("Jk") == Joker()
    assert parse_joker_card("JS") == Card(11, "S")
    assert str(JOKER) == "JK"
    assert len(JOKER_DECK) == len(set(JOKER_DECK)) == 53
    with pytest.raises(InvalidCards):
        parse_joker_card("JJ")


@pytest.mark.parametrize(
    ("cards", "message"),
    [
        ("AS KS QS JS", "5 to 7 cards"),
        ("AS KS QS JS TS 9S 8S 7S", "5 to 7 cards"),
        ("AS AS KD QC 2S 3S", "card AS appears twice"),
        ("JK KD QC 2S JK 3S", "two jokers"),
        ("JK KD QC 2S jk", "two jokers"),
    ],
)
def test_invalid_hands(cards: str, message: str) -> None:
    with pytest.raises(InvalidCards, match=message):
        value(cards)


def test_labels_round_trip() -> None:
    for category in JokerCategory:
        assert JokerCategory.from_label(category.label) is category
    assert C.FIVE_ACES.label == "five_aces"
    assert C.ROYAL_FLUSH.label == "royal_flush"
    assert [category.name for category in JokerCategory][:-1] == [
        category.name for category in poker.HandCategory
    ]
