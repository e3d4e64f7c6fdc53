"""Six-Card Fortune Pai Gow Poker: six cards each, one at a time clockwise from seat 1 then the
dealer, from 52 cards and one joker."""

from __future__ import annotations

import pytest

from jackpot.cards import FULL_DECK
from jackpot.hands.joker_poker import JOKER
from jackpot.irregularities import HOUSE_RULE
from table_agent.deck import DEALER, parse_deck_cards
from table_agent.games.six_card_fortune import PROCEDURE


def test_the_deck_is_53_cards_with_one_joker() -> None:
    deck = PROCEDURE.shuffled_deck()
    assert len(deck) == 53 and len(set(deck)) == 53
    assert deck.count(JOKER) == 1
    assert set(deck) - {JOKER} == set(FULL_DECK)


def test_six_passes_one_card_at_a_time() -> None:
    deck = list(PROCEDURE.deck)
    dealt = PROCEDURE.deal(deck, [7, 2])
    assert dealt.hands[2] == tuple(deck[i] for i in range(0, 18, 3))
    assert dealt.hands[7] == tuple(deck[i] for i in range(1, 18, 3))
    assert dealt.dealer == tuple(deck[i] for i in range(2, 18, 3))
    assert dealt.community == ()
    assert PROCEDURE.order([7, 2], False) == [2, 7, DEALER] * 6


def test_seven_players_and_the_dealer_take_48_of_the_53_cards() -> None:
    dealt = PROCEDURE.deal(PROCEDURE.shuffled_deck(), range(1, 8))
    assert [len(hand) for hand in dealt.hands.values()] == [6] * 7
    assert len(dealt.dealer) == 6 and len(dealt.stub) == 5
    everything = [*dealt.stub, *dealt.dealer, *(c for h in dealt.hands.values() for c in h)]
    assert sorted(map(str, everything)) == sorted(map(str, PROCEDURE.deck))


def test_the_joker_can_be_scripted_and_is_written_jk() -> None:
    hand = parse_deck_cards("JK AS AH AD AC KS".split())
    deck = PROCEDURE.stack([3], [], {3: hand})
    dealt = PROCEDURE.deal(deck, [3])
    assert dealt.hands[3] == hand
    assert str(hand[0]) == "JK"


def test_a_52_card_game_refuses_a_scripted_joker() -> None:
    from table_agent.games.caribbean_stud import PROCEDURE as CARIBBEAN_STUD

    with pytest.raises(ValueError, match="JK: not in this game's deck"):
        CARIBBEAN_STUD.stack([1], [], {1: parse_deck_cards("JK AS AH AD AC".split())})


def test_wagers_and_the_irregularity() -> None:
    assert HOUSE_RULE in PROCEDURE.misdeal_reason and "670a.13" not in PROCEDURE.misdeal_reason
    assert PROCEDURE.envy_kinds and not PROCEDURE.community_kinds
