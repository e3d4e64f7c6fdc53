"""Five-card poker hands ranked as § 639a.6 of the Pennsylvania rules orders them.

* Card ranks, high to low: A K Q J 10 9 8 7 6 5 4 3 2; all suits equal (§ 639a.6(a)).
* An ace completes A-2-3-4-5 (the lowest straight and straight flush) but nothing wraps
  around (Q-K-A-2-3 is no straight) (§ 639a.6(a)).
* Hands, high to low: royal flush, straight flush, four of a kind, full house, flush,
  straight, three of a kind, two pair, pair, high card (§ 639a.6(b)).
* Equal categories compare by the highest card not held by the other hand (§ 639a.6(c)),
  which for grouped hands means group ranks first (the trips of a full house before its
  pair), then kickers, high to low; a full tie is a tie.

:func:`evaluate` returns a :class:`HandValue` whose natural ordering is the ranking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement

from jackpot.cards import ACE, RANKS, Card
from jackpot.errors import InvalidCards
from jackpot.hands.ranking import Category


class HandCategory(Category):
    """The permissible five-card hands of § 639a.6(b), ordered low (0) to high (9)."""

    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    ROYAL_FLUSH = 9


@dataclass(frozen=True, slots=True, order=True)
class HandValue:
    """A hand's category plus the ranks that break ties, most significant first.

    Ordering two values orders the hands (§ 639a.6(b)-(c)); equal values are a tie.
    """

    category: HandCategory
    tiebreak: tuple[int, ...]


# Pattern of group sizes (largest first) -> category, for hands with a repeated rank.
_GROUPED = {
    (4, 1): HandCategory.FOUR_OF_A_KIND,
    (3, 2): HandCategory.FULL_HOUSE,
    (3, 1, 1): HandCategory.THREE_OF_A_KIND,
    (2, 2, 1): HandCategory.TWO_PAIR,
    (2, 1, 1, 1): HandCategory.PAIR,
}
_WHEEL = [ACE, 5, 4, 3, 2]


def evaluate(cards: Sequence[Card]) -> HandValue:
    """Rank exactly five distinct cards; raise :class:`InvalidCards` otherwise."""
    if len(cards) != 5:
        raise InvalidCards(f"a poker hand has 5 cards, got {len(cards)}")
    if len(set(cards)) != 5:
        raise InvalidCards("a poker hand cannot hold the same card twice")
    ranks = tuple(sorted((card.rank for card in cards), reverse=True))
    c0, c1, c2, c3, c4 = cards
    if c0.suit == c1.suit == c2.suit == c3.suit == c4.suit:
        return _FLUSH_VALUES[ranks]
    return _PLAIN_VALUES[ranks]


def five_rank_value(ranks: tuple[int, ...], flush: bool) -> HandValue:
    """The value of five ranks (sorted high to low), all of one suit or not."""
    counts = Counter(ranks)
    if len(counts) == 5:
        return _evaluate_distinct(list(ranks), flush)
    groups = sorted(
        counts.items(), key=lambda rank_count: (rank_count[1], rank_count[0]), reverse=True
    )
    pattern = tuple(count for _, count in groups)
    return HandValue(_GROUPED[pattern], tuple(rank for rank, _ in groups))


def _evaluate_distinct(ranks: list[int], flush: bool) -> HandValue:
    """Five different ranks (sorted high to low): straight/flush family or high card."""
    if ranks[0] - ranks[4] == 4:
        straight_high = ranks[0]
    elif ranks == _WHEEL:
        straight_high = 5  # A-2-3-4-5: the ace plays low, the lowest straight (§ 639a.6(a))
    else:
        straight_high = 0
    if straight_high and flush:
        if straight_high == ACE:
            return HandValue(HandCategory.ROYAL_FLUSH, (ACE,))
        return HandValue(HandCategory.STRAIGHT_FLUSH, (straight_high,))
    if flush:
        return HandValue(HandCategory.FLUSH, tuple(ranks))
    if straight_high:
        return HandValue(HandCategory.STRAIGHT, (straight_high,))
    return HandValue(HandCategory.HIGH_CARD, tuple(ranks))


def _build_tables() -> tuple[dict[tuple[int, ...], HandValue], dict[tuple[int, ...], HandValue]]:
    """Every multiset of five ranks (at most four of one rank) -> its value, unsuited and suited.

    6,175 unsuited and 1,287 suited entries, built once at import from :func:`five_rank_value`,
    so that :func:`evaluate` is one sort and one dictionary look-up.
    """
    plain: dict[tuple[int, ...], HandValue] = {}
    suited: dict[tuple[int, ...], HandValue] = {}
    for combo in combinations_with_replacement(sorted(RANKS, reverse=True), 5):
        if max(Counter(combo).values()) > 4:
            continue
        plain[combo] = five_rank_value(combo, flush=False)
        if len(set(combo)) == 5:
            suited[combo] = five_rank_value(combo, flush=True)
    return plain, suited


_PLAIN_VALUES, _FLUSH_VALUES = _build_tables()
