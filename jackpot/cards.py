"""Playing cards: parsing, the 52-card deck, and the checks a dealt round must pass.

A card is written as rank then suit: ``AS`` (ace of spades), ``KD``, ``TH`` or ``10H``,
``9C``, ``2S``. Ranks are ``2``-``9``, ``T``/``10``, ``J``, ``Q``, ``K``, ``A``; suits are
``S`` (spades), ``H`` (hearts), ``D`` (diamonds), ``C`` (clubs). Parsing is case-insensitive.

Ranks are integers 2..14 (ace high, 14), as § 639a.6(a) orders them; all suits are equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from jackpot.errors import InvalidCards

RANKS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14)
SUITS = ("S", "H", "D", "C")
ACE = 14

_RANK_BY_TEXT = {
    **{str(n): n for n in range(2, 11)},
    "T": 10,
    "J": 11,
    "Q": 12,
    "K": 13,
    "A": 14,
}
_TEXT_BY_RANK = {
    2: "2",
    3: "3",
    4: "4",
    5: "5",
    6: "6",
    7: "7",
    8: "8",
    9: "9",
    10: "T",
    11: "J",
    12: "Q",
    13: "K",
    14: "A",
}


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One card of a standard 52-card deck. ``rank`` is 2..14 (ace 14); ``suit`` one of SHDC."""

    rank: int
    suit: str
    _hash: int = field(init=False, repr=False, compare=False)
    """``hash((rank, suit))``, computed once: cards are hashed in every duplicate check and
    hand evaluation of every round."""
    text: str = field(init=False, repr=False, compare=False)
    """The card as written canonically, e.g. ``"TS"`` (what ``str()`` gives)."""

    def __post_init__(self) -> None:
        if self.rank not in _TEXT_BY_RANK or self.suit not in SUITS:
            raise InvalidCards(f"not a card: rank {self.rank!r}, suit {self.suit!r}")
        object.__setattr__(self, "_hash", hash((self.rank, self.suit)))
        object.__setattr__(self, "text", _TEXT_BY_RANK[self.rank] + self.suit)

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self.text

    @property
    def index(self) -> int:
        """A dense number 0..51, unique per card (used for fast evaluation and dealing)."""
        return (self.rank - 2) * 4 + SUITS.index(self.suit)


FULL_DECK: tuple[Card, ...] = tuple(Card(rank, suit) for rank in RANKS for suit in SUITS)

_CARD_BY_TEXT: dict[str, Card] = {
    rank_text + card.suit: card
    for card in FULL_DECK
    for rank_text, rank in _RANK_BY_TEXT.items()
    if rank == card.rank
}
"""Every way of writing each card ("TS" and "10S"), upper case, to its one interned object."""


def parse_card(text: str) -> Card:
    """Parse one card such as ``AS``, ``10h`` or ``Td``; raise :class:`InvalidCards` otherwise.

    The card returned is the one shared object of :data:`FULL_DECK` (cards are interned), so
    parsing creates nothing and equal cards are the same object.
    """
    cleaned = text.strip().upper()
    card = _CARD_BY_TEXT.get(cleaned)
    if card is not None:
        return card
    if len(cleaned) < 2:
        raise InvalidCards(f"not a card: {text!r} (write rank then suit, e.g. 'AS', '10H')")
    raise InvalidCards(f"not a card: {text!r} (ranks 2-10, T, J, Q, K, A; suits S, H, D, C)")


def exact_cards(texts: Iterable[str]) -> tuple[Card, ...] | None:
    """The cards ``texts`` name when each is written as :data:`_CARD_BY_TEXT` holds it (upper
    case, nothing around it: what table agents send), else None; :func:`parse_cards` then
    reads them, or names the first that is not a card."""
    cards = tuple(map(_CARD_BY_TEXT.get, texts))
    return cards if all(cards) else None  # type: ignore[return-value]  # no None left


def parse_cards(texts: Iterable[str]) -> tuple[Card, ...]:
    """Parse several cards; the first bad one raises :class:`InvalidCards` naming it."""
    return tuple(parse_card(text) for text in texts)


def format_cards(cards: Iterable[Card]) -> str:
    """Cards as a space-separated string, e.g. ``'AS KS QS JS TS'``."""
    return " ".join([card.text for card in cards])


def check_hand_size(cards: Sequence[Card], expected: int, whose: str) -> None:
    """Raise :class:`InvalidCards` unless ``whose`` hand holds exactly ``expected`` cards."""
    if len(cards) != expected:
        raise InvalidCards(f"{whose} has {len(cards)} cards; the game deals exactly {expected}")


def check_no_duplicates(hands: Iterable[tuple[str, Sequence[Card]]]) -> None:
    """Raise :class:`InvalidCards` if any card appears twice across all the named hands.

    One deck is used per round (§ 639a.3), so a card seen twice means a misreport or a
    foreign card; the message names the card and both places it was seen.
    """
    seen: dict[Card, str] = {}
    for whose, cards in hands:
        for card in cards:
            if card in seen:
                where = whose if seen[card] == whose else f"{seen[card]} and {whose}"
                raise InvalidCards(
                    f"card {card} is reported twice ({where}); one deck holds each card once"
                )
            seen[card] = whose
