"""What the store answers besides a table's results (:mod:`jackpot.results`): meter states,
jackpots, journal entries, checkpoints and snapshots.

Plain frozen dataclasses with integer money (cents, or microcents where named), shared by the
store, the API adapters and the audit. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jackpot.epochs import NO_POSITION, JournalPosition
from jackpot.results import MeterValue


@dataclass(frozen=True, slots=True)
class StagedChange:
    """A meter change waiting for the meter's next hit (``at`` = ``"hit"``) or next reset
    (``"reset"``), staged by ``by`` at journal entry ``staged_seq`` (docs/staged-changes.md):
    the parameters it was staged against (``old_*``) and those it gives (``new_*``), cents
    and parts per million of each wager. The step that pays that hit applies it, or drops it
    (journaled with why) when the meter is no longer at ``old_*``."""

    at: str
    staged_seq: int
    old_reset_cents: int
    old_rate_ppm: int
    old_reserve_rate_ppm: int
    old_ceiling_cents: int
    new_reset_cents: int
    new_rate_ppm: int
    new_reserve_rate_ppm: int
    new_ceiling_cents: int
    by: str
    reason: str


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
    kind: str = "progressive"  # or "must_hit_by" (controller.domain.config.METER_KINDS)
    must_hit_by_cents: int = 0
    mystery_cycle: int = 0  # a must-hit-by meter's current cycle (1 from creation)
    mystery_commitment: str = ""  # SHA-256 of "<hit point cents>:<salt>"; never the hit point
    staged_change: StagedChange | None = None  # waiting for the next hit or reset
    wound_down_seq: int = 0  # the meter_wound_down entry: it takes no contributions since

    @property
    def value(self) -> MeterValue:
        """The meter's current value."""
        return MeterValue(self.meter_id, self.amount_microcents)


MYSTERY_HIT_VOID = "mystery_hit"
"""The irregularity kind of a supervisor's void of a round whose lockout won a must-hit-by
jackpot (its record ``<table>:<round>:mystery_hit``; docs/mystery.md)."""

JACKPOT_STATUSES = ("pending", "approved", "paid", "rejected", "voided")
"""A jackpot's lifecycle: ``pending`` (awaiting a supervisor's validation) -> ``approved`` ->
``paid`` (the hand-pay recorded by the cage or floor), or ``pending`` -> ``rejected`` (with its
reason), or, for a must-hit-by hit, ``pending`` -> ``voided`` (a supervisor voided the round
that won it; docs/mystery.md). Each step is one atomic, journaled store script."""


@dataclass(frozen=True, slots=True)
class Jackpot:
    """An award held for a supervisor's validation, and its hand-pay slip.

    Every percentage-of-meter award is one (its amount taken from ``meter_id`` at the seat's
    turn, ``meter_before_cents`` -> ``meter_after_cents``); so is a fixed award above the
    table's validation threshold (``meter_id`` empty: it changes no meter). ``journal_seq``
    is the award's journal entry; ``cards`` the winning hand (``"AS KS QS JS TS"``). Times are
    milliseconds since the Unix epoch from Redis's clock in the step that made the change (0:
    not yet). Identities are certificate identities (``jackpot://supervisor/ann``) with the
    certificate's SHA-256 beside them. Amounts are cents.
    """

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
    note: str = ""  # the reviewer's note; a rejection's reason
    wager: str = ""  # the wager that won: "progressive", "bonus", ...
    wager_cents: int = 0
    on_dealer_hand: bool = False
    envy_for_seat: int = 0
    cards: str = ""
    line: str = ""
    award_kind: str = ""
    hit_at_ms: int = 0
    reviewed_by_cert: str = ""
    reviewed_at_ms: int = 0
    paid_by: str = ""
    paid_by_cert: str = ""
    paid_at_ms: int = 0
    paid_note: str = ""
    void_reason: str = ""  # a must-hit-by hit reversed by its round's void: why
    voided_seq: int = 0  # and its jackpot_voided journal entry
    player_token: str = ""  # the winning seat's opaque player token given at lockout, if any
    # Payout compliance (docs/payout-compliance.md): the policy the payment was held to and
    # what it required (a jackpot still to be paid: what the controller's policy requires of
    # it now, never stored), the tax-form reference the casino's tax system issued (no
    # patron data) or the reason the form was overridden, and the hand-pay's witness.
    payout_compliance: str = ""
    tax_form_required: bool = False
    tax_form_reason: str = ""
    tax_form_overridable: bool = False
    tax_form_ref: str = ""
    tax_form_override: str = ""
    witness_required: bool = False
    witness_reason: str = ""
    witnessed_by: str = ""
    witnessed_by_cert: str = ""
    witnessed_at_ms: int = 0
    witness_note: str = ""
    witness_seq: int = 0  # its jackpot_witnessed journal entry


@dataclass(frozen=True, slots=True)
class Maintenance:
    """A link group's maintenance: while ``active`` its meters and tables may be changed and
    its tables' lockouts with a progressive wager are refused. ``by`` (a certificate identity),
    ``reason``, ``since_seq`` (the journal entry) and ``since_ms`` (Redis's clock) say who
    entered it; the last exit is kept beside (``left_*``)."""

    active: bool = False
    by: str = ""
    reason: str = ""
    since_seq: int = 0
    since_ms: int = 0
    left_by: str = ""
    left_reason: str = ""
    left_seq: int = 0


