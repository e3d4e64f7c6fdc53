"""What a table is answered with: meter values, accepted wagers and their contributions,
seat results and the results of a lockout, a settlement, a void, a chip count and an
irregularity.

Plain frozen dataclasses with integer money (cents, or microcents where named), shared by the
controller (which builds them from its store's replies) and the table agent (which reads them
from the wire). Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from jackpot.epochs import NO_POSITION, JournalPosition
from jackpot.kinds import AwardKind, IrregularityKind, WagerKind
from jackpot.money import floor_cents

METER_AFTER = "after the award and any reset"
"""What "meter after" means wherever it is shown (the settlement's answer, the hand-pay slip,
``report hits``, the dealer's console): the meter once the award is taken and, for a 100%
award, reset to its reset amount - what the meter shows next. Labelled with these words."""


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
    kind: WagerKind
    amount_cents: int
    contributions: tuple[Contribution, ...] = ()
    on_dealer_hand: bool = False
    envy: bool = False
    player_token: str = ""  # the seat's opaque player token given at lockout, if any

    @property
    def contributed_microcents(self) -> int:
        """Everything it added to meters and reserves."""
        return sum(contribution.total_microcents for contribution in self.contributions)


class _MetersAfter:
    """What every answer to a table carries: the meters after the step (``meters``)."""

    __slots__ = ()
    meters: tuple[MeterValue, ...]

    @property
    def meter_cents(self) -> dict[str, int]:
        """Each meter's value after the step, in whole cents."""
        return {meter.meter_id: meter.amount_cents for meter in self.meters}


@dataclass(frozen=True, slots=True)
class MysteryHit:
    """A must-hit-by meter hit at lockout: the contribution of ``seat``'s ``kind`` wager
    reached the meter's hit point and wins exactly it (``amount_cents``), a pending jackpot
    (``jackpot_id``, its journal entry ``journal_seq``). The cycle's hit point and salt are
    revealed: SHA-256 of ``"<hit_cents>:<salt>"`` is ``commitment``, journaled when the cycle
    started. ``meter_after_cents``: the reset plus the rest of the contribution."""

    meter_id: str
    seat: int
    kind: WagerKind
    amount_cents: int
    jackpot_id: str
    journal_seq: int
    cycle: int
    hit_cents: int
    salt: str
    commitment: str
    meter_after_cents: int


@dataclass(frozen=True, slots=True)
class LockoutResult(_MetersAfter):
    """The answer to a lockout: the accepted wagers, the meters after them, and the
    must-hit-by hits their contributions made (none on most rounds)."""

    table_id: str
    round_id: int
    accepted: tuple[AcceptedWager, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood
    mystery_hits: tuple[MysteryHit, ...] = ()

    @property
    def contributed_microcents(self) -> int:
        """Everything the wagers added to meters and reserves."""
        return sum(wager.contributed_microcents for wager in self.accepted)


class SeatOutcome(StrEnum):
    """What happened to a reported seat at settlement."""

    PAID = "paid"
    NO_AWARD = "no_award"
    FORFEITED = "forfeited"
    NO_WAGER = "no_wager"


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One result of a settlement, as the controller computed it (amounts in cents).

    One per accepted wager (``kind``, ``on_dealer_hand``), one per envy bonus
    (``envy_for_seat``: the seat whose hand qualified it) and one per reported seat without a
    wager (``kind`` None). ``limited_from_cents``: the award before the payout limit cut it
    (0: not cut). ``meter_before_cents``/``meter_after_cents``: the meter around a
    percentage-of-meter award. The settle script answers with these field names, the wire's
    ``SeatResult`` has them too, and the agent reads this record.
    """

    seat: int
    hand: str
    outcome: SeatOutcome
    kind: WagerKind | None = None
    on_dealer_hand: bool = False
    envy_for_seat: int = 0
    limited_from_cents: int = 0
    line: str = ""  # the paytable line paid
    award_kind: AwardKind | None = None
    award_text: str = ""
    amount_cents: int = 0
    meter_id: str = ""
    meter_before_cents: int = 0
    meter_after_cents: int = 0
    pending_validation: bool = False
    jackpot_id: str = ""
    journal_seq: int = 0


@dataclass(frozen=True, slots=True)
class SettleResult(_MetersAfter):
    """The answer to a settlement: every seat in settlement order, then the meters."""

    table_id: str
    round_id: int
    results: tuple[SeatResult, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood

    @property
    def awards(self) -> tuple[SeatResult, ...]:
        """The paid results."""
        return tuple(result for result in self.results if result.outcome is SeatOutcome.PAID)

    @property
    def paid_cents(self) -> int:
        """Every award of the round (fixed and percentage-of-meter)."""
        return sum(result.amount_cents for result in self.awards)

    @property
    def hands(self) -> dict[int, str]:
        """Each reported seat's hand, as the controller named it for its first result."""
        hands: dict[int, str] = {}
        for result in self.results:
            hands.setdefault(result.seat, result.hand)
        return hands


@dataclass(frozen=True, slots=True)
class VoidResult(_MetersAfter):
    """The answer to a void: the contributions taken back out, and the meters after."""

    table_id: str
    round_id: int
    reversed: tuple[AcceptedWager, ...]
    meters: tuple[MeterValue, ...]
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood

    @property
    def reversed_microcents(self) -> int:
        """Everything that left the meters and reserves."""
        return sum(wager.contributed_microcents for wager in self.reversed)


@dataclass(frozen=True, slots=True)
class ChipCountResult:
    """The answer to a dealer's chip count (§ 639a.8(b)): the value chips counted and the
    Progressive Payout Wagers accepted at lockout; not ``matched``, the round is irregular
    until a supervisor confirms or voids it."""

    table_id: str
    round_id: int
    chips: int
    accepted: int
    matched: bool
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood


@dataclass(frozen=True, slots=True)
class IrregularityResult(_MetersAfter):
    """The answer to a seeded irregularity: its ``effect`` ("void" or "bonus_settles") and
    ``section``, the ``reason`` journaled (for "bonus_settles", the ``rest_of_round_void`` the
    table settles with), and for a void the contributions taken back out and the meters after."""

    table_id: str
    round_id: int
    kind: IrregularityKind
    effect: str
    section: str
    reason: str
    reversed: tuple[AcceptedWager, ...] = ()
    meters: tuple[MeterValue, ...] = ()
    replayed: bool = False  # True when this answers a retry of an applied request
    journal: JournalPosition = NO_POSITION  # where the link group's journal stood

    @property
    def voided(self) -> bool:
        """True when the irregularity voided the round."""
        return self.effect == "void"

    @property
    def reversed_microcents(self) -> int:
        """Everything that left the meters and reserves (0 unless it voided the round)."""
        return sum(wager.contributed_microcents for wager in self.reversed)
