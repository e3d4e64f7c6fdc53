"""Texas Hold 'Em Bonus Poker, dealt by § 647a.8(d).

Starting with the player farthest to the dealer's left (seat 1) and going clockwise, one card
at a time, face down, to each player who placed an Ante Wager and to the dealer, until each
has two cards. One 52-card deck per round (§ 647a.3(a)). The five community cards come later
(§ 647a.11(c)-(g)) and are not reported: the controller settles only the Texas Hold 'Em Bonus
Wager, on the player's first two cards (and the dealer's, for "ace-ace (dealer and player)",
§ 647a.12(b)). The simulator does not play the Ante, Flop, Turn and River Wagers, so it reports
their winnings (``base_game_win_cents``, for the payout limit of § 647a.12(c)) as 0.

Irregularities: a wrong number of cards voids every hand and returns every wager
(§ 647a.13(c)). An exposed dealer card before every player folded or placed his wagers voids
the rest of the round, but a Texas Hold 'Em Bonus Wager is still settled (§ 647a.13(d)).
"""

from __future__ import annotations

from jackpot import games
from table_agent.deck import STANDARD_DECK, one_card_at_a_time
from table_agent.games.procedure import GameProcedure

HAND_SIZE = games.TEXAS_HOLDEM_BONUS.hand_size


deal_order = one_card_at_a_time(HAND_SIZE)
"""Two passes: each player (ascending seats), then the dealer."""


PROCEDURE = GameProcedure(
    facts=games.TEXAS_HOLDEM_BONUS,
    deck=STANDARD_DECK,
    order=deal_order,
    misdeal_reason=(
        "misdeal: a player, the dealer or the community card area was dealt an incorrect "
        "number of cards (§ 647a.13(c))"
    ),
    rest_of_round_void_reason=(
        "a dealer card was exposed before every player folded or placed his Flop, Turn or "
        "River Wager: the rest of the round is void, Texas Hold 'Em Bonus Wagers settle "
        "(§ 647a.13(d))"
    ),
    base_game_wagers="Ante, Flop, Turn and River Wagers",
)