@dataclass(frozen=True, slots=True)
class LinkGroupState:
    """A link group with the meters and tables in it."""

    link_group_id: str
    description: str
    meter_ids: tuple[str, ...] = ()
    table_ids: tuple[str, ...] = ()
    journal: JournalPosition = NO_POSITION  # its epoch and journal seq
    stopped: str = ""  # why it is stopped ("" while it serves)
    maintenance: Maintenance = field(default_factory=Maintenance)


ADJUSTMENT_STATUSES = ("requested", "approved", "rejected")
"""An adjustment's lifecycle: ``requested`` by one operator (no money moves) -> ``approved`` by
another (applied to the meter in that step), or -> ``rejected`` (withdrawn or refused)."""


@dataclass(frozen=True, slots=True)
class Adjustment:
    """An audited correction of a meter: ``amount_cents`` (signed) added to ``meter_id`` when a
    second operator approves it. ``adjustment_id`` is ``<link group>:<seq>``, the journal entry
    of the request; ``decision_seq`` the entry of the decision (0: none yet). Identities are
    certificate identities; times ms since the Unix epoch from Redis's clock. ``request_id``
    is the request's idempotency key for ever (the client's, or ``content:<digest>`` of the
    requester and the content; empty in a record made before there were request ids)."""

    adjustment_id: str
    link_group_id: str
    meter_id: str
    amount_cents: int
    reason: str
    reference: str
    status: str
    requested_by: str
    request_seq: int
    requested_at_ms: int = 0
    requested_by_cert: str = ""
    decided_by: str = ""
    decided_by_cert: str = ""
    decided_at_ms: int = 0
    decision_seq: int = 0
    note: str = ""
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class RetiredMeter:
    """A meter's retirement: where its money went (microcents): ``transferred`` (the amount
    above the reset) and ``reserve_transferred`` to ``to_meter_id``, ``operator_recovered``
    (the reset amount's part) back to the operator; journal entry ``retired_seq``."""

    meter_id: str
    to_meter_id: str
    transferred_microcents: int
    reserve_transferred_microcents: int
    operator_recovered_microcents: int
    retired_seq: int
    retired_by: str
    approval: str


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
    problem: str = ""
    """Why a number of the entry does not read (its deltas are then 0; the audit names it)."""


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
    meter (microcents), and entry ``seq``'s chain ``hash`` (hex; docs/journal.md), signed
    (``signature``, hex Ed25519) by the key whose id is ``signed_by``; and how far the journal
    was exported (``exported_seq``, at ``exported_at_ms``). Entries are trimmed only once
    exported."""

    seq: int = 0
    value_microcents: dict[str, int] = field(default_factory=dict)
    reserve_microcents: dict[str, int] = field(default_factory=dict)
    exported_seq: int = 0
    exported_at_ms: int = 0
    hash: str = ""
    signature: str = ""
    signed_by: str = ""
    signed_as: str = ""
    """The signed message's domain (``controller.journal.checkpoint_signature``): "" for a
    checkpoint signed before the field existed (``jackpot-checkpoint-v1``)."""
    epoch: str = ""
    """The id of the link group's epoch the trim ran in (signed, v2)."""
    signed_exported_seq: int = 0
    """How far the journal was exported when the trim signed (signed, v2; >= ``seq``, and
    ``exported_seq`` never goes below it)."""
    key_handovers: str = ""
    """The signing key's handovers (JSON list,
    ``controller.journal.checkpoint_signature.Handover``), oldest first; "" for none."""
    signed_handovers: int = 0
    """How many of ``key_handovers`` the signature covers (signed, v2)."""


@dataclass(frozen=True, slots=True)
class LinkGroupSnapshot:
    """A link group at one instant: the journal's last sequence number, the meters, the
    meter of every pending jackpot, and the checkpoint the journal now starts after."""

    seq: int
    meters_unchanged: bool
    """Whether the meter set was still exactly the ids the snapshot was asked for."""
    meters: tuple[MeterBalance, ...]
    pending_jackpot_meters: tuple[str, ...]
    checkpoint: Checkpoint = field(default_factory=Checkpoint)
    last_entry_id: str = ""
    """The stream id of the journal's last entry ("" for none)."""
    corrupt: tuple[str, ...] = ()
    """What does not read: a message naming each corrupt meter (left out of ``meters``) and
    pending jackpot (its meter unknown)."""
    corrupt_meters: tuple[str, ...] = ()
    """The ids of the meters left out of ``meters`` because their values do not read."""


IRREGULARITY_STATUSES = ("open", "confirmed", "voided", "applied")
"""An irregularity's status: ``open`` (a chip count that differed: the round is held for a
supervisor), then ``confirmed`` or ``voided``; ``applied`` (a seeded irregularity, whose effect
was applied when the table reported it)."""


@dataclass(frozen=True, slots=True)
class Irregularity:
    """One recorded irregularity of a round (its id: ``<table>:<round>:<kind>``).

    ``effect`` is ``held`` for a chip count (the round waits for a supervisor), ``void`` or
    ``bonus_settles`` for a seeded one; ``section`` where the regulation rules on it.
    ``chips`` and ``accepted`` are a chip count's (value chips counted, Progressive Payout
    Wagers accepted). Times are milliseconds since the Unix epoch from Redis's clock; the
    resolver is a certificate identity with the certificate's SHA-256 beside it.
    """

    link_group_id: str
    table_id: str
    round_id: int
    kind: str
    effect: str
    section: str
    status: str
    journal_seq: int
    reported_at_ms: int
    chips: int = 0
    accepted: int = 0
    resolved_by: str = ""
    resolved_by_cert: str = ""
    resolved_at_ms: int = 0
    note: str = ""
