"""The kinds of side wager and of award, as the controller, the agent and the wire name them.

The values are the names used in Rules Submissions, stored records and logs; the protobuf
enums (``WagerKind``, ``AwardKind`` in proto/) carry the same names in upper case after their
prefix (``WAGER_KIND_FIVE_CARD_BONUS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum


class WagerKind(StrEnum):
    """The side wagers of the games the controller settles."""

    PROGRESSIVE = "progressive"
    BONUS = "bonus"
    FIVE_CARD_BONUS = "five_card_bonus"
    FIVE_CARD_PROGRESSIVE = "five_card_progressive"
    FORTUNE_BONUS = "fortune_bonus"
    INSURANCE = "insurance"


WAGER_TITLES: Mapping[WagerKind, str] = {
    WagerKind.PROGRESSIVE: "Progressive Payout Wager",
    WagerKind.BONUS: "Bonus Wager",
    WagerKind.FIVE_CARD_BONUS: "Five Card Hand Bonus Wager",
    WagerKind.FIVE_CARD_PROGRESSIVE: "Five-Card Progressive Payout Wager",
    WagerKind.FORTUNE_BONUS: "Fortune Bonus Wager",
    WagerKind.INSURANCE: "Insurance Wager",
}
"""Each kind's name whatever the game (a game's own name for it is in :mod:`jackpot.games`)."""


def wager_title(kind: WagerKind, *, on_dealer_hand: bool = False, envy: bool = False) -> str:
    """The wager as the dealer names it, e.g. "Five Card Hand Bonus Wager on the dealer's hand"."""
    title = WAGER_TITLES[kind]
    if on_dealer_hand:
        title += " on the dealer's hand"
    if envy:
        title += " with the Envy lammer"
    return title


class AwardKind(StrEnum):
    """How an award is computed (design.md §3)."""

    FOR_ONE = "for_one"  # N x wager, the wager included
    TO_ONE = "to_one"  # N x wager plus the wager back
    PERCENT_OF_METER = "percent_of_meter"  # P% of the meter at the seat's turn, floor to cent
    FIXED_AMOUNT = "fixed_amount"  # a fixed amount in cents, whatever the wager
    ENVY = "envy"  # a fixed amount for another seat's qualifying hand (a result, not a line)


class Extra(StrEnum):
    """Which cards besides the seat's own a wager's hand is made from."""

    NONE = "none"
    DEALER = "dealer"  # the dealer's hand decides a line (ace-ace, dealer and player)
    COMMUNITY = "community"  # the seat's cards plus the community cards form the hand


class IrregularityKind(StrEnum):
    """What went wrong in a round (design.md §4, VOID; the protobuf enum
    ``IrregularityKind``). ``CHIP_COUNT``: the dealer's count of Progressive Payout Wager chips
    differs from the wagers accepted at lockout (§ 639a.8(b)); it is reported by
    TableService.ReportChipCount and holds the round for a supervisor. The others are the
    seeded irregularities a table reports with TableService.ReportIrregularity; what each one
    does at each game is :mod:`jackpot.irregularities`."""

    CHIP_COUNT = "chip_count"
    WRONG_CARD_COUNT = "wrong_card_count"  # a player, the dealer (or the community) misdealt
    MISDEAL = "misdeal"  # the stub count shows the cards were misdealt
    CARDS_EXPOSED = "cards_exposed"  # more than one card found face up in the shoe or deck
    DEALER_CARD_EXPOSED = "dealer_card_exposed"  # a dealer's card exposed too early
    SHOE_JAM = "shoe_jam"  # the automated dealing shoe jammed or stopped during the round


class IrregularityEffect(StrEnum):
    """What a seeded irregularity does to its round."""

    VOID = "void"  # all hands void, all wagers returned
    BONUS_SETTLES = "bonus_settles"  # the rest of the round is void; bonus wagers settle


def wager_words(name: str, *, on_dealer_hand: bool = False) -> str:
    """A record's wager (its kind's value, e.g. ``progressive``) as people read it wherever
    it is shown (the hand-pay slip, the floor view): :func:`wager_title`, "Progressive
    Payout Wager"; a name that is no kind stays as it is."""
    try:
        kind = WagerKind(name)
    except ValueError:
        return name + (" on the dealer's hand" if on_dealer_hand else "")
    return wager_title(kind, on_dealer_hand=on_dealer_hand)
