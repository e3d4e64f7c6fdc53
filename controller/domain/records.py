"""What the store answers: meters, accepted wagers, seat results, jackpots, journal entries.

Plain frozen dataclasses with integer money (cents, or microcents where named), shared by the
store, the API adapters and the audit. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from controller.domain.epochs import NO_POSITION, JournalPosition
from controller.domain.money import floor_cents


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
class MeterState:
    """A meter's parameters, values and cumulative counters (NJ 13:69E-1.39A(b) meters)."""

    meter_id: str
    link_group_id: str
    game: str
    reset_cents: int
    rate_ppm: int
    reserve_rate_ppm: int
    ceiling_cents: int
    amount_microcents: int
    reserve_microcents: int
    pending_jackpots: int
    wagers_total: int
    hits_total: int
    awards_cents_total: int
    operator_seed_microcents_total: int

    @property
    def value(self) -> MeterValue:
        """The meter's current value."""
        return MeterValue(self.meter_id, self.amount_microcents)


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


@dataclass(frozen=True, slots=True)
class Jackpot:
    """A percentage-of-meter award waiting for (or past) a supervisor's validation."""

    jackpot_id: str
    link_group_id: str
    meter_id: str
    table_id: str
    round_id: int
    seat: int
    hand: str
    award_text: str
    amount_cents: int
    meter_before_cents: int
    meter_after_cents: int
    status: str
    journal_seq: int
    reviewed_by: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class LinkGroupState:
    """A link group with the meters and tables in it."""

    link_group_id: str
    description: str
    meter_ids: tuple[str, ...] = ()
    table_ids: tuple[str, ...] = ()
    journal: JournalPosition = NO_POSITION  # its epoch and journal seq
    stopped: str = ""  # why it is stopped ("" while it serves)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journal record. ``delta_*`` are microcents; ``fields`` keeps every raw field."""

    entry_id: str
    seq: int
    type: str
    meter_id: str
    delta_meter_microcents: int
    delta_reserve_microcents: int
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MeterBalance:
    """A meter's value, reserve (microcents) and pending-jackpot count at one instant."""

    meter_id: str
    value_microcents: int
    reserve_microcents: int
    pending_jackpots: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What the trimmed start of a link group's journal summed to: entries 1..``seq``, per
    meter (microcents); and how far the journal was exported (``exported_seq``, at
    ``exported_at_ms``). Entries are trimmed only once exported."""

    seq: int = 0
    value_microcents: dict[str, int] = field(default_factory=dict)
    reserve_microcents: dict[str, int] = field(default_factory=dict)
    exported_seq: int = 0
    exported_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class LinkGroupSnapshot:
    """A link group at one instant: the journal's last sequence number, the meters, the
    meter of every pending jackpot, and the checkpoint the journal now starts after."""

    seq: int
    meter_count: int
    meters: tuple[MeterBalance, ...]
    pending_jackpot_meters: tuple[str, ...]
    checkpoint: Checkpoint = field(default_factory=Checkpoint)
