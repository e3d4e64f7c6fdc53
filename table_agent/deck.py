"""Decks and the mechanics every dealing procedure shares.

A procedure is written as a *deal order*: who receives each card from the top of one
shuffled deck, in turn, as positions: a seat number (1..7; seat 1 is the player farthest to the
dealer's left), :data:`DEALER` or :data:`COMMUNITY`. :func:`deal_in_order` follows it;
:func:`stack_for_order` builds a deck from which it deals chosen hands (scripted rounds), so a
scripted card travels the same path as a shuffled one. Decks are shuffled with the operating
system's CSPRNG (``secrets.SystemRandom``), one deck per round.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from jackpot.cards import FULL_DECK, Card
from jackpot.hands.joker_poker import JOKER_DECK, Joker, parse_joker_cards

DeckCard = Card | Joker
"""A card of a 52-card deck, or the joker of the 53-card Six-Card Fortune deck."""

STANDARD_DECK: tuple[DeckCard, ...] = FULL_DECK
"""The 52-card deck."""

DECK_WITH_JOKER: tuple[DeckCard, ...] = JOKER_DECK
"""The 53-card deck: 52 cards and one joker (``JK``)."""

DEALER = 0
"""The dealer's position in a deal order (seats are 1..7)."""

COMMUNITY = -1
"""The community-card area's position in a deal order (Three Card Poker's two cards)."""

_rng = secrets.SystemRandom()


@dataclass(frozen=True, slots=True)
class Deal:
    """The cards of one round: each player's hand by seat, the dealer's, the community cards
    (empty where none were dealt) and the stub (the undealt rest of the deck, in order)."""

    hands: dict[int, tuple[DeckCard, ...]]
    dealer: tuple[DeckCard, ...]
    community: tuple[DeckCard, ...]
    stub: tuple[DeckCard, ...]


C = TypeVar("C", Card, DeckCard)
"""A card type: 52-card decks hold only :class:`Card`, the 53-card deck the joker too."""


def shuffled(deck: Sequence[C]) -> list[C]:
    """A new copy of ``deck`` in random order (CSPRNG)."""
    cards = list(deck)
    _rng.shuffle(cards)
    return cards


def rounds_of(players: Sequence[int], passes: int) -> list[int]:
    """``passes`` times: one card to each player clockwise from the lowest seat, then the
    dealer. The order of § 639a.8(d), § 647a.8(d) and § 649a.9(b)."""
    ordered = sorted(players)
    return [position for _ in range(passes) for position in (*ordered, DEALER)]


DealOrder = Callable[[Sequence[int], bool], list[int]]
"""(players, with community cards) -> who receives each card from the top of the deck."""


def one_card_at_a_time(hand_size: int, community_cards: int = 0) -> DealOrder:
    """The deal order of a game that gives each player and then the dealer one card a pass
    until each holds ``hand_size`` (:func:`rounds_of`), then, when asked for,
    ``community_cards`` to the community area."""

    def order(players: Sequence[int], with_community: bool = False) -> list[int]:
        community = [COMMUNITY] * (community_cards if with_community else 0)
        return rounds_of(players, hand_size) + community

    return order


def deal_in_order(deck: Sequence[DeckCard], order: Sequence[int], players: Sequence[int]) -> Deal:
    """Give the top cards of ``deck`` to the positions of ``order`` in turn.

    Every player of ``players`` gets a hand (empty if ``order`` never names it); raise
    ValueError if the deck is too short.
    """
    if len(order) > len(deck):
        raise ValueError(f"{len(players)} players and the dealer need {len(order)} cards")
    hands: dict[int, list[DeckCard]] = {position: [] for position in (*players, DEALER, COMMUNITY)}
    for position, card in zip(order, deck, strict=False):
        hands[position].append(card)
    dealer = tuple(hands.pop(DEALER))
    community = tuple(hands.pop(COMMUNITY))
    return Deal(
        {seat: tuple(cards) for seat, cards in hands.items()},
        dealer,
        community,
        tuple(deck[len(order) :]),
    )


def stack_for_order(
    deck: Sequence[C], order: Sequence[int], wanted: Mapping[int, Sequence[C]]
) -> list[C]:
    """``deck`` ordered so that dealing ``order`` gives each position of ``wanted`` its cards.

    ``wanted`` maps positions (seats, :data:`DEALER`, :data:`COMMUNITY`) to exactly the cards
    the order deals them; every other card is placed at random. Raise ValueError for a card
    not in ``deck``, a card wanted twice, or a wrong number of cards for a position.
    """
    used = [card for cards in wanted.values() for card in cards]
    if len(set(used)) != len(used):
        raise ValueError("scripted hands hold a card twice; one deck holds each card once")
    foreign = [str(card) for card in used if card not in deck]
    if foreign:
        raise ValueError(f"{' '.join(foreign)}: not in this game's deck")
    for position, cards in wanted.items():
        dealt = order.count(position)
        if len(cards) != dealt:
            raise ValueError(f"{_name(position)}: {len(cards)} cards scripted; it is dealt {dealt}")
    chosen = set(used)
    rest = [card for card in deck if card not in chosen]
    _rng.shuffle(rest)
    taken: dict[int, int] = {}
    stacked: list[C] = []
    for position in order:
        index = taken.get(position, 0)
        taken[position] = index + 1
        stacked.append(wanted[position][index] if position in wanted else rest.pop())
    return stacked + rest


def _name(position: int) -> str:
    if position == DEALER:
        return "the dealer"
    if position == COMMUNITY:
        return "the community cards"
    return f"seat {position}"


def parse_deck_cards(texts: Iterable[str]) -> tuple[DeckCard, ...]:
    """Parse cards as the wire writes them ("AS", "10H", joker "JK")."""
    return parse_joker_cards(texts)


def card_texts(cards: Iterable[DeckCard]) -> list[str]:
    """Cards as the wire writes them."""
    return [str(card) for card in cards]
