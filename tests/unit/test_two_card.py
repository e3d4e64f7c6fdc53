"""Texas Hold 'Em Bonus Wager hands (§ 647a.12(b)): exhaustive counts, the lines, refusals."""

from __future__ import annotations

import itertools
from collections import Counter
from math import comb

import pytest

from jackpot.cards import ACE, FULL_DECK, SUITS, Card, parse_cards
from jackpot.errors import InvalidCards
from jackpot.hands.two_card import PRINTED_WORDING, StartingHand, classify, paytable_lines

H = StartingHand


def hand(text: str, dealer: str = "") -> StartingHand:
    return classify(parse_cards(text.split()), parse_cards(dealer.split()))


def _expected_counts() -> dict[StartingHand, int]:
    """The line counts of the 1,326 two-card hands, from combinatorics alone."""
    suits = len(SUITS)
    pair = comb(suits, 2)  # one rank, two of its four suits
    suited = suits  # two ranks, one suit
    offsuit = suits * (suits - 1)  # two ranks, two different suits
    counts = {
        H.ACE_ACE: pair,
        H.ACE_KING_SUITED: suited,
        H.ACE_QUEEN_OR_ACE_JACK_SUITED: 2 * suited,
        H.ACE_KING_OFFSUIT: offsuit,
        H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK: 3 * pair,
        H.ACE_QUEEN_OR_ACE_JACK_OFFSUIT: 2 * offsuit,
        H.PAIR_2_THROUGH_10: len(range(2, 11)) * pair,
    }
    counts[H.NONE] = comb(52, 2) - sum(counts.values())
    return counts


def test_every_two_card_hand_is_counted_as_combinatorics_says() -> None:
    counts = Counter(classify(cards) for cards in itertools.combinations(FULL_DECK, 2))
    assert counts == _expected_counts()
    assert counts == {
        H.ACE_ACE: 6,
        H.ACE_KING_SUITED: 4,
        H.ACE_QUEEN_OR_ACE_JACK_SUITED: 8,
        H.ACE_KING_OFFSUIT: 12,
        H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK: 18,
        H.ACE_QUEEN_OR_ACE_JACK_OFFSUIT: 24,
        H.PAIR_2_THROUGH_10: 54,
        H.NONE: 1_200,
    }
    assert sum(counts.values()) == 1_326
    assert H.ACE_ACE_DEALER_AND_PLAYER not in counts  # needs the dealer's cards


@pytest.mark.slow
def test_every_player_and_dealer_deal_and_only_four_aces_pay_dealer_and_player() -> None:
    counts: Counter[StartingHand] = Counter()
    dealer_and_player: list[frozenset[Card]] = []
    for player in itertools.combinations(FULL_DECK, 2):
        rest = [card for card in FULL_DECK if card not in player]
        dealers = list(itertools.combinations(rest, 2))
        lines = [classify(player, dealer) for dealer in dealers]
        counts.update(lines)
        dealer_and_player.extend(
            frozenset(player + dealer)
            for dealer, line in zip(dealers, lines, strict=True)
            if line is H.ACE_ACE_DEALER_AND_PLAYER
        )
    assert sum(counts.values()) == 1_326 * 1_225 == 1_624_350
    # The player picks two of the four aces, C(4, 2) = 6 ways; the dealer gets the other two.
    assert counts[H.ACE_ACE_DEALER_AND_PLAYER] == comb(4, 2) == 6
    four_aces = frozenset(card for card in FULL_DECK if card.rank == ACE)
    assert dealer_and_player == [four_aces] * 6
    # Any other deal is what the player's cards alone make, once per possible dealer hand.
    expected = {line: count * comb(50, 2) for line, count in _expected_counts().items()}
    expected[H.ACE_ACE] -= 6
    expected[H.ACE_ACE_DEALER_AND_PLAYER] = 6
    assert counts == expected


def test_every_dealer_hand_against_a_player_ace_ace() -> None:
    """The fast version of the exhaustive deal: only ace-ace can pay dealer and player."""
    aces = [card for card in FULL_DECK if card.rank == ACE]
    counts: Counter[StartingHand] = Counter()
    for player in itertools.combinations(aces, 2):
        rest = [card for card in FULL_DECK if card not in player]
        for dealer in itertools.combinations(rest, 2):
            line = classify(player, dealer)
            counts[line] += 1
            both_aces = all(card.rank == ACE for card in dealer)
            assert (line is H.ACE_ACE_DEALER_AND_PLAYER) == both_aces
    assert counts == {H.ACE_ACE_DEALER_AND_PLAYER: comb(4, 2), H.ACE_ACE: 6 * 1_225 - 6}


@pytest.mark.parametrize(
    ("player", "line"),
    [
        ("AS AH", H.ACE_ACE),
        ("AS KS", H.ACE_KING_SUITED),
        ("KD AD", H.ACE_KING_SUITED),
        ("AS QS", H.ACE_QUEEN_OR_ACE_JACK_SUITED),
        ("JC AC", H.ACE_QUEEN_OR_ACE_JACK_SUITED),
        ("AS KH", H.ACE_KING_OFFSUIT),
        ("KS KH", H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK),
        ("QD QC", H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK),
        ("JS JH", H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK),
        ("AS QH", H.ACE_QUEEN_OR_ACE_JACK_OFFSUIT),
        ("JD AC", H.ACE_QUEEN_OR_ACE_JACK_OFFSUIT),
        ("TS TH", H.PAIR_2_THROUGH_10),
        ("10S 10H", H.PAIR_2_THROUGH_10),
        ("2D 2C", H.PAIR_2_THROUGH_10),
        ("AS TS", H.NONE),
        ("AS 2H", H.NONE),
        ("KS QS", H.NONE),
        ("KS QH", H.NONE),
        ("7C 2D", H.NONE),
    ],
)
def test_lines(player: str, line: StartingHand) -> None:
    assert hand(player) is line


def test_ace_ace_dealer_and_player_needs_both_dealer_cards_to_be_aces() -> None:
    assert hand("AS AH", "AD AC") is H.ACE_ACE_DEALER_AND_PLAYER
    assert hand("AD AC", "AH AS") is H.ACE_ACE_DEALER_AND_PLAYER
    assert hand("AS AH", "AD KC") is H.ACE_ACE
    assert hand("AS AH", "KD AC") is H.ACE_ACE
    assert hand("AS AH", "KD KC") is H.ACE_ACE
    assert hand("AS AH") is H.ACE_ACE  # without the dealer's cards
    # The dealer's aces do nothing for a player without ace-ace.
    assert hand("KS KH", "AD AC") is H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK
    assert hand("AS KS", "AD AC") is H.ACE_KING_SUITED
    assert hand("AS 7H", "AD AC") is H.NONE


def test_paytable_lines_are_listed_highest_first_with_their_printed_wording() -> None:
    lines = paytable_lines()
    assert lines == (
        H.ACE_ACE_DEALER_AND_PLAYER,
        H.ACE_ACE,
        H.ACE_KING_SUITED,
        H.ACE_QUEEN_OR_ACE_JACK_SUITED,
        H.ACE_KING_OFFSUIT,
        H.KING_KING_QUEEN_QUEEN_OR_JACK_JACK,
        H.ACE_QUEEN_OR_ACE_JACK_OFFSUIT,
        H.PAIR_2_THROUGH_10,
    )
    assert H.NONE not in lines
    assert [line.printed for line in lines] == [
        "Ace-ace (dealer and player)",
        "Ace-ace",
        "Ace-king (same suit)",
        "Ace-queen or ace-jack (same suit)",
        "Ace-king (different suits)",
        "King-king, queen-queen or jack-jack",
        "Ace-queen or ace-jack (different suits)",
        "A pair of 10-10 through 2-2",
    ]
    assert set(PRINTED_WORDING) == set(StartingHand)


def test_labels_are_the_values_and_round_trip() -> None:
    assert [line.label for line in StartingHand] == [
        "ace_ace_dealer_and_player",
        "ace_ace",
        "ace_king_suited",
        "ace_queen_or_ace_jack_suited",
        "ace_king_offsuit",
        "king_king_queen_queen_or_jack_jack",
        "ace_queen_or_ace_jack_offsuit",
        "pair_2_through_10",
        "none",
    ]
    for line in StartingHand:
        assert line == line.label
        assert StartingHand.from_label(line.label) is line
    with pytest.raises(ValueError, match="royal"):
        StartingHand.from_label("royal_flush")


@pytest.mark.parametrize("player", ["", "AS", "AS KS QS"])
def test_a_player_hand_of_other_than_two_cards_is_refused(player: str) -> None:
    with pytest.raises(InvalidCards, match=r"player has \d+ cards"):
        hand(player)


@pytest.mark.parametrize("dealer", ["AD", "AD AC KS"])
def test_a_dealer_hand_of_other_than_none_or_two_cards_is_refused(dealer: str) -> None:
    with pytest.raises(InvalidCards, match=r"dealer has \d+ cards"):
        hand("AS AH", dealer)


@pytest.mark.parametrize(
    ("player", "dealer", "card"),
    [
        ("AS AS", "", "AS"),
        ("AS KS", "AS QD", "AS"),
        ("AS AH", "AD AH", "AH"),
        ("AS AH", "KD KD", "KD"),
    ],
)
def test_a_card_seen_twice_is_refused(player: str, dealer: str, card: str) -> None:
    with pytest.raises(InvalidCards, match=f"card {card} is reported twice"):
        hand(player, dealer)
