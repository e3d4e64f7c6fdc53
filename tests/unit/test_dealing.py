"""The simulator deals by § 639a.8(d) and stacks scripted decks faithfully."""

from __future__ import annotations

from jackpot.cards import FULL_DECK, parse_cards
from table_agent.dealing import DEALER, deal, deal_order, makes_bet, shuffled_deck, stack_deck


def test_deal_order_is_one_card_to_each_player_then_the_dealer_five_times() -> None:
    assert deal_order([5, 2]) == [2, 5, DEALER] * 5


def test_deal_takes_cards_from_the_top_in_that_order() -> None:
    deck = list(FULL_DECK)
    dealt = deal(deck, [1, 3])
    assert dealt.hands[1] == (deck[0], deck[3], deck[6], deck[9], deck[12])
    assert dealt.hands[3] == (deck[1], deck[4], deck[7], deck[10], deck[13])
    assert dealt.dealer == (deck[2], deck[5], deck[8], deck[11], deck[14])
    assert len(dealt.stub) == 52 - 15


def test_shuffled_deck_is_a_permutation() -> None:
    deck = shuffled_deck()
    assert sorted(deck) == sorted(FULL_DECK)


def test_stacked_deck_deals_the_scripted_hands() -> None:
    royal = parse_cards("AS KS QS JS TS".split())
    straight_flush = parse_cards("9H TH JH QH KH".split())
    deck = stack_deck([1, 2, 4, 6], {2: royal, 6: straight_flush})
    assert sorted(deck) == sorted(FULL_DECK)
    dealt = deal(deck, [1, 2, 4, 6])
    assert dealt.hands[2] == tuple(royal)
    assert dealt.hands[6] == tuple(straight_flush)


def test_player_strategy() -> None:
    assert makes_bet(parse_cards("2S 2H 5D 8C JS".split()))
    assert makes_bet(parse_cards("AS KH 5D 8C JS".split()))
    assert not makes_bet(parse_cards("AS QH 5D 8C JS".split()))
