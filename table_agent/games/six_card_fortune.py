"""Six-Card Fortune Pai Gow Poker: six cards to each player and the dealer from 52 cards and
one joker (53 cards, one deck per round).

The dealing procedures of § 670a.8-10 are not among the seeds (only § 670a.11, completion of a
round, is). This simulator deals as the other games' procedures do: starting with the player
farthest to the dealer's left (seat 1) and going clockwise, one card at a time to each player
and then the dealer, until each has six cards. Seven players and the dealer take 48 cards.

Side wagers (§ 670a.11(h)): the Progressive Payout Wager (straight or better, best five of the
six cards), the Fortune Bonus Wager, optionally with the Envy lammer that entitles the seat to
Envy Bonuses for other players' qualifying hands, and the Insurance Wager. Every player's cards
are reported: any player's hand may qualify Envy Bonuses. A misdealt round is void by the
documented house rule (:data:`jackpot.irregularities.HOUSE_RULE`): the seeds do not give the
text of § 670a.13 ("relating to irregularities"), so it is never cited.
"""

from __future__ import annotations

from jackpot import games
from jackpot.irregularities import HOUSE_RULE
from table_agent.deck import DECK_WITH_JOKER, one_card_at_a_time
from table_agent.games.procedure import GameProcedure

HAND_SIZE = games.SIX_CARD_FORTUNE_PAI_GOW.hand_size


deal_order = one_card_at_a_time(HAND_SIZE)
"""Six passes: each player (ascending seats), then the dealer. No community cards."""


PROCEDURE = GameProcedure(
    facts=games.SIX_CARD_FORTUNE_PAI_GOW,
    deck=DECK_WITH_JOKER,
    order=deal_order,
    misdeal_reason=(
        f"misdeal: a player or the dealer was dealt an incorrect number of cards ({HOUSE_RULE})"
    ),
)
