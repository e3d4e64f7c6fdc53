"""The lockout ("no more bets"): the wagers accepted at that moment, checked against what the
table offers (kinds, limits, the dealer's hand, the Envy lammer) before they are final."""

from __future__ import annotations

from collections.abc import Sequence

from controller.domain.config import TableConfig
from controller.domain.rounds import Wager, check_seat, offered
from jackpot.errors import InvalidAmount, InvalidArgument, InvalidSeat


def check_lockout(table: TableConfig, wagers: Sequence[Wager]) -> tuple[Wager, ...]:
    """Validate a lockout's wagers against the table; return them by seat (1 first), each
    seat's in the order its game settles them.

    Each seat exists; each wager is one the table offers, once per seat (and hand), for an
    amount within the table's limits (exactly the amount of a fixed wager); the dealer's
    hand and the Envy lammer only where the game has them.
    """
    game = table.game_rules
    seen: set[tuple[int, str, bool]] = set()
    for wager in wagers:
        check_seat(table, wager.seat)
        offer = offered(table, wager.kind)
        rules = game.wager(wager.kind)
        if wager.on_dealer_hand and not rules.facts.on_dealer_hand:
            raise InvalidArgument(
                f"{wager.label}: the {rules.facts.title} is not placed on the dealer's hand"
            )
        if wager.envy and not (rules.facts.envy_by_marker and offer.paytable.envy_lines):
            raise InvalidArgument(
                f"{wager.label}: the {rules.facts.title} at table {table.table_id} has no Envy "
                "lammer"
            )
        key = (wager.seat, wager.kind, wager.on_dealer_hand)
        if key in seen:
            raise InvalidSeat(f"{wager.label} is placed twice; a seat places it once per round")
        seen.add(key)
        if wager.amount_cents <= 0:
            raise InvalidAmount(
                f"{wager.label}: wager amount must be positive, got {wager.amount_cents} cents"
            )
        if offer.fixed and wager.amount_cents != offer.min_cents:
            raise InvalidAmount(
                f"{wager.label}: wagered {wager.amount_cents} cents; the {wager.kind} wager "
                f"at table {table.table_id} is fixed at {offer.min_cents} cents"
            )
        if not offer.min_cents <= wager.amount_cents <= offer.max_cents:
            raise InvalidAmount(
                f"{wager.label}: wagered {wager.amount_cents} cents; the {wager.kind} wager at "
                f"table {table.table_id} takes {offer.min_cents} to {offer.max_cents} cents"
            )
    order = table.game_rules.settle_order
    return tuple(sorted(wagers, key=lambda w: (w.seat, order.index(w.kind), w.on_dealer_hand)))
