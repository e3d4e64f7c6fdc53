"""Caribbean Stud Poker is dealt by § 639a.8(d): five passes, each player then the dealer."""

from __future__ import annotations

from jackpot.cards import FULL_DECK, parse_cards
from jackpot.kinds import WagerKind
from table_agent.deck import DEALER
from table_agent.games import GAMES, game_procedure
from table_agent.games.caribbean_stud import PROCEDURE, folds, makes_bet
from table_agent.wagers import PlacedWager


def test_the_registry_names_the_controllers_games() -> None:
    assert sorted(GAMES) == [
        "caribbean-stud",
        "six-card-fortune-pai-gow",
        "texas-holdem-bonus",
        "three-card-poker",
    ]
    assert game_procedure("caribbean-stud") is PROCEDURE


def test_first_cards_go_to_the_players_from_seat_one_then_the_dealer() -> None:
    deck = list(FULL_DECK)
    dealt = PROCEDURE.deal(deck, [6, 2, 4])
    # first pass: seat 2, seat 4, seat 6, dealer; second pass likewise
    assert dealt.hands[2][:2] == (deck[0], deck[4])
    assert dealt.hands[4][:2] == (deck[1], deck[5])
    assert dealt.hands[6][:2] == (deck[2], deck[6])
    assert dealt.dealer[:2] == (deck[3], deck[7])
    assert PROCEDURE.order([6, 2, 4], False) == [2, 4, 6, DEALER] * 5


def test_five_cards_each_and_no_community_cards_whatever_is_wagered() -> None:
    wagers = [PlacedWager(1, WagerKind.FIVE_CARD_BONUS, 100, on_dealer_hand=True)]
    dealt = PROCEDURE.deal(PROCEDURE.shuffled_deck(), range(1, 8), wagers)
    assert all(len(hand) == 5 for hand in dealt.hands.values())
    assert len(dealt.dealer) == 5 and dealt.community == ()
    assert len(dealt.stub) == 52 - 40
    everything = [*dealt.stub, *dealt.dealer, *(c for h in dealt.hands.values() for c in h)]
    assert sorted(map(str, everything)) == sorted(map(str, FULL_DECK))


def test_a_stacked_deck_deals_the_scripted_dealer_hand() -> None:
    dealer = parse_cards("2C 3D 5H 8S JC".split())
    royal = parse_cards("AS KS QS JS TS".split())
    deck = PROCEDURE.stack([1, 3], [], {DEALER: dealer, 3: royal})
    dealt = PROCEDURE.deal(deck, [1, 3])
    assert dealt.dealer == dealer and dealt.hands[3] == royal


def test_fold_strategy_and_side_wagers() -> None:
    assert not folds(parse_cards("2S 2H 5D 8C JS".split()))
    assert folds(parse_cards("AS QH 5D 8C JS".split()))
    assert PROCEDURE.kinds == (WagerKind.PROGRESSIVE, WagerKind.BONUS, WagerKind.FIVE_CARD_BONUS)
    assert PROCEDURE.dealer_hand_kinds == {WagerKind.FIVE_CARD_BONUS}
    assert "§ 639a.13(c)" in PROCEDURE.misdeal_reason


def test_every_card_comes_from_the_top_in_dealing_order() -> None:
    deck = list(FULL_DECK)
    dealt = PROCEDURE.deal(deck, [1, 3])
    assert dealt.hands[1] == (deck[0], deck[3], deck[6], deck[9], deck[12])
    assert dealt.hands[3] == (deck[1], deck[4], deck[7], deck[10], deck[13])
    assert dealt.dealer == (deck[2], deck[5], deck[8], deck[11], deck[14])
    assert len(dealt.stub) == 52 - 15


def test_a_shuffled_deck_is_a_permutation() -> None:
    assert sorted(map(str, PROCEDURE.shuffled_deck())) == sorted(map(str, FULL_DECK))


def test_a_stacked_deck_deals_the_scripted_hands_to_any_seats() -> None:
    royal = parse_cards("AS KS QS JS TS".split())
    straight_flush = parse_cards("9H TH JH QH KH".split())
    deck = PROCEDURE.stack([1, 2, 4, 6], [], {2: royal, 6: straight_flush})
    assert sorted(map(str, deck)) == sorted(map(str, FULL_DECK))
    dealt = PROCEDURE.deal(deck, [1, 2, 4, 6])
    assert dealt.hands[2] == tuple(royal)
    assert dealt.hands[6] == tuple(straight_flush)


def test_the_simulated_player_bets_a_pair_or_ace_king() -> None:
    assert makes_bet(parse_cards("2S 2H 5D 8C JS".split()))
    assert makes_bet(parse_cards("AS KH 5D 8C JS".split()))
    assert not makes_bet(parse_cards("AS QH 5D 8C JS".split()))
