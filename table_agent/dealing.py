"""Caribbean Stud Poker dealing under the names of the agent's first release.

The procedures of every game are in :mod:`table_agent.games` (Caribbean Stud Poker in
:mod:`table_agent.games.caribbean_stud`); this module keeps the first release's functions for
its callers (the benchmarks, the tests): :func:`deal` and :func:`stack_deck` deal five cards
to each player and the dealer by § 639a.8(d) from a 52-card deck.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jackpot.cards import FULL_DECK, Card
from table_agent.deck import DEALER, Deal, DeckCard, shuffled, stack_for_order
from table_agent.games import caribbean_stud
from table_agent.games.caribbean_stud import HAND_SIZE, makes_bet


def shuffled_deck() -> list[Card]:
    """A new 52-card deck in random order (CSPRNG)."""
    return shuffled(FULL_DECK)


def deal_order(seats: Sequence[int]) -> list[int]:
    """Who receives each card, in order: five passes over the seats (ascending), then dealer."""
    return caribbean_stud.deal_order(seats, False)


def deal(deck: Sequence[DeckCard], seats: Sequence[int]) -> Deal:
    """Deal five cards to each of ``seats`` and to the dealer from the top of ``deck``."""
    return caribbean_stud.PROCEDURE.deal(deck, seats)


def stack_deck(
    seats: Sequence[int],
    wanted: Mapping[int, Sequence[Card]],
    dealer: Sequence[Card] = (),
) -> list[Card]:
    """A deck ordered so that :func:`deal` gives ``wanted`` hands (and the dealer's, if given);
    every other card is placed at random."""
    fixed = {**wanted, **({DEALER: dealer} if dealer else {})}
    return stack_for_order(FULL_DECK, deal_order(seats), fixed)


__all__ = [
    "DEALER",
    "HAND_SIZE",
    "Deal",
    "deal",
    "deal_order",
    "makes_bet",
    "shuffled_deck",
    "stack_deck",
]
