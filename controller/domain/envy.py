"""Envy bonuses: for each qualifying hand at the table, each other entitled seat is paid once
(§ 670a.11(h)(1)(ii), (3)(ii))."""

from __future__ import annotations

from collections.abc import Sequence

from controller.domain.config import TableConfig
from controller.domain.round_hands import RoundHands
from controller.domain.rounds import Payout, RoundCards, Wager
from jackpot.results import SeatOutcome


def envy_payouts(
    table: TableConfig,
    wagers: Sequence[Wager],
    cards: RoundCards,
    kinds: Sequence[str],
    hands: RoundHands,
) -> list[Payout]:
    """Every envy bonus of the wagers ``kinds``: for each qualifying hand at the table, each
    other entitled seat is paid once (§ 670a.11(h)(1)(ii), (3)(ii)); never for its own hand or
    the dealer's. ``hands`` reads the round's hands (once, shared with the wagers' payouts)."""
    game = table.game_rules
    payouts: list[Payout] = []
    # Every hand on the table qualifies, also a folded player's whose cards were reported.
    playing = sorted((r for r in cards.seats if r.cards), key=lambda r: -r.seat)
    for kind in kinds:
        offer = table.offer(kind)
        if offer is None or not offer.paytable.envy_lines:
            continue
        rules = game.wager(kind)
        entitled = sorted(
            {
                w.seat
                for w in wagers
                if w.kind == kind and (w.envy or not rules.facts.envy_by_marker)
            },
            reverse=True,
        )
        for holder in playing:
            hand = hands.cards_of(rules, False, holder.cards)
            qualifying = offer.paytable.envy_award(hands.lines(rules, hand))
            if qualifying is None:
                continue
            rule = qualifying[1]
            name = hands.name(rules, hand)
            payouts.extend(
                Payout(
                    seat,
                    kind,
                    name,
                    SeatOutcome.PAID,
                    award=rule,
                    amount_cents=rule.amount_cents,
                    envy_for_seat=holder.seat,
                    line=qualifying[0],
                )
                for seat in entitled
                if seat != holder.seat
            )
    return payouts
