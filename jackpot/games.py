"""The facts of each game that the controller and the table agent both need: its name and
title, how many seats a table may have, how many cards a hand holds, and its side wagers as
the regulation names them, in the order a seat places them.

How a wager's hands are paid (paytables, line tables) is the controller's
(:mod:`controller.domain.wagers`); how a round is dealt is the agent's
(:mod:`table_agent.games`). Amounts are in cents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jackpot.errors import InvalidConfiguration
from jackpot.kinds import Extra, WagerKind

DEFAULT_WAGER_CENTS = 100
"""A progressive side wager's amount when a table does not state one: the $1 chip on the
progressive sensor."""


@dataclass(frozen=True, slots=True)
class WagerFacts:
    """One side wager of a game.

    ``extra``: which cards besides the seat's own its hand is made from (the community cards
    are dealt only when a wager on them was placed). ``on_dealer_hand``: it may also be placed
    on the dealer's hand (§ 639a.7(d)(4)). ``envy_by_marker``: a seat is entitled to its envy
    bonuses only with the Envy lammer (§ 670a.11(h)(1)(ii)); otherwise every seat holding the
    wager is (§ 670a.11(h)(3)(ii)). ``forfeit_on_fold``: a player who folds forfeits it
    (§ 639a.11(b)). ``envy_citation``: where its Envy Bonus is defined ("" when it has none).
    """

    kind: WagerKind
    title: str
    citation: str
    extra: Extra = Extra.NONE
    on_dealer_hand: bool = False
    envy_by_marker: bool = False
    forfeit_on_fold: bool = False
    envy_citation: str = ""


@dataclass(frozen=True, slots=True)
class GameFacts:
    """One game's fixed facts. ``wagers`` in the order a seat places them; ``joker``: dealt
    from 52 cards and one joker ("JK"); ``folds``: a player may fold (not make the game's second
    wager); ``community_cards``: dealt only when a wager on them was placed."""

    name: str
    title: str
    max_seats: int
    max_seats_citation: str
    hand_size: int
    dealer_hand_size: int
    wagers: tuple[WagerFacts, ...]
    joker: bool = False
    folds: bool = True
    community_cards: int = 0

    @property
    def kinds(self) -> tuple[WagerKind, ...]:
        """The side wagers' kinds, in the order a seat places them."""
        return tuple(wager.kind for wager in self.wagers)

    def wager(self, kind: str) -> WagerFacts:
        """The side wager of ``kind``; refuse a kind this game does not offer."""
        for wager in self.wagers:
            if wager.kind == kind:
                return wager
        listed = ", ".join(sorted(self.kinds))
        raise InvalidConfiguration(
            f"{self.title} has no wager {str(kind)!r}; its wagers are {listed}"
        )

    def seats_refusal(self, what: str, seats: int) -> str | None:
        """Why ``seats`` seats are refused for ``what`` (a table), or None if they are fine."""
        if 1 <= seats <= self.max_seats:
            return None
        cite = f" ({self.max_seats_citation})" if self.max_seats_citation else ""
        return f"{what}: {seats} seats; {self.title} allows 1 to {self.max_seats}{cite}"


_FIVE_CARD_BONUS = "Five Card Hand Bonus Wager"

CARIBBEAN_STUD = GameFacts(
    name="caribbean-stud",
    title="Caribbean Stud Poker",
    max_seats=7,
    max_seats_citation="§ 639a.2(a)",
    hand_size=5,
    dealer_hand_size=5,
    wagers=(
        WagerFacts(
            WagerKind.PROGRESSIVE,
            "Progressive Payout Wager",
            "§ 639a.12(d)(1)",
            forfeit_on_fold=True,
        ),
        WagerFacts(
            WagerKind.BONUS, "Caribbean Stud Bonus Wager", "§ 639a.12(c)", forfeit_on_fold=True
        ),
        # Flush or better on the player's or the dealer's five cards.
        WagerFacts(
            WagerKind.FIVE_CARD_BONUS,
            _FIVE_CARD_BONUS,
            "§ 639a.7(d)(4)",
            on_dealer_hand=True,
            forfeit_on_fold=True,
        ),
    ),
)

TEXAS_HOLDEM_BONUS = GameFacts(
    name="texas-holdem-bonus",
    title="Texas Hold 'Em Bonus Poker",
    max_seats=6,
    max_seats_citation="§ 647a.2(a)",
    hand_size=2,
    dealer_hand_size=2,
    wagers=(
        WagerFacts(
            WagerKind.BONUS, "Texas Hold 'Em Bonus Wager", "§ 647a.12(b)", extra=Extra.DEALER
        ),
    ),
)

# The seeds do not give the seat limits of these two games' tables (their § x.2 is not among
# them); 7 is the largest the layouts of this family take, and the Rules Submission states
# the seats of each table.
THREE_CARD_POKER = GameFacts(
    name="three-card-poker",
    title="Three Card Poker",
    max_seats=7,
    max_seats_citation="",
    hand_size=3,
    dealer_hand_size=3,
    wagers=(
        WagerFacts(
            WagerKind.PROGRESSIVE,
            "Three Card Poker Progressive Payout Wager",
            "§ 649a.9",
            envy_citation="Rules Submission (§ 601a.2)",
        ),
        WagerFacts(
            WagerKind.FIVE_CARD_BONUS, _FIVE_CARD_BONUS, "§ 649a.9(b)", extra=Extra.COMMUNITY
        ),
        WagerFacts(
            WagerKind.FIVE_CARD_PROGRESSIVE,
            "Five-Card Progressive Payout Wager",
            "§ 649a.9(b)",
            extra=Extra.COMMUNITY,
        ),
    ),
    community_cards=2,  # § 649a.9(b)
)

SIX_CARD_FORTUNE_PAI_GOW = GameFacts(
    name="six-card-fortune-pai-gow",
    title="Six-Card Fortune Pai Gow Poker",
    max_seats=7,
    max_seats_citation="",
    hand_size=6,
    dealer_hand_size=6,
    wagers=(
        WagerFacts(
            WagerKind.PROGRESSIVE,
            "Six-Card Fortune Progressive Payout Wager",
            "§ 670a.12",
            envy_citation="§ 670a.11(h)(3)(ii)",
        ),
        WagerFacts(
            WagerKind.FORTUNE_BONUS,
            "Fortune Bonus Wager",
            "§ 670a.12",
            envy_by_marker=True,
            envy_citation="§ 670a.11(h)(1)(ii)",
        ),
        WagerFacts(WagerKind.INSURANCE, "Insurance Wager", "§ 670a.11(h)(2)"),
    ),
    joker=True,
    folds=False,  # every player sets a high and a low hand (§ 670a.11(b))
)

GAMES: Mapping[str, GameFacts] = {
    game.name: game
    for game in (CARIBBEAN_STUD, TEXAS_HOLDEM_BONUS, THREE_CARD_POKER, SIX_CARD_FORTUNE_PAI_GOW)
}

MAX_SEATS = max(game.max_seats for game in GAMES.values())
"""The most seats a table of any game here may have."""


def game_facts(name: str) -> GameFacts:
    """The game called ``name`` (e.g. ``caribbean-stud``); refuse an unknown one."""
    try:
        return GAMES[name]
    except KeyError:
        raise InvalidConfiguration(
            f"unknown game {name!r}; this controller settles: {', '.join(sorted(GAMES))}"
        ) from None
