"""Caribbean Stud Poker, dealt by § 639a.8(d).

Starting with the player farthest to the dealer's left (seat 1) and going clockwise: one card
to each player who placed an Ante Wager, one to the dealer, a second to each player, a second
to the dealer, then the third, fourth and fifth in succession to each player and the dealer.
One 52-card deck per round (§ 639a.3).

Side wagers (§ 639a.7(d)(2)-(4)): the Progressive Payout Wager, the Caribbean Stud Bonus
Wager, and the Five Card Hand Bonus Wager on the player's hand, the dealer's hand, or both
(two wagers). A player who does not make the Bet Wager forfeits all wagers, a Five Card Hand
Bonus on the dealer's hand too (§ 639a.11(b)).
"""

from __future__ import annotations

from collections.abc import Sequence

from jackpot import games
from jackpot.cards import ACE, Card
from jackpot.hands.poker import HandCategory, evaluate
from table_agent.deck import STANDARD_DECK, DeckCard, one_card_at_a_time
from table_agent.games.procedure import GameProcedure

HAND_SIZE = games.CARIBBEAN_STUD.hand_size


deal_order = one_card_at_a_time(HAND_SIZE)
"""Five passes: each player (ascending seats), then the dealer. No community cards."""


def makes_bet(hand: Sequence[Card]) -> bool:
    """A simple player strategy: make the Bet Wager with a pair or better, or ace-king high.

    Otherwise the player folds and forfeits every wager on his hand (§ 639a.11(b)).
    """
    value = evaluate(hand)
    if value.category > HandCategory.HIGH_CARD:
        return True
    return value.tiebreak[0] == ACE and value.tiebreak[1] == 13


def folds(hand: Sequence[DeckCard]) -> bool:
    """Whether a simulated player folds ``hand`` (the opposite of :func:`makes_bet`)."""
    cards = [card for card in hand if isinstance(card, Card)]
    return len(cards) == HAND_SIZE and not makes_bet(cards)


PROCEDURE = GameProcedure(
    facts=games.CARIBBEAN_STUD,
    deck=STANDARD_DECK,
    order=deal_order,
    misdeal_reason="misdeal: a player was dealt an incorrect number of cards (§ 639a.13(c))",
    folds=folds,
)
