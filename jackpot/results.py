"""What a table is answered with: meter values, accepted wagers and their contributions,
seat results and the results of a lockout, a settlement and a void.

Plain frozen dataclasses with integer money (cents, or microcents where named), shared by the
controller (which builds them from its store's replies) and the table agent (which reads them
from the wire). Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from jackpot.epochs import NO_POSITION, JournalPosition
from jackpot.money import floor_cents


@dataclass(frozen=True, slots=True)
class MeterValue:
    """A meter's value of record in microcents; ``amount_cents`` is what a display shows."""

    meter_id: str
    amount_microcents: int

    @property
    def amount_cents(self) -> int:
        """Whole cents, rounded down."""
        return floor_cents(self.amount_microcents)


@dataclass(frozen=True, slots=True)
class Contribution:
    """A wager's contribution to one meter (microcents): to the meter, and to its reserve
    (the reserve rate plus whatever the ceiling diverted)."""

    meter_id: str
    to_meter_microcents: int
    to_reserve_microcents: int

    @property
    def total_microcents(self) -> int:
        """Both parts together."""
        return self.to_meter_microcents + self.to_reserve_microcents


@dataclass(frozen=True, slots=True)
class AcceptedWager:
    """A wager fixed at lockout, with where its contributions went (none for a wager that
    feeds no meter)."""

    seat: int
    kind: str
    amount_cents: int
    contributions: tuple[Contribution, ...] = ()
    on_dealer: bool = False
    envy: bool = False


@dataclass(frozen=True, slots=True)
class LockoutResult:
    """The answer to a lockout: the accepted wagers and the meters after them."""

    table_id: str
    round_id: int
    accepted: tuple[AcceptedWager, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood


class SeatOutcome(StrEnum):
    """What happened to a reported seat at settlement."""

    PAID = "paid"
    NO_AWARD = "no_award"
    FORFEITED = "forfeited"
    NO_WAGER = "no_wager"


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One wager's settlement (or one envy bonus, or a seat without a wager). Cents; for a
    percentage award the meter at the wager's turn."""

    seat: int
    hand: str
    outcome: SeatOutcome
    wager: str = ""
    on_dealer: bool = False
    envy_for_seat: int = 0
    limited_from_cents: int = 0
    line: str = ""  # the paytable line paid
    award_kind: str = ""
    award_text: str = ""
    amount_cents: int = 0
    meter_id: str = ""
    meter_before_cents: int = 0
    meter_after_cents: int = 0
    pending_validation: bool = False
    jackpot_id: str = ""
    journal_seq: int = 0


@dataclass(frozen=True, slots=True)
class SettleResult:
    """The answer to a settlement: every seat in settlement order, then the meters."""

    table_id: str
    round_id: int
    results: tuple[SeatResult, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood


@dataclass(frozen=True, slots=True)
class VoidResult:
    """The answer to a void: the contributions taken back out, and the meters after."""

    table_id: str
    round_id: int
    reversed: tuple[AcceptedWager, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood
