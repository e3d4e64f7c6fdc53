"""Texas Hold 'Em Bonus Poker is dealt by § 647a.8(d): two passes, each player then the dealer."""

from __future__ import annotations

from jackpot.cards import FULL_DECK
from jackpot.kinds import WagerKind
from table_agent.deck import DEALER
from table_agent.games.texas_holdem_bonus import PROCEDURE


def test_two_cards_each_one_at_a_time() -> None:
    deck = list(FULL_DECK)
    dealt = PROCEDURE.deal(deck, [6, 1, 3])
    assert dealt.hands[1] == (deck[0], deck[4])
    assert dealt.hands[3] == (deck[1], deck[5])
    assert dealt.hands[6] == (deck[2], deck[6])
    assert dealt.dealer == (deck[3], deck[7])
    assert dealt.community == () and len(dealt.stub) == 52 - 8
    assert PROCEDURE.order([1], False) == [1, DEALER, 1, DEALER]


def test_bonus_wager_only_and_its_irregularities() -> None:
    assert PROCEDURE.kinds == (WagerKind.BONUS,)
    assert PROCEDURE.facts.max_seats == 6
    assert "§ 647a.13(c)" in PROCEDURE.misdeal_reason
    assert "§ 647a.13(d)" in PROCEDURE.rest_of_round_void_reason
