"""The exhaustive combinatorics behind the static line tables: for each table, how many of all
equally likely deals make each tuple of lines, counted over every deal (by classes of hands
that rank alike, weighted by how many deals each class holds; never sampling).

This is slow (the six-card tables take seconds) and runs only where a table is (re)generated
or checked: ``scripts/gen_line_counts.py`` writes :mod:`controller.domain.line_tables` from
:data:`COUNTERS`, and ``--check`` (run by ``make check``) fails when they differ. Requests read
the static tables through :func:`controller.domain.odds.line_counts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from itertools import combinations, combinations_with_replacement
from math import comb

from controller.domain.odds import (
    FIVE_CARD_CATEGORIES,
    FIVE_CARD_PAIR_OF_TENS,
    FIVE_CARD_SUITED,
    SIX_CARD_INSURANCE,
    SIX_CARD_SUITED,
    THREE_CARD_SUITED,
    TWO_CARD,
    LineCounts,
    Lines,
)
from controller.domain.wagers import (
    SINGLE_SUITED,
    SUIT_NAMES,
    category_line,
    insurance_lines,
    pair_of_tens_line,
    suited_lines,
    three_card_lines,
    two_card_lines,
)
from jackpot.cards import FULL_DECK, RANKS
from jackpot.hands import two_card
from jackpot.hands.joker_poker import evaluate_best_five, pattern_classes
from jackpot.hands.poker import HandValue, five_rank_value


@cache
def five_card_classes() -> tuple[tuple[HandValue, int], ...]:
    """Every distinct five-card hand value with its number of hands (sums to 2,598,960).

    Each multiset of ranks is weighted by its suit assignments: five different ranks have 4
    suited and 4**5 - 4 unsuited ones; a repeated rank is never suited.
    """
    classes: list[tuple[HandValue, int]] = []
    for ranks in combinations_with_replacement(sorted(RANKS, reverse=True), 5):
        counts = Counter(ranks)
        if max(counts.values()) > 4:
            continue
        if len(counts) == 5:
            classes.append((five_rank_value(ranks, flush=True), 4))
            classes.append((five_rank_value(ranks, flush=False), 4**5 - 4))
        else:
            ways = 1
            for count in counts.values():
                ways *= comb(4, count)
            classes.append((five_rank_value(ranks, flush=False), ways))
    return tuple(classes)


def _two_card() -> LineCounts:
    """Every (player's two cards, dealer's two cards) deal: 1,326 x 1,225 = 1,624,350.

    The line depends on the dealer's cards only for a player's ace-ace, and then only when
    the dealer holds the two other aces (one deal of the 1,225).
    """
    counts: Counter[Lines] = Counter()
    for player in combinations(FULL_DECK, 2):
        lines = two_card_lines(player, ())
        if lines == (two_card.StartingHand.ACE_ACE.value,):
            counts[(two_card.StartingHand.ACE_ACE_DEALER_AND_PLAYER.value, *lines)] += 1
            counts[lines] += comb(50, 2) - 1
        else:
            counts[lines] += comb(50, 2)
    return LineCounts(dict(counts), comb(52, 2) * comb(50, 2))


def _three_card_suited() -> LineCounts:
    """Every one of the 22,100 three-card hands."""
    counts = Counter(three_card_lines(hand, ()) for hand in combinations(FULL_DECK, 3))
    return LineCounts(dict(counts), comb(52, 3))


def _five_card_suited() -> LineCounts:
    """Every five-card hand (2,598,960); a one-suit class counts a quarter in each suit."""
    counts: Counter[Lines] = Counter()
    for value, ways in five_card_classes():
        label = value.category.label
        if label in SINGLE_SUITED:
            for suit in SUIT_NAMES:
                counts[suited_lines(label, suit)] += ways // 4
        else:
            counts[(label,)] += ways
    return LineCounts(dict(counts), comb(52, 5))


def _six_card_suited() -> LineCounts:
    """All 22,957,480 six-card hands of the 53-card deck, by pattern classes; a one-suit
    class counts a quarter of its hands in each suit's line."""
    counts: Counter[Lines] = Counter()
    for hand, ways, suited in pattern_classes(6):
        label = evaluate_best_five(hand).category.label
        if suited and label in SINGLE_SUITED:
            for suit in SUIT_NAMES:
                counts[suited_lines(label, suit)] += ways // 4
        else:
            counts[(label,)] += ways
    return LineCounts(dict(counts), comb(53, 6))


def _six_card_insurance() -> LineCounts:
    """All 22,957,480 six-card hands of the 53-card deck, on the Insurance Wager's lines."""
    counts: Counter[Lines] = Counter()
    for hand, ways, _ in pattern_classes(6):
        counts[insurance_lines(hand, ())] += ways
    return LineCounts(dict(counts), comb(53, 6))


def _five_card(line_of: Callable[[HandValue], str]) -> Callable[[], LineCounts]:
    """Every five-card hand (2,598,960), each on the one line ``line_of`` gives its value."""

    def count() -> LineCounts:
        counts: Counter[Lines] = Counter()
        for value, ways in five_card_classes():
            counts[(line_of(value),)] += ways
        return LineCounts(dict(counts), comb(52, 5))

    return count


COUNTERS: dict[str, Callable[[], LineCounts]] = {
    FIVE_CARD_CATEGORIES: _five_card(category_line),
    FIVE_CARD_PAIR_OF_TENS: _five_card(pair_of_tens_line),
    FIVE_CARD_SUITED: _five_card_suited,
    TWO_CARD: _two_card,
    THREE_CARD_SUITED: _three_card_suited,
    SIX_CARD_SUITED: _six_card_suited,
    SIX_CARD_INSURANCE: _six_card_insurance,
}
"""Each static line table's exhaustive count, by table name."""
