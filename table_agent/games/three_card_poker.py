"""Three Card Poker, dealt from the hand by § 649a.9(b).

Starting with the player farthest to the dealer's left (seat 1) and going clockwise, one card
at a time to each player who placed a wager and to the dealer, until each has three cards;
then, only if a player placed a Five Card Hand Bonus Wager or a Five-Card Progressive Payout
Wager, two community cards to the area to the dealer's right. One 52-card deck per round.

Side wagers: the Progressive Payout Wager (the seat's three cards), the Five Card Hand Bonus
Wager and the Five-Card Progressive Payout Wager (the seat's three cards and the two community
cards). A misdeal (a player or the dealer with more or fewer than three cards) voids every
hand and returns every wager (§ 649a.9(f)).
"""

from __future__ import annotations

from jackpot import games
from table_agent.deck import STANDARD_DECK, one_card_at_a_time
from table_agent.games.procedure import GameProcedure

HAND_SIZE = games.THREE_CARD_POKER.hand_size
COMMUNITY_CARDS = games.THREE_CARD_POKER.community_cards


deal_order = one_card_at_a_time(HAND_SIZE, COMMUNITY_CARDS)
"""Three passes: each player (ascending seats), then the dealer; then two community cards
when a five-card wager was placed."""


PROCEDURE = GameProcedure(
    facts=games.THREE_CARD_POKER,
    deck=STANDARD_DECK,
    order=deal_order,
    misdeal_reason="misdeal: a player or the dealer has more or less than 3 cards (§ 649a.9(f))",
)
