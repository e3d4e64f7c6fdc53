"""Three-card poker hands, as Three Card Poker ranks the three cards dealt to each hand.

Each player and the dealer receive exactly three cards (§ 649a.9(b)). They rank:

* Card ranks, high to low: A K Q J 10 9 8 7 6 5 4 3 2; all suits equal.
* An ace plays high (A-K-Q, the highest straight) or low (A-2-3, the lowest straight and
  the lowest straight flush); nothing wraps around (K-A-2 is no straight).
* Hands, high to low: mini royal (A-K-Q of one suit, the highest straight flush, reported
  with its own label), straight flush, three of a kind, straight, flush, pair, high card.
  With three cards a straight is rarer than a flush and so ranks above it.
* Equal categories compare by the highest card not held by the other hand: a straight or
  straight flush by its top card (3 for A-2-3), three of a kind by its rank, a pair by the
  pair's rank and then the kicker, a flush or high card by its ranks high to low. A full
  tie is a tie; suits never break one.

Of the 22,100 three-card hands: 4 mini royal, 44 other straight flush, 52 three of a kind,
720 straight, 1,096 flush, 3,744 pair and 16,440 high card.

:func:`evaluate` returns a :class:`ThreeCardValue` whose natural ordering is the ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jackpot.cards import ACE, Card
from jackpot.errors import InvalidCards
from jackpot.hands.ranking import Category


class ThreeCardCategory(Category):
    """The three-card hands, ordered low (0) to high (6)."""

    HIGH_CARD = 0
    PAIR = 1
    FLUSH = 2
    STRAIGHT = 3
    THREE_OF_A_KIND = 4
    STRAIGHT_FLUSH = 5
    MINI_ROYAL = 6


@dataclass(frozen=True, slots=True, order=True)
class ThreeCardValue:
    """A hand's category plus the ranks that break ties, most significant first.

    Ordering two values orders the hands; equal values are a tie.
    """

    category: ThreeCardCategory
    tiebreak: tuple[int, ...]


_ACE_LOW = (ACE, 3, 2)


def evaluate(cards: Sequence[Card]) -> ThreeCardValue:
    """Rank exactly three distinct cards; raise :class:`InvalidCards` otherwise."""
    if len(cards) != 3:
        raise InvalidCards(f"a three-card poker hand has 3 cards, got {len(cards)}")
    if len(set(cards)) != 3:
        raise InvalidCards("a three-card poker hand cannot hold the same card twice")
    high, mid, low = sorted((card.rank for card in cards), reverse=True)
    if high == low:
        return ThreeCardValue(ThreeCardCategory.THREE_OF_A_KIND, (high,))
    if high == mid:
        return ThreeCardValue(ThreeCardCategory.PAIR, (high, low))
    if mid == low:
        return ThreeCardValue(ThreeCardCategory.PAIR, (mid, high))
    flush = cards[0].suit == cards[1].suit == cards[2].suit
    if high - low == 2:
        straight_high = high
    elif (high, mid, low) == _ACE_LOW:
        straight_high = 3  # A-2-3: the ace plays low, the lowest straight
    else:
        straight_high = 0
    if straight_high and flush:
        if straight_high == ACE:
            return ThreeCardValue(ThreeCardCategory.MINI_ROYAL, (ACE,))
        return ThreeCardValue(ThreeCardCategory.STRAIGHT_FLUSH, (straight_high,))
    if straight_high:
        return ThreeCardValue(ThreeCardCategory.STRAIGHT, (straight_high,))
    if flush:
        return ThreeCardValue(ThreeCardCategory.FLUSH, (high, mid, low))
    return ThreeCardValue(ThreeCardCategory.HIGH_CARD, (high, mid, low))
