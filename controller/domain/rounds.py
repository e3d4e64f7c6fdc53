"""A round's records: the wagers accepted at lockout, the cards reported at settlement and
the lines of a settlement plan, with the two table facts both phases check (a seat exists, a
wager is offered).

:mod:`controller.domain.lockout` checks a lockout, :mod:`controller.domain.settlement` plans
a settlement, :mod:`controller.domain.digests` gives each phase's idempotency digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from controller.domain.config import TableConfig, WagerOffer
from controller.domain.paytables import AwardRule
from jackpot.cards import Card
from jackpot.errors import InvalidArgument, InvalidSeat
from jackpot.kinds import AwardKind
from jackpot.results import SeatOutcome

Cards = tuple[Card, ...]  # at Six-Card Fortune a hand may hold the joker


@dataclass(frozen=True, slots=True)
class Wager:
    """One wager accepted at lockout: the game's wager name (``progressive``, ``bonus``, ...)
    and the chip in cents. ``on_dealer_hand``: a Five Card Hand Bonus on the dealer's hand
    (§ 639a.7(d)(4)); ``envy``: the Envy lammer of a Fortune Bonus (§ 670a.11(h)(1)(ii))."""

    seat: int
    kind: str
    amount_cents: int
    on_dealer_hand: bool = False
    envy: bool = False
    player_token: str = ""  # the seat's opaque player token, if given (docs/staged-changes.md)

    @property
    def label(self) -> str:
        """How a message names it: "seat 3 five_card_bonus (dealer's hand)"."""
        return f"seat {self.seat} {self.kind}" + (" (dealer's hand)" if self.on_dealer_hand else "")


@dataclass(frozen=True, slots=True)
class SeatCards:
    """One seat's report at settlement: its cards, or ``folded`` (§ 639a.11(b)); a folded
    seat whose wagers are all forfeited may report no cards (they were collected).

    ``base_game_win_cents``: what the seat's other wagers won this round (winnings, the
    returned stakes excluded), counted against the payout limit per hand (§ 647a.12(c)).
    """

    seat: int
    cards: Cards
    folded: bool = False
    base_game_win_cents: int = 0


@dataclass(frozen=True, slots=True)
class RoundCards:
    """Every card of a round the controller needs, as the table reports them."""

    seats: tuple[SeatCards, ...]
    dealer: Cards = ()
    community: Cards = ()
    rest_of_round_void: str = ""  # § 647a.13(a), (d): why the rest of the round is void


@dataclass(frozen=True, slots=True)
class Payout:
    """One line of a settlement plan: what one wager (or one envy bonus) wins.

    ``amount_cents`` is final for fixed awards (after the payout limit, ``limited_from_cents``
    being the amount before it); a percentage award is computed by the store from
    ``meter_id`` at its turn. ``kind`` is empty for a reported seat without a wager. The
    store's settle script answers each as a :class:`jackpot.results.SeatResult` whose fields of
    the same names it copies.

    For the hand-pay slip of an award: ``cards``, the cards of the hand that won (for an envy
    bonus the qualifying hand's), e.g. ``"AS KS QS JS TS"``; ``wager_cents``, the wager that
    won; ``pending_validation``, a fixed award above the table's validation threshold (a
    percentage award always awaits validation: the store sets it).
    """

    seat: int
    kind: str
    hand: str
    outcome: SeatOutcome
    on_dealer_hand: bool = False
    award: AwardRule | None = None
    amount_cents: int = 0
    meter_id: str = ""
    envy_for_seat: int = 0
    limited_from_cents: int = 0
    line: str = ""  # the paytable line paid, e.g. "ace_ace_dealer_and_player"
    player_token: str = ""  # an award's: the seat's player token given at lockout, if any
    cards: str = ""
    wager_cents: int = 0
    pending_validation: bool = False

    @property
    def award_kind(self) -> str:
        """``for_one``, ``to_one``, ``percent_of_meter``, ``fixed_amount`` or ``envy``."""
        if self.award is None:
            return ""
        return str(AwardKind.ENVY) if self.envy_for_seat else str(self.award.kind)


def check_seat(table: TableConfig, seat: int) -> None:
    """Refuse a seat the table does not have (its seats are 1 to N)."""
    if not 1 <= seat <= table.seats:
        raise InvalidSeat(
            f"seat {seat} does not exist at table {table.table_id}; its seats are 1 to "
            f"{table.seats}"
        )


def offered(table: TableConfig, kind: str) -> WagerOffer:
    """The table's offer of the ``kind`` wager; a wager it does not offer is refused."""
    offer = table.offer(kind)
    if offer is None:
        offered = ", ".join(o.wager for o in table.wagers)
        raise InvalidArgument(f"table {table.table_id} does not offer the {kind} wager ({offered})")
    return offer


def cards_of(items: Sequence[object]) -> Cards:
    """Type a parsed hand that may hold the joker as a hand (the joker sorts as an ace)."""
    return cast(Cards, tuple(items))
