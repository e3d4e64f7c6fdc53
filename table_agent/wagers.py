"""The side wagers a table offers and the wagers its seats place, as the agent keeps them.

Amounts are integer cents. A table's offer of a wager kind comes from its registration at the
controller (AdminService.ListTables): a fixed amount (``min_cents == max_cents``, the
Progressive Payout Wagers) or limits. A placed wager is what the seat sensors accepted at
lockout; it is written to the outbox as plain data (:meth:`PlacedWager.to_data`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from random import Random
from typing import Any

from jackpot.kinds import WAGER_TITLES, WagerKind, wager_title


@dataclass(frozen=True, slots=True)
class PlacedWager:
    """One wager accepted at lockout: ``amount_cents`` on ``seat``.

    ``on_dealer_hand``: a Caribbean Stud Five Card Hand Bonus on the dealer's hand (a seat
    betting on both hands places two wagers). ``envy``: a Six-Card Fortune Fortune Bonus placed
    with the Envy lammer.
    """

    seat: int
    kind: WagerKind
    amount_cents: int
    on_dealer_hand: bool = False
    envy: bool = False

    @property
    def title(self) -> str:
        """The wager's name for people."""
        return wager_title(self.kind, on_dealer_hand=self.on_dealer_hand, envy=self.envy)

    def to_data(self) -> dict[str, Any]:
        """The wager as JSON-ready data (the outbox's lockout record)."""
        return {
            "seat": self.seat,
            "kind": self.kind.value,
            "amount_cents": self.amount_cents,
            "on_dealer_hand": self.on_dealer_hand,
            "envy": self.envy,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PlacedWager:
        """Read :meth:`to_data`'s output."""
        return cls(
            int(data["seat"]),
            WagerKind(data["kind"]),
            int(data["amount_cents"]),
            bool(data["on_dealer_hand"]),
            bool(data["envy"]),
        )


@dataclass(frozen=True, slots=True)
class WagerOffer:
    """A wager kind the table offers, with its limits in cents (``min_cents <= max_cents``;
    equal for a fixed wager) and whether its paytable has envy bonuses (the Envy lammer)."""

    kind: WagerKind
    min_cents: int
    max_cents: int
    paytable: str = ""
    envy: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.min_cents <= self.max_cents:
            raise ValueError(
                f"{WAGER_TITLES[self.kind]}: limits {self.min_cents} to {self.max_cents} cents "
                "are not a positive range"
            )

    @property
    def fixed(self) -> bool:
        """Whether the wager is one fixed amount."""
        return self.min_cents == self.max_cents

    def amounts(self) -> tuple[int, ...]:
        """The amounts a simulated player chooses from: the minimum, 2x, 5x and 10x it where the
        maximum allows, and the maximum (one amount for a fixed wager). All within limits."""
        steps = {self.min_cents * factor for factor in (1, 2, 5, 10)} | {self.max_cents}
        return tuple(sorted(amount for amount in steps if amount <= self.max_cents))

    def choose_amount(self, rng: Random) -> int:
        """A random amount of :meth:`amounts`."""
        return rng.choice(self.amounts())


@dataclass(frozen=True, slots=True)
class TableLayout:
    """What the agent knows of its table: the game, the seats (1..``seats``), the wagers it
    offers (in the order the registration lists them) and the payout limit per hand in cents
    (Texas Hold 'Em Bonus, § 647a.12(c); 0: none)."""

    table_id: str
    game: str
    seats: int
    offers: tuple[WagerOffer, ...]
    payout_limit_cents: int = 0

    def offer(self, kind: WagerKind) -> WagerOffer | None:
        """The table's offer of ``kind``, or None."""
        return next((offer for offer in self.offers if offer.kind is kind), None)

    def describe(self) -> str:
        """One line for the log: game, seats and each offer with its limits."""
        offers = ", ".join(
            f"{offer.kind.value} {_cents_range(offer)}" + (" (envy)" if offer.envy else "")
            for offer in self.offers
        )
        return f"{self.game}, {self.seats} seats, wagers: {offers or 'none'}"


def _cents_range(offer: WagerOffer) -> str:
    if offer.fixed:
        return f"{offer.min_cents}c"
    return f"{offer.min_cents}-{offer.max_cents}c"


def progressive_only(table_id: str, game: str, seats: int, wager_cents: int) -> TableLayout:
    """A table offering only the Progressive Payout Wager, fixed at ``wager_cents``: the
    fallback when the controller does not list tables to this agent."""
    offer = WagerOffer(WagerKind.PROGRESSIVE, wager_cents, wager_cents)
    return TableLayout(table_id, game, seats, (offer,))
