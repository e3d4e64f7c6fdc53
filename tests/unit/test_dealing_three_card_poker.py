"""Three Card Poker is dealt by § 649a.9(b): three cards one at a time clockwise from seat 1
to each player and the dealer, then two community cards only with a five-card wager."""

from __future__ import annotations

import pytest

from jackpot.cards import FULL_DECK, parse_cards
from jackpot.kinds import WagerKind
from table_agent.deck import COMMUNITY, DEALER
from table_agent.games.three_card_poker import PROCEDURE
from table_agent.wagers import PlacedWager

PROGRESSIVE = PlacedWager(1, WagerKind.PROGRESSIVE, 100)
FIVE_CARD_BONUS = PlacedWager(3, WagerKind.FIVE_CARD_BONUS, 500)
FIVE_CARD_PROGRESSIVE = PlacedWager(5, WagerKind.FIVE_CARD_PROGRESSIVE, 100)


def test_three_passes_then_the_community_cards() -> None:
    deck = list(FULL_DECK)
    dealt = PROCEDURE.deal(deck, [5, 1, 3], [PROGRESSIVE, FIVE_CARD_BONUS])
    assert dealt.hands[1] == (deck[0], deck[4], deck[8])
    assert dealt.hands[3] == (deck[1], deck[5], deck[9])
    assert dealt.hands[5] == (deck[2], deck[6], deck[10])
    assert dealt.dealer == (deck[3], deck[7], deck[11])
    assert dealt.community == (deck[12], deck[13])
    assert len(dealt.stub) == 52 - 14


@pytest.mark.parametrize(
    ("wagers", "community"),
    [
        ([], 0),
        ([PROGRESSIVE], 0),
        ([PROGRESSIVE, FIVE_CARD_BONUS], 2),
        ([FIVE_CARD_PROGRESSIVE], 2),
    ],
)
def test_community_cards_only_with_a_five_card_wager(
    wagers: list[PlacedWager], community: int
) -> None:
    dealt = PROCEDURE.deal(PROCEDURE.shuffled_deck(), [1, 3, 5], wagers)
    assert len(dealt.community) == community
    assert all(len(hand) == 3 for hand in dealt.hands.values()) and len(dealt.dealer) == 3
    assert len(dealt.stub) == 52 - 12 - community
    assert PROCEDURE.order([1], bool(community)).count(COMMUNITY) == community


def test_a_stacked_deck_deals_the_scripted_community_cards() -> None:
    mini_royal = parse_cards("AS KS QS".split())
    community = parse_cards("JS TS".split())
    deck = PROCEDURE.stack([2, 4], [FIVE_CARD_BONUS], {4: mini_royal, COMMUNITY: community})
    dealt = PROCEDURE.deal(deck, [2, 4], [FIVE_CARD_BONUS])
    assert dealt.hands[4] == mini_royal and dealt.community == community
    assert len(dealt.dealer) == 3


def test_community_cards_cannot_be_scripted_without_a_five_card_wager() -> None:
    with pytest.raises(ValueError, match="the community cards: 2 cards scripted; it is dealt 0"):
        PROCEDURE.stack([2], [PROGRESSIVE], {COMMUNITY: parse_cards("JS TS".split())})
    with pytest.raises(ValueError, match="the dealer: 5 cards scripted; it is dealt 3"):
        PROCEDURE.stack([2], [], {DEALER: parse_cards("2C 3D 5H 8S JC".split())})


def test_misdeal_cites_the_stub_count_rule() -> None:
    assert "§ 649a.9(f)" in PROCEDURE.misdeal_reason
    assert PROCEDURE.folds is None
