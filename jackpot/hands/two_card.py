"""The player's first two cards, as the Texas Hold 'Em Bonus Wager pays them (§ 647a.12(b)).

The Bonus Wager is settled on the player's first two cards alone (§ 647a.7, § 647a.11) at
the odds of paytable A or B of § 647a.12(b). Their lines, highest first, as printed:

==========================================  =====================================  =========
line                                        printed hand                           paytables
==========================================  =====================================  =========
``ace_ace_dealer_and_player``               Ace-ace (dealer and player)            A only
``ace_ace``                                 Ace-ace                                A and B
``ace_king_suited``                         Ace-king (same suit)                   A and B
``ace_queen_or_ace_jack_suited``            Ace-queen or ace-jack (same suit)      A and B
``ace_king_offsuit``                        Ace-king (different suits)             A and B
``king_king_queen_queen_or_jack_jack``      King-king, queen-queen or jack-jack    A and B
``ace_queen_or_ace_jack_offsuit``           Ace-queen or ace-jack (different       A and B
                                            suits)
``pair_2_through_10``                       A pair of 10-10 through 2-2            A and B
==========================================  =====================================  =========

Every other two-card hand is ``none`` (the wager loses). "Ace-ace (dealer and player)"
needs the dealer's two cards to be aces as well as the player's, which only all four aces
of the one deck can give; without the dealer's cards a player's ace-ace is ``ace_ace``.
Paytable B has no dealer-and-player line (N/A); whoever applies it pays that line as
``ace_ace``.

Of the 1,326 two-card hands: 6 ace-ace, 4 ace-king suited, 8 ace-queen or ace-jack suited,
12 ace-king offsuit, 18 king-king, queen-queen or jack-jack, 24 ace-queen or ace-jack
offsuit, 54 pairs 10-10 through 2-2 and 1,200 none.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from jackpot.cards import ACE, Card, check_hand_size, check_no_duplicates
from jackpot.errors import InvalidCards

_KING, _JACK = 13, 11


class StartingHand(StrEnum):
    """The lines of the § 647a.12(b) Bonus Wager paytable, highest first, then ``none``.

    The value is the label used on the wire, in metrics and in the journal.
    """

    ACE_ACE_DEALER_AND_PLAYER = "ace_ace_dealer_and_player"
    ACE_ACE = "ace_ace"
    ACE_KING_SUITED = "ace_king_suited"
    ACE_QUEEN_OR_ACE_JACK_SUITED = "ace_queen_or_ace_jack_suited"
    ACE_KING_OFFSUIT = "ace_king_offsuit"
    KING_KING_QUEEN_QUEEN_OR_JACK_JACK = "king_king_queen_queen_or_jack_jack"
    ACE_QUEEN_OR_ACE_JACK_OFFSUIT = "ace_queen_or_ace_jack_offsuit"
    PAIR_2_THROUGH_10 = "pair_2_through_10"
    NONE = "none"

    @property
    def label(self) -> str:
        """The name used on the wire, e.g. ``ace_king_suited`` (the same as the value)."""
        return self.value

    @property
    def printed(self) -> str:
        """The hand exactly as § 647a.12(b) prints it; ``""`` for :attr:`NONE`."""
        return PRINTED_WORDING[self]

    @classmethod
    def from_label(cls, label: str) -> StartingHand:
        """Inverse of :attr:`label`; raises :class:`ValueError` for an unknown label."""
        return cls(label)


PRINTED_WORDING: dict[StartingHand, str] = {
    StartingHand.ACE_ACE_DEALER_AND_PLAYER: "Ace-ace (dealer and player)",
    StartingHand.ACE_ACE: "Ace-ace",
    StartingHand.ACE_KING_SUITED: "Ace-king (same suit)",
    StartingHand.ACE_QUEEN_OR_ACE_JACK_SUITED: "Ace-queen or ace-jack (same suit)",
    StartingHand.ACE_KING_OFFSUIT: "Ace-king (different suits)",
    StartingHand.KING_KING_QUEEN_QUEEN_OR_JACK_JACK: "King-king, queen-queen or jack-jack",
    StartingHand.ACE_QUEEN_OR_ACE_JACK_OFFSUIT: "Ace-queen or ace-jack (different suits)",
    StartingHand.PAIR_2_THROUGH_10: "A pair of 10-10 through 2-2",
    StartingHand.NONE: "",
}
"""Each line's wording as printed in § 647a.12(b); ``none`` is not printed (it loses)."""


def paytable_lines() -> tuple[StartingHand, ...]:
    """The paytable's lines in the order § 647a.12(b) prints them, highest first.

    :attr:`StartingHand.NONE` is not a line and is left out.
    """
    return tuple(hand for hand in StartingHand if hand is not StartingHand.NONE)


def classify(player: Sequence[Card], dealer: Sequence[Card] = ()) -> StartingHand:
    """The paytable line the player's first two cards make, or :attr:`StartingHand.NONE`.

    ``player`` must be exactly two distinct cards; ``dealer`` is empty (not known) or the
    dealer's two cards, none of them shared with the player. Raise :class:`InvalidCards`
    otherwise.
    """
    check_hand_size(player, 2, "the player")
    if len(dealer) not in (0, 2):
        raise InvalidCards(
            f"the dealer has {len(dealer)} cards; give the dealer's first 2 cards or none"
        )
    # (rank, suit) pairs hash without a Python-level call: the cheap check comes first, and
    # check_no_duplicates only runs to name the card seen twice.
    if len({(card.rank, card.suit) for card in (*player, *dealer)}) != 2 + len(dealer):
        check_no_duplicates((("the player", player), ("the dealer", dealer)))
    first, second = player
    high, low = (
        (first.rank, second.rank) if first.rank >= second.rank else (second.rank, first.rank)
    )
    if high == low:
        if high == ACE:
            if dealer and all(card.rank == ACE for card in dealer):
                return StartingHand.ACE_ACE_DEALER_AND_PLAYER
            return StartingHand.ACE_ACE
        if high >= _JACK:
            return StartingHand.KING_KING_QUEEN_QUEEN_OR_JACK_JACK
        return StartingHand.PAIR_2_THROUGH_10
    if high != ACE or low < _JACK:
        return StartingHand.NONE
    suited = first.suit == second.suit
    if low == _KING:
        return StartingHand.ACE_KING_SUITED if suited else StartingHand.ACE_KING_OFFSUIT
    if suited:
        return StartingHand.ACE_QUEEN_OR_ACE_JACK_SUITED
    return StartingHand.ACE_QUEEN_OR_ACE_JACK_OFFSUIT
