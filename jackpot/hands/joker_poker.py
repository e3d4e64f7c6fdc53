"""Best five-card poker hand from five to seven cards dealt from 52 cards plus one joker.

Six-Card Fortune Pai Gow Poker deals six cards per seat from a 53-card deck: the 52 cards of
:mod:`jackpot.cards` plus one joker. For its optional wagers (the Progressive
Payout Wager pays a straight or better, the Fortune Bonus three of a kind or better, and
envy bonuses follow qualifying hands) the dealer "rearranges the six cards to form the
highest ranking hand" (§ 670a.11(h)), so a seat's hand is the best five-card hand that any
five of its six cards make. The rules implemented here:

* Card ranks, high to low: A K Q J 10 9 8 7 6 5 4 3 2; all suits equal. An ace also
  completes A-2-3-4-5, the lowest straight and straight flush; nothing wraps around.
* The joker is a "bug", not a full wild card. It counts as an ace, or it completes a
  straight, a flush, a straight flush or a royal flush, taking whatever rank and suit that
  hand needs (so it may also fill A-2-3-4-5, or a gap in 9-10-J-Q-K).
* As an ace it pairs with aces only: joker + K-K is a pair of kings with an ace kicker,
  joker + K-K-K is three kings and an ace (never four kings), joker + A-A-A is four aces.
  Four aces and the joker make **five aces**, the highest hand.
* In a flush that is not a straight flush the joker ranks as the highest card the flush
  lacks in its suit: the ace of that suit, or the king if the flush holds the ace, and so
  on. (It never duplicates a card of the flush.)
* Hands, high to low: five aces, royal flush, straight flush, four of a kind, full house,
  flush, straight, three of a kind, two pair, pair, high card. Equal categories compare
  by group ranks first (the trips of a full house before its pair), then kickers, high to
  low; straights and straight flushes by their top card (A-2-3-4-5 is 5-high, the lowest);
  a full tie is a tie. Because the joker may play as an ace, a four-flush plus joker and a
  five-card flush compare by ranks like any two flushes.

:func:`evaluate_best_five` returns a :class:`JokerHandValue` whose natural ordering is the
ranking. It is built for exhaustive use (all 22,957,480 six-card hands of the 53-card
deck take under a minute of one core): one pass over the cards packs the rank multiset and
the joker into one integer, the cards held into one bit mask per suit and the suit counts
into a third integer. The rank key looks up the best hand on ranks alone, the suit counts
tell whether (and in which suit) a flush is possible, and that suit's mask looks up the
best flush-family hand. Both value tables are memos filled on first use by the plain rules
below, so importing stays cheap; they only ever grow to the finite set of rank patterns
and never change an answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, combinations_with_replacement, product
from math import comb, prod
from typing import ClassVar, NoReturn

from jackpot.cards import ACE, FULL_DECK, SUITS, Card, parse_card
from jackpot.errors import InvalidCards
from jackpot.hands.ranking import Category

JOKER_TEXT = "JK"
_SUITS = SUITS  # spades first: the suit of every suited representative


@dataclass(frozen=True, slots=True)
class Joker:
    """The one joker of the 53-card deck. Use the module constant :data:`JOKER`.

    All instances are equal (there is one joker per deck), so a hand holding two of them is
    refused as a card reported twice.
    """

    text: ClassVar[str] = JOKER_TEXT
    """As written (what ``str()`` gives), as :attr:`Card.text`."""

    def __str__(self) -> str:
        return JOKER_TEXT


JOKER = Joker()
"""The joker ("bug") of a 53-card deck; written ``JK``."""

JOKER_DECK: tuple[Card | Joker, ...] = (*FULL_DECK, JOKER)
"""The 53-card deck: the 52 cards of :data:`cards.FULL_DECK` followed by the joker."""


def parse_joker_card(text: str) -> Card | Joker:
    """Parse ``JK`` (any case) as the joker, or anything else as :func:`cards.parse_card` does."""
    if text.strip().upper() == JOKER_TEXT:
        return JOKER
    return parse_card(text)


def parse_joker_cards(texts: Iterable[str]) -> tuple[Card | Joker, ...]:
    """Parse several cards, ``JK`` for the joker; the first bad one raises :class:`InvalidCards`."""
    return tuple(parse_joker_card(text) for text in texts)


class JokerCategory(Category):
    """Five-card hands with the joker as a bug, ordered low (0) to high (10)."""

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
    FIVE_ACES = 10


@dataclass(frozen=True, slots=True, order=True)
class JokerHandValue:
    """A hand's category plus the ranks that break ties, most significant first.

    Ordering two values orders the hands; equal values are a tie. Tie-breaks compare only
    within one category: group ranks then kickers for grouped hands and high cards, the
    five ranks of a flush, the top card of a straight or straight flush (5 for A-2-3-4-5).
    """

    category: JokerCategory
    tiebreak: tuple[int, ...]


MIN_CARDS = 5
MAX_CARDS = 7

# Rank multiset key: three bits per rank (counts 0..4) at bit 3 * rank, the joker above them.
_RANK_SHIFT = 3
_JOKER_FLAG = 1 << (_RANK_SHIFT * (ACE + 1))
_RANK_WEIGHT = tuple(1 << (_RANK_SHIFT * rank) for rank in range(ACE + 1))
_RANK_FIELD = (1 << _RANK_SHIFT) - 1
# Suit masks: one 16-bit block per suit in one integer, bit ``rank`` set for each card held.
_SUIT_BITS = 16
_SUIT_BLOCK = (1 << _SUIT_BITS) - 1
_SUIT_BASE = {"S": 1, "H": 1 << _SUIT_BITS, "D": 1 << (2 * _SUIT_BITS), "C": 1 << (3 * _SUIT_BITS)}
_SUIT_SHIFTS = (0, _SUIT_BITS, 2 * _SUIT_BITS, 3 * _SUIT_BITS)
_SUITED_JOKER = 1 << _SUIT_BITS  # joker flag in a flush key, above one suit's block
_JOKER_COUNT = 1 << (4 * _SUIT_BITS)  # the joker in a suit-count key, above the four suits

# Straight highs, best first, each with the ranks it needs (A-2-3-4-5 is 5-high).
_STRAIGHTS: tuple[tuple[int, frozenset[int]], ...] = (
    *((high, frozenset(range(high - 4, high + 1))) for high in range(ACE, 5, -1)),
    (5, frozenset((ACE, 2, 3, 4, 5))),
)
# Group sizes (largest first) -> category, for five ranks with a repeat.
_GROUPED = {
    (5,): JokerCategory.FIVE_ACES,
    (4, 1): JokerCategory.FOUR_OF_A_KIND,
    (3, 2): JokerCategory.FULL_HOUSE,
    (3, 1, 1): JokerCategory.THREE_OF_A_KIND,
    (2, 2, 1): JokerCategory.TWO_PAIR,
    (2, 1, 1, 1): JokerCategory.PAIR,
}

# The memo tables: rank-multiset key -> best unsuited hand (at most ~100,000 entries);
# one suit's mask plus joker flag -> best flush-family hand (at most 16,384 entries).
_PLAIN: dict[int, JokerHandValue] = {}
_SUITED: dict[int, JokerHandValue] = {}


def evaluate_best_five(cards: Sequence[Card | Joker]) -> JokerHandValue:
    """The best five-card hand among ``cards`` (5 to 7 of the 53-card deck), joker as a bug.

    Raise :class:`InvalidCards` for a wrong number of cards, a card given twice or more than
    one joker (the deck holds one).
    """
    count = len(cards)
    if not MIN_CARDS <= count <= MAX_CARDS:
        raise InvalidCards(
            f"a joker-deck hand has {MIN_CARDS} to {MAX_CARDS} cards to choose five from, "
            f"got {count}"
        )
    rank_key = 0  # the rank multiset and the joker: key of the _PLAIN table
    held = 0  # one 16-bit block per suit, bit ``rank`` set for each card held
    suit_counts = 0  # cards per suit, one 16-bit block per suit, the joker in a fifth block
    for card in cards:
        if isinstance(card, Joker):
            rank_key += _JOKER_FLAG
            suit_counts += _JOKER_COUNT
            continue
        base = _SUIT_BASE[card.suit]
        rank = card.rank
        held |= base << rank
        suit_counts += base
        rank_key += _RANK_WEIGHT[rank]
    if held.bit_count() + (rank_key >= _JOKER_FLAG) != count:  # a card or the joker repeated
        _refuse_repeats(cards)
    value = _PLAIN.get(rank_key)
    if value is None:
        value = _PLAIN[rank_key] = _plain_value(rank_key)
    shift = _FLUSH_SHIFT.get(suit_counts)
    if shift is not None:
        key = (held >> shift) & _SUIT_BLOCK
        if rank_key & _JOKER_FLAG:
            key |= _SUITED_JOKER
        flush = _SUITED.get(key)
        if flush is None:
            flush = _SUITED[key] = _suited_value(key)
        if flush.category > value.category:
            value = flush
    return value


def _refuse_repeats(cards: Sequence[Card | Joker]) -> NoReturn:
    """Raise :class:`InvalidCards` naming the card (or the joker) that ``cards`` repeat."""
    seen: set[Card | Joker] = set()
    for card in cards:
        if card in seen:
            if isinstance(card, Joker):
                raise InvalidCards("a hand cannot hold two jokers; the deck holds one joker")
            raise InvalidCards(f"card {card} appears twice in one hand; the deck holds it once")
        seen.add(card)
    raise AssertionError("no repeated card found")  # pragma: no cover - callers check first


def _flush_shifts() -> dict[int, int]:
    """Suit-count key -> where the flush suit's block starts, for hands that hold a flush.

    A flush needs five cards of one suit, or four and the joker. At most one suit can: two
    would take eight cards, and no more than seven are evaluated.
    """
    shifts: dict[int, int] = {}
    for joker in (0, 1):
        for counts in product(range(MAX_CARDS + 1), repeat=len(_SUIT_SHIFTS)):
            if not MIN_CARDS <= sum(counts) + joker <= MAX_CARDS:
                continue
            key = joker * _JOKER_COUNT + sum(
                n << at for n, at in zip(counts, _SUIT_SHIFTS, strict=True)
            )
            for count, at in zip(counts, _SUIT_SHIFTS, strict=True):
                if count + joker >= 5:
                    shifts[key] = at
    return shifts


def _plain_value(rank_key: int) -> JokerHandValue:
    """Best hand ignoring suits, from a rank-multiset key (fills the :data:`_PLAIN` table).

    The joker plays as an ace for grouped hands and high cards (four aces and the joker are
    five aces), or as any rank that completes a straight.
    """
    ranks = [
        rank
        for rank in range(ACE, 1, -1)
        for _ in range((rank_key >> (_RANK_SHIFT * rank)) & _RANK_FIELD)
    ]
    joker = rank_key >= _JOKER_FLAG
    if joker:
        ranks.insert(0, ACE)
    best = max(_five_ranks_value(five) for five in set(combinations(ranks, 5)))
    if joker and best.category <= JokerCategory.STRAIGHT:
        # As an ace the joker may already make A-2-3-4-5; filling a gap may do better.
        present = set(ranks[1:])
        for high, needs in _STRAIGHTS:
            if len(needs - present) <= 1:
                return max(best, JokerHandValue(JokerCategory.STRAIGHT, (high,)))
    return best


def _five_ranks_value(ranks: tuple[int, ...]) -> JokerHandValue:
    """Five unsuited ranks (sorted high to low, up to five aces): grouped, straight or high."""
    counts: dict[int, int] = {}
    for rank in ranks:
        counts[rank] = counts.get(rank, 0) + 1
    if len(counts) < 5:
        groups = sorted(counts.items(), key=lambda rank_count: (rank_count[1], rank_count[0]))
        groups.reverse()
        pattern = tuple(size for _, size in groups)
        return JokerHandValue(_GROUPED[pattern], tuple(rank for rank, _ in groups))
    present = set(ranks)
    for high, needs in _STRAIGHTS:
        if needs == present:
            return JokerHandValue(JokerCategory.STRAIGHT, (high,))
    return JokerHandValue(JokerCategory.HIGH_CARD, ranks)


def _suited_value(key: int) -> JokerHandValue:
    """Best flush-family hand from one suit's cards (fills the :data:`_SUITED` table).

    ``key`` has bit ``rank`` set for each card of the suit and :data:`_SUITED_JOKER` if the
    joker is held; the caller guarantees at least five cards counting the joker. The joker
    fills one gap of a straight flush, else ranks as the highest card the flush lacks.
    """
    joker = bool(key & _SUITED_JOKER)
    present = {rank for rank in range(2, ACE + 1) if key >> rank & 1}
    for high, needs in _STRAIGHTS:
        if len(needs - present) <= (1 if joker else 0):
            if high == ACE:
                return JokerHandValue(JokerCategory.ROYAL_FLUSH, (ACE,))
            return JokerHandValue(JokerCategory.STRAIGHT_FLUSH, (high,))
    if joker:
        present.add(max(rank for rank in range(2, ACE + 1) if rank not in present))
    return JokerHandValue(JokerCategory.FLUSH, tuple(sorted(present, reverse=True)[:5]))


_FLUSH_SHIFT = _flush_shifts()


def pattern_classes(hand_size: int) -> Iterator[tuple[list[Card | Joker], int, bool]]:
    """Every ``hand_size``-card hand of the 53-card deck, grouped into classes that rank alike.

    Yields ``(representative, hands, suited)``: a hand is a rank multiset, a suit for each
    card and maybe the joker. A flush needs five cards of one suit (four with the joker), and
    in at most seven cards only one suit can hold that many, so the suit assignments of one
    multiset split into those where one suit holds exactly the ranks of a set ``S`` (big
    enough for a flush; ``suited``: the representative holds ``S`` in spades and ``hands``
    counts all four suits alike) and the rest, which rank on their ranks alone. The counts
    add up to C(53, hand_size).
    """
    for joker in (False, True):
        extra: list[Card | Joker] = [JOKER] if joker else []
        for ranks in combinations_with_replacement(
            sorted({c.rank for c in FULL_DECK}), hand_size - joker
        ):
            multiset = Counter(ranks)
            if max(multiset.values()) > 4:
                continue
            total = prod(comb(4, n) for n in multiset.values())
            flush_ways = 0
            distinct = sorted(multiset)
            for size in range(5 - joker, len(distinct) + 1):
                for suited in combinations(distinct, size):
                    ways = 4 * prod(
                        comb(3, n - 1) if rank in suited else comb(3, n)
                        for rank, n in multiset.items()
                    )
                    if ways:
                        flush_ways += ways
                        yield [*_suited_representative(multiset, set(suited)), *extra], ways, True
            if total > flush_ways:
                yield [*_unsuited_representative(multiset), *extra], total - flush_ways, False


def _suited_representative(multiset: Counter[int], suited: set[int]) -> list[Card]:
    """One spade for each rank of ``suited``; every other card a heart, diamond or club."""
    cards: list[Card] = []
    for rank, n in multiset.items():
        suits = _SUITS[:n] if rank in suited else _SUITS[1 : n + 1]
        cards.extend(Card(rank, suit) for suit in suits)
    return cards


def _unsuited_representative(multiset: Counter[int]) -> list[Card]:
    """Suits dealt round-robin: at most two of a suit in up to eight cards, so no flush."""
    ranks = sorted(multiset.elements())
    return [Card(rank, _SUITS[i % 4]) for i, rank in enumerate(ranks)]


def flush_suit(cards: Sequence[Card | Joker]) -> str | None:
    """The suit in which ``cards`` hold a flush (five of it, or four and the joker), if any."""
    joker = any(isinstance(card, Joker) for card in cards)
    suits = Counter(card.suit for card in cards if isinstance(card, Card))
    for suit, count in suits.items():
        if count + joker >= 5:
            return suit
    return None
