"""Shuffling and dealing a Caribbean Stud Poker round, by the procedure of § 639a.8(d).

Starting with the player farthest to the dealer's left (seat 1) and going clockwise: one card
to each player, one to the dealer, a second to each player, a second to the dealer, then the
third, fourth and fifth in succession to each player and the dealer. One 52-card deck per
round (§ 639a.3), shuffled with the operating system's CSPRNG (``secrets``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.domain.cards import ACE, FULL_DECK, Card
from controller.domain.poker import HandCategory, evaluate

HAND_SIZE = 5
DEALER = 0  # the dealer's position in a deal order (seats are 1..7)

_rng = secrets.SystemRandom()


@dataclass(frozen=True, slots=True)
class Deal:
    """The cards of one round: each player's five, the dealer's five, and the stub."""

    hands: dict[int, tuple[Card, ...]]
    dealer: tuple[Card, ...]
    stub: tuple[Card, ...]


def shuffled_deck() -> list[Card]:
    """A new 52-card deck in random order (CSPRNG)."""
    deck = list(FULL_DECK)
    _rng.shuffle(deck)
    return deck


def deal_order(seats: Sequence[int]) -> list[int]:
    """Who receives each card, in order: five passes over the seats (ascending), then dealer."""
    ordered = sorted(seats)
    return [position for _ in range(HAND_SIZE) for position in (*ordered, DEALER)]


def deal(deck: Sequence[Card], seats: Sequence[int]) -> Deal:
    """Deal five cards to each of ``seats`` and to the dealer from the top of ``deck``."""
    order = deal_order(seats)
    if len(order) > len(deck):
        raise ValueError(f"{len(seats)} players and the dealer need {len(order)} cards")
    hands: dict[int, list[Card]] = {position: [] for position in (*seats, DEALER)}
    for position, card in zip(order, deck, strict=False):
        hands[position].append(card)
    dealer = tuple(hands.pop(DEALER))
    return Deal(
        {seat: tuple(cards) for seat, cards in hands.items()}, dealer, tuple(deck[len(order) :])
    )


def stack_deck(
    seats: Sequence[int],
    wanted: Mapping[int, Sequence[Card]],
    dealer: Sequence[Card] = (),
) -> list[Card]:
    """A deck ordered so that :func:`deal` gives ``wanted`` hands (and dealer hand, if given).

    Every other card is placed at random. Used for scripted demonstration rounds: the
    cards then travel the same path as in a shuffled round.
    """
    fixed = {**{seat: list(cards) for seat, cards in wanted.items()}}
    if dealer:
        fixed[DEALER] = list(dealer)
    used = [card for cards in fixed.values() for card in cards]
    if len(set(used)) != len(used) or any(len(c) != HAND_SIZE for c in fixed.values()):
        raise ValueError("scripted hands must be five distinct cards each")
    rest = [card for card in FULL_DECK if card not in set(used)]
    _rng.shuffle(rest)
    dealt_so_far: dict[int, int] = {}
    deck: list[Card] = []
    for position in deal_order(seats):
        index = dealt_so_far.get(position, 0)
        dealt_so_far[position] = index + 1
        deck.append(fixed[position][index] if position in fixed else rest.pop())
    return deck + rest


def makes_bet(hand: Sequence[Card]) -> bool:
    """A simple player strategy: make the Bet Wager with a pair or better, or ace-king high.

    Otherwise the player folds and forfeits every wager, the progressive included (§ 639a.11(b)).
    """
    value = evaluate(hand)
    if value.category > HandCategory.HIGH_CARD:
        return True
    return value.tiebreak[0] == ACE and value.tiebreak[1] == 13
