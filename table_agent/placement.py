"""Which side wagers the simulated players place, within what the table offers.

Every amount is one the table's offer allows (:meth:`WagerOffer.amounts`): the fixed amount of
a fixed wager, otherwise an amount between its minimum and maximum. A seat places only kinds
that both its game deals (:attr:`GameProcedure.kinds`) and its table offers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from random import Random

from jackpot.kinds import WagerKind
from table_agent.games import GameProcedure
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer

# Where a Five Card Hand Bonus goes at Caribbean Stud: the player's hand, the dealer's, or both
# (§ 639a.7(d)(4)); as values of ``on_dealer_hand``.
_HAND_CHOICES: tuple[tuple[bool, ...], ...] = ((False,), (True,), (False, True))


def offered_kinds(game: GameProcedure, layout: TableLayout) -> list[WagerOffer]:
    """The table's offers of the kinds the game's seats place, in the game's order."""
    offers = (layout.offer(kind) for kind in game.kinds)
    return [offer for offer in offers if offer is not None]


def unplaceable_offers(game: GameProcedure, layout: TableLayout) -> list[WagerKind]:
    """Kinds the table offers that its game has no place for (the simulator never places
    them; worth a warning, since the registration and the game disagree)."""
    return [offer.kind for offer in layout.offers if offer.kind not in game.kinds]


def place_random_wagers(
    game: GameProcedure, layout: TableLayout, seat: int, percent: int, rng: Random
) -> list[PlacedWager]:
    """The wagers of one seated player: each offered kind with a chance of ``percent`` (0-100),
    at a random allowed amount; a Five Card Hand Bonus on the player's hand, the dealer's or
    both (two wagers); a Fortune Bonus with the Envy lammer half the time where the table
    offers envy bonuses."""
    wagers: list[PlacedWager] = []
    for offer in offered_kinds(game, layout):
        if rng.randrange(100) >= percent:
            continue
        amount = offer.choose_amount(rng)
        if offer.kind in game.dealer_hand_kinds:
            hands = rng.choice(_HAND_CHOICES)
            wagers += [PlacedWager(seat, offer.kind, amount, on_dealer_hand=on) for on in hands]
        else:
            envy = offer.kind in game.envy_kinds and offer.envy and rng.randrange(2) == 0
            wagers.append(PlacedWager(seat, offer.kind, amount, envy=envy))
    return wagers


def default_wagers(game: GameProcedure, layout: TableLayout, seat: int) -> list[PlacedWager]:
    """A scripted seat's wagers when the script names none: the Progressive Payout Wager where
    the table offers it, otherwise one of each offered kind at its minimum (on the player's
    hand, without the Envy lammer)."""
    offers = offered_kinds(game, layout)
    progressive = [offer for offer in offers if offer.kind is WagerKind.PROGRESSIVE]
    return [PlacedWager(seat, offer.kind, offer.min_cents) for offer in progressive or offers]


def with_minimum_amounts(layout: TableLayout, wagers: Iterable[PlacedWager]) -> list[PlacedWager]:
    """``wagers``, each amount of 0 replaced by the table's minimum for its kind (scripts may
    leave amounts out). A kind the table does not offer keeps its amount: the controller
    refuses it with a message naming it."""
    placed = []
    for wager in wagers:
        offer = layout.offer(wager.kind)
        if wager.amount_cents == 0 and offer is not None:
            wager = replace(wager, amount_cents=offer.min_cents)
        placed.append(wager)
    return placed
