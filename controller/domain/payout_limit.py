"""The aggregate payout limit per hand (§ 647a.12(c)) applied to a settlement plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from controller.domain.config import TableConfig
from controller.domain.rounds import Payout, RoundCards, Wager
from jackpot.kinds import AwardKind
from jackpot.results import SeatOutcome


def _stake_back(payout: Payout, wagers: dict[tuple[int, str, bool], Wager]) -> int:
    """The part of a fixed award that returns the stake: "N to 1" pays N wagers and the wager
    back, "N for 1" N wagers of which one is the wager back; "$A" returns none."""
    if payout.award is None or payout.award.kind is AwardKind.PERCENT_OF_METER:
        return 0
    wager = wagers[(payout.seat, payout.kind, payout.on_dealer_hand)]
    return payout.award.returned_stake_cents(wager.amount_cents)


def apply_payout_limit(
    table: TableConfig, payouts: list[Payout], wagers: Sequence[Wager], cards: RoundCards
) -> list[Payout]:
    """Cut each seat's winnings so that, with what its base game won, they stay within the
    aggregate payout limit per hand (§ 647a.12(c)); returned stakes are not winnings.

    ``payouts`` is the plan in settlement order: each seat's room is used up by its wagers in
    the order they are paid (whatever the phases), so a cut falls on the last one paid. Only
    the wagers the limit counts (:attr:`Game.payout_limit_wagers`) are limited; envy bonuses
    are not winning wagers and are never cut.
    """
    limit = table.payout_limit_cents
    if not limit:
        return payouts
    counted = table.game_rules.payout_limit_wagers
    by_key = {(w.seat, w.kind, w.on_dealer_hand): w for w in wagers}
    room = {r.seat: max(0, limit - r.base_game_win_cents) for r in cards.seats}
    limited = []
    for payout in payouts:
        if (
            payout.outcome is not SeatOutcome.PAID
            or payout.award is None
            or payout.envy_for_seat
            or payout.kind not in counted
        ):
            limited.append(payout)
            continue
        stake = _stake_back(payout, by_key)
        winnings = payout.amount_cents - stake
        allowed = min(winnings, room[payout.seat])
        room[payout.seat] -= allowed
        if allowed < winnings:
            payout = replace(
                payout, amount_cents=allowed + stake, limited_from_cents=payout.amount_cents
            )
        limited.append(payout)
    return limited
