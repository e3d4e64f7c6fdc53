"""A round's reports, checked and turned into what the store applies atomically.

* :func:`check_lockout` validates the wagers accepted at "no more bets".
* :func:`plan_settlement` validates the cards, evaluates every hand itself (a reported rank
  is never trusted) and lists, in settlement order - seat N down to seat 1 (§ 639a.11(c),
  § 639a.12(d)(4)) - the paytable line each seat's highest hand wins. The store then pays
  that plan in that order, computing each percentage award from the meter at the seat's turn.
* :func:`fingerprint` gives the content digest that makes each phase idempotent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from controller.domain.cards import Card, check_hand_size, check_no_duplicates
from controller.domain.config import TableConfig
from controller.domain.paytables import AwardRule
from controller.errors import InvalidAmount, InvalidArgument, InvalidSeat


class WagerKind(StrEnum):
    """The wagers a seat may place. Caribbean Stud: the Progressive Payout Wager."""

    PROGRESSIVE = "progressive"


@dataclass(frozen=True, slots=True)
class Wager:
    """One wager accepted at lockout. ``amount_cents`` is the chip on the sensor."""

    seat: int
    kind: WagerKind
    amount_cents: int


@dataclass(frozen=True, slots=True)
class SeatCards:
    """One seat's report at settlement: its cards, or ``folded`` (forfeits, § 639a.11(b))."""

    seat: int
    cards: tuple[Card, ...]
    folded: bool = False


@dataclass(frozen=True, slots=True)
class SeatPlan:
    """What a seat's hand wins on the progressive paytable; ``award`` None = nothing."""

    seat: int
    hand: str
    folded: bool
    award: AwardRule | None


def _check_seat(table: TableConfig, seat: int) -> None:
    if not 1 <= seat <= table.seats:
        raise InvalidSeat(
            f"seat {seat} does not exist at table {table.table_id}; its seats are 1 to "
            f"{table.seats}"
        )


def check_lockout(table: TableConfig, wagers: Sequence[Wager]) -> tuple[Wager, ...]:
    """Validate a lockout's wagers against the table; return them ordered by seat.

    Each seat exists, holds at most one progressive wager, and wagers exactly the table's
    fixed progressive amount (a zero or negative amount is refused as such).
    """
    seen: set[int] = set()
    for wager in wagers:
        _check_seat(table, wager.seat)
        if wager.seat in seen:
            raise InvalidSeat(
                f"seat {wager.seat} has two {wager.kind} wagers; a seat places one per round"
            )
        seen.add(wager.seat)
        if wager.amount_cents <= 0:
            raise InvalidAmount(
                f"seat {wager.seat}: wager amount must be positive, got {wager.amount_cents} cents"
            )
        if wager.amount_cents != table.wager_cents:
            raise InvalidAmount(
                f"seat {wager.seat}: wagered {wager.amount_cents} cents; the progressive wager "
                f"at table {table.table_id} is fixed at {table.wager_cents} cents"
            )
    return tuple(sorted(wagers, key=lambda wager: wager.seat))


def plan_settlement(
    table: TableConfig, seats: Sequence[SeatCards], dealer_cards: Sequence[Card]
) -> tuple[SeatPlan, ...]:
    """Check the cards of a round and list each seat's award in settlement order (N..1).

    Refused (nothing changes): a seat outside the table or named twice; a hand of the wrong
    size; dealer cards other than none or a full hand; any card seen twice in the round.
    A folded seat may report no cards (they were collected) or its full hand.
    """
    game = table.game_rules
    progressive = game.wager("progressive")
    paytable = progressive.paytable(table.paytable)
    named: set[int] = set()
    for report in seats:
        _check_seat(table, report.seat)
        if report.seat in named:
            raise InvalidSeat(f"seat {report.seat} is reported twice")
        named.add(report.seat)
        if not (report.folded and not report.cards):
            check_hand_size(report.cards, game.hand_size, f"seat {report.seat}")
    if dealer_cards:
        check_hand_size(dealer_cards, game.dealer_hand_size, "the dealer")
    check_no_duplicates(
        [(f"seat {report.seat}", report.cards) for report in seats]
        + [("the dealer", tuple(dealer_cards))]
    )
    plans = []
    for report in sorted(seats, key=lambda report: report.seat, reverse=True):
        if report.folded:
            plans.append(SeatPlan(report.seat, "", True, None))
            continue
        paid = paytable.highest_award(progressive.lines_of(report.cards, ()))
        plans.append(
            SeatPlan(report.seat, game.name_hand(report.cards), False, paid[1] if paid else None)
        )
    return tuple(plans)


def fingerprint(phase: str, content: object) -> str:
    """A stable digest of a request's content for the idempotency key (table, round, phase).

    ``content`` must be JSON-serialisable; the digest ignores dictionary order.
    """
    if not phase:
        raise InvalidArgument("phase is required")
    canonical = json.dumps([phase, content], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def lockout_fingerprint(wagers: Sequence[Wager]) -> str:
    """The content digest of a lockout: its wagers, in seat order."""
    ordered = sorted(wagers, key=lambda wager: wager.seat)
    return fingerprint("lockout", [[w.seat, str(w.kind), w.amount_cents] for w in ordered])


def settle_fingerprint(seats: Sequence[SeatCards], dealer_cards: Sequence[Card]) -> str:
    """The content digest of a settlement: every seat's cards (as parsed) and the dealer's.

    Cards are compared as cards, so "10H" and "TH" are the same report.
    """
    ordered = sorted(seats, key=lambda report: report.seat)
    return fingerprint(
        "settle",
        {
            "seats": [[r.seat, [str(card) for card in r.cards], r.folded] for r in ordered],
            "dealer": [str(card) for card in dealer_cards],
        },
    )


def void_fingerprint(reason: str) -> str:
    """The content digest of a void: its reason."""
    return fingerprint("void", reason)
