"""Caribbean Stud Poker dealing under the names of the agent's first release.

The procedures of every game are in :mod:`table_agent.games` (Caribbean Stud Poker in
:mod:`table_agent.games.caribbean_stud`); this module keeps the first release's functions for
its callers (the benchmarks, the tests): :func:`deal` and :func:`stack_deck` deal five cards
to each player and the dealer by § 639a.8(d) from a 52-card deck.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from table_agent.deck import DEALER, STANDARD_DECK, Deal, DeckCard, shuffled
from table_agent.games.caribbean_stud import HAND_SIZE, PROCEDURE, deal_order, makes_bet


def shuffled_deck() -> list[DeckCard]:
    """A new 52-card deck in random order (CSPRNG)."""
    return shuffled(STANDARD_DECK)


def deal(deck: Sequence[DeckCard], seats: Sequence[int]) -> Deal:
    """Deal five cards to each of ``seats`` and to the dealer from the top of ``deck``."""
    return PROCEDURE.deal(deck, seats)


def stack_deck(
    seats: Sequence[int],
    wanted: Mapping[int, Sequence[DeckCard]],
    dealer: Sequence[DeckCard] = (),
) -> list[DeckCard]:
    """A deck ordered so that :func:`deal` gives ``wanted`` hands (and the dealer's, if given);
    every other card is placed at random."""
    fixed = {**wanted, **({DEALER: dealer} if dealer else {})}
    return PROCEDURE.stack(seats, (), fixed)


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
