"""Corrections of a settled round: what the rules give for the round as it should have been,
against what was paid (docs/corrections.md).

:func:`plan_correction` re-plans the corrected round with the game's own evaluation and
paytables (:func:`controller.domain.settlement.plan_settlement`: the same card checks, the
same settlement order, the same payout limit) and lists, per award line (seat, wager, hand,
envy bonus), what was paid and what is due. All amounts are integer cents; contributions are
microcents.

The rule for percentage-of-meter awards (later hits have built on the meter, so it is never
recomputed against the live meter and never credited back):

* a percentage award that was paid and is still due at the same percentage keeps the amount
  paid;
* one paid that is due at another percentage is due at that percentage of the meter recorded
  before the original award (``meter_before_cents`` of its slip and journal entry);
* one paid that is not due is *recovered from the seat* (a receivable): the meter is not
  credited;
* one due that was not paid is computed from the meter as the original settlement left it
  (the round's recorded ``meters`` answer), in the corrected settlement order, each such award
  taking its share of that recorded value (100%: down to the reset); it is funded by the
  operator, never taken from the live meter.

A fixed award's difference is exact (the payout limit per hand applies to the corrected plan
as it does at settlement). Wagers added or removed (or changed in amount) move the meters by
their contributions: a removed wager's recorded contribution is taken back out exactly, an
added one contributes at the meter's rate when the correction is applied
(``apply_correction.lua``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.domain.config import TableConfig
from controller.domain.lockout import check_lockout
from controller.domain.rounds import Payout, RoundCards, Wager
from controller.domain.settlement import plan_settlement
from jackpot.errors import InvalidArgument
from jackpot.kinds import AwardKind
from jackpot.results import AcceptedWager, SeatOutcome, SeatResult

FULL_PPM = 1_000_000
"""A 100% award in parts per million."""

LineKey = tuple[int, str, bool, int]
"""An award line: (seat, wager kind, on the dealer's hand, envy for seat)."""
WagerKey = tuple[int, str, bool]
"""A wager: (seat, kind, on the dealer's hand)."""

KEPT = "kept"
"""Basis of a percentage award paid and still due: the amount paid, never recomputed."""
AT_ORIGINAL_TURN = "meter_before_original_award"
"""Basis of a percentage award paid at another percentage: the meter before the original award."""
AT_RECORDED_METER = "meter_after_original_settlement"
"""Basis of a percentage award missed: the meter the original settlement left."""
RECOVERED = "recovered_from_seat"
"""A percentage award paid that is not due: recovered from the seat, the meter not credited."""
FIXED = "fixed"
"""A fixed award (or its absence): exact."""


@dataclass(frozen=True, slots=True)
class CorrectionLine:
    """One award line whose amount the correction changes: ``paid_cents`` (what the original
    settlement paid; 0 when none or its jackpot was rejected) and ``due_cents`` (what the rules
    give for the corrected round). ``basis`` says how a percentage amount was found
    (:data:`KEPT`, :data:`AT_ORIGINAL_TURN`, :data:`AT_RECORDED_METER`, :data:`RECOVERED`) or
    :data:`FIXED`; ``meter_basis_cents`` the meter value it was computed from.
    ``needs_validation``: a positive difference that awaits a supervisor's validation before it
    is paid (a percentage award, or a fixed award above the table's threshold)."""

    seat: int
    kind: str
    on_dealer_hand: bool
    envy_for_seat: int
    hand: str
    line: str
    award_text: str
    award_kind: str
    paid_cents: int
    due_cents: int
    basis: str
    meter_id: str = ""
    meter_basis_cents: int = 0
    cards: str = ""
    wager_cents: int = 0
    needs_validation: bool = False

    @property
    def delta_cents(self) -> int:
        """Due minus paid: positive is paid to the seat, negative recovered from it."""
        return self.due_cents - self.paid_cents

    @property
    def operator_funded(self) -> bool:
        """A percentage difference: never from the live meter (paid by the operator, or a
        receivable)."""
        return self.basis != FIXED


@dataclass(frozen=True, slots=True)
class WagerChange:
    """A wager the correction removes (``removed``: its recorded contributions leave the
    meters) or adds (its contribution to ``meter_ids`` at their rates when applied)."""

    seat: int
    kind: str
    amount_cents: int
    on_dealer_hand: bool
    envy: bool
    removed: bool
    meter_ids: tuple[str, ...] = ()
    to_meter_microcents: tuple[int, ...] = ()  # a removed wager's, per meter_ids
    to_reserve_microcents: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CorrectionPlan:
    """What a correction changes: the award lines and the wagers, in settlement order."""

    lines: tuple[CorrectionLine, ...]
    wagers: tuple[WagerChange, ...]

    @property
    def pay_cents(self) -> int:
        """Every positive difference (paid to the seats)."""
        return sum(line.delta_cents for line in self.lines if line.delta_cents > 0)

    @property
    def recover_cents(self) -> int:
        """Every negative difference, as a positive amount (recovered from the seats)."""
        return -sum(line.delta_cents for line in self.lines if line.delta_cents < 0)

    @property
    def operator_funded_cents(self) -> int:
        """The percentage differences paid by the operator (never by the live meter)."""
        return sum(
            line.delta_cents for line in self.lines if line.operator_funded and line.delta_cents > 0
        )

    def by_seat(self) -> dict[int, int]:
        """Per seat, the award difference the table settles from the slip, in cents
        (positive: pay; negative: recover). A line that awaits validation is not in it: it
        becomes a pending jackpot when the correction is applied and is paid as one
        (``jackpot_ids``), never from the slip as well."""
        seats: dict[int, int] = {}
        for line in self.lines:
            if not line.needs_validation:
                seats[line.seat] = seats.get(line.seat, 0) + line.delta_cents
        return seats


def _line_key(seat: int, kind: str, on_dealer: bool, envy_for: int) -> LineKey:
    return (seat, kind, on_dealer and not envy_for, envy_for)


def _share(meter_cents: int, ppm: int) -> int:
    """``ppm`` of ``meter_cents``, rounded down to a whole cent (as settle.lua)."""
    return meter_cents * ppm // FULL_PPM


def _wager_changes(
    table: TableConfig, original: Sequence[AcceptedWager], corrected: Sequence[Wager]
) -> list[WagerChange]:
    before = {(w.seat, str(w.kind), w.on_dealer_hand): w for w in original}
    after = {(w.seat, w.kind, w.on_dealer_hand): w for w in corrected}
    changes: list[WagerChange] = []
    for key, old in before.items():
        new = after.get(key)
        if new is not None and (new.amount_cents, new.envy) == (old.amount_cents, old.envy):
            continue
        changes.append(
            WagerChange(
                old.seat,
                str(old.kind),
                old.amount_cents,
                old.on_dealer_hand,
                old.envy,
                removed=True,
                meter_ids=tuple(c.meter_id for c in old.contributions),
                to_meter_microcents=tuple(c.to_meter_microcents for c in old.contributions),
                to_reserve_microcents=tuple(c.to_reserve_microcents for c in old.contributions),
            )
        )
    for key, new in after.items():
        old_wager = before.get(key)
        if old_wager is not None and (old_wager.amount_cents, old_wager.envy) == (
            new.amount_cents,
            new.envy,
        ):
            continue
        offer = table.offer(new.kind)
        changes.append(
            WagerChange(
                new.seat,
                new.kind,
                new.amount_cents,
                new.on_dealer_hand,
                new.envy,
                removed=False,
                meter_ids=tuple(offer.meter_ids) if offer else (),
            )
        )
    return changes


def plan_correction(
    table: TableConfig,
    original_wagers: Sequence[AcceptedWager],
    original_results: Sequence[SeatResult],
    meters_after_cents: Mapping[str, int],
    reset_cents: Mapping[str, int],
    corrected_wagers: Sequence[Wager],
    corrected_cards: RoundCards,
    *,
    unpaid_jackpots: frozenset[str] = frozenset(),
) -> CorrectionPlan:
    """The difference between the original settlement (``original_wagers`` with their
    recorded contributions, ``original_results`` as the settle step answered them,
    ``meters_after_cents`` the meters it left) and the rules applied to ``corrected_wagers``
    and ``corrected_cards`` (checked as a lockout and a settlement are: limits, seats, a real
    deck, the right counts). ``reset_cents``: each meter's reset (a missed 100% award leaves
    the recorded meter at it for a later missed one). ``unpaid_jackpots``: jackpots of the
    round that were rejected (their award counts as not paid).

    Refused (:class:`InvalidArgument`, nothing changes): corrected wagers or cards that a
    lockout or settlement would refuse, and a correction that changes nothing."""
    wagers = check_lockout(table, corrected_wagers)
    plan = plan_settlement(table, wagers, corrected_cards)
    paid: dict[LineKey, SeatResult] = {}
    for result in original_results:
        if result.outcome is SeatOutcome.PAID and result.kind is not None:
            key = _line_key(
                result.seat, str(result.kind), result.on_dealer_hand, result.envy_for_seat
            )
            paid[key] = result
    recorded = dict(meters_after_cents)
    lines: list[CorrectionLine] = []
    seen: set[LineKey] = set()
    for payout in plan:
        if payout.outcome is not SeatOutcome.PAID or payout.award is None:
            continue
        key = _line_key(payout.seat, payout.kind, payout.on_dealer_hand, payout.envy_for_seat)
        seen.add(key)
        old = paid.get(key)
        if old is not None and old.line != payout.line and not _both_percent(old, payout):
            lines.append(_not_due(old, unpaid_jackpots))  # another line: two on the slip
            old = None
        lines.append(_due(table, payout, old, recorded, reset_cents, unpaid_jackpots))
    for key, old in paid.items():
        if key in seen:
            continue
        lines.append(_not_due(old, unpaid_jackpots))
    changes = _wager_changes(table, original_wagers, wagers)
    lines = [line for line in lines if line.delta_cents]
    if not lines and not changes:
        raise InvalidArgument(
            "the correction changes nothing: the corrected wagers and cards pay exactly what "
            "the round paid"
        )
    return CorrectionPlan(tuple(lines), tuple(changes))


def _both_percent(old: SeatResult, payout: Payout) -> bool:
    """A percentage award paid that is due at another percentage of the same meter."""
    return (
        old.award_kind is AwardKind.PERCENT_OF_METER
        and payout.award is not None
        and payout.award.kind is AwardKind.PERCENT_OF_METER
        and old.meter_id == payout.meter_id
    )


def _paid_cents(old: SeatResult | None, unpaid: frozenset[str]) -> int:
    if old is None or (old.jackpot_id and old.jackpot_id in unpaid):
        return 0
    return old.amount_cents


def _due(
    table: TableConfig,
    payout: Payout,
    old: SeatResult | None,
    recorded: dict[str, int],
    reset_cents: Mapping[str, int],
    unpaid: frozenset[str],
) -> CorrectionLine:
    """The corrected line ``payout`` against what was paid for it (``old``)."""
    assert payout.award is not None  # only paid lines
    paid = _paid_cents(old, unpaid)
    basis, meter_id, base = FIXED, "", 0
    if payout.award.kind is AwardKind.PERCENT_OF_METER:
        meter_id = payout.meter_id
        ppm = payout.award.meter_ppm
        was_percent = old is not None and old.award_kind is AwardKind.PERCENT_OF_METER and paid > 0
        if old is not None and was_percent and old.meter_id == meter_id:
            base = old.meter_before_cents
            if _share(base, ppm) == old.amount_cents and old.award_text == payout.award.text:
                basis, due = KEPT, old.amount_cents
            else:
                basis, due = AT_ORIGINAL_TURN, _share(base, ppm)
        else:
            base = recorded.get(meter_id, 0)
            due = _share(base, ppm)
            recorded[meter_id] = reset_cents.get(meter_id, 0) if ppm == FULL_PPM else base - due
            basis = AT_RECORDED_METER
        needs = True
    else:
        due = payout.amount_cents
        threshold = table.validation_threshold_cents
        needs = threshold is not None and due - paid > threshold
    return CorrectionLine(
        payout.seat,
        payout.kind,
        payout.on_dealer_hand,
        payout.envy_for_seat,
        payout.hand,
        payout.line,
        payout.award.text,
        payout.award_kind,
        paid,
        due,
        basis,
        meter_id,
        base,
        payout.cards,
        payout.wager_cents,
        needs_validation=needs and due > paid,
    )


def _not_due(old: SeatResult, unpaid: frozenset[str]) -> CorrectionLine:
    """A line paid that the corrected round does not pay: recovered from the seat."""
    percent = old.award_kind is AwardKind.PERCENT_OF_METER
    return CorrectionLine(
        old.seat,
        str(old.kind),
        old.on_dealer_hand,
        old.envy_for_seat,
        old.hand,
        old.line,
        old.award_text,
        str(old.award_kind or ""),
        _paid_cents(old, unpaid),
        0,
        RECOVERED if percent else FIXED,
        old.meter_id,
        old.meter_before_cents,
    )


CORRECTION_STATUSES = ("requested", "approved", "rejected")
"""A correction is requested, then approved (applied) or rejected, once."""


@dataclass(frozen=True, slots=True)
class Correction:
    """The record of a correction of a settled round (``<group>:<seq of its request>``).

    ``lines`` and ``wagers`` are its :class:`CorrectionPlan`; ``pay_cents``,
    ``recover_cents`` and ``operator_funded_cents`` its totals (cents). ``corrected_wagers``
    and ``corrected_cards`` are the round as it should have been (JSON text, as requested);
    ``settle_fp`` the settlement it was computed against. ``jackpot_ids``: the pending
    jackpots its approval made (the normal validation and payment flow pays them).
    ``from_table``: requested from the dealer's console inside the dealer's window.
    Identities are certificate identities, with the certificate's SHA-256 beside them;
    times are ms from Redis's clock."""

    correction_id: str
    link_group_id: str
    table_id: str
    round_id: int
    status: str
    reason: str
    requested_by: str
    request_seq: int
    lines: tuple[CorrectionLine, ...] = ()
    wagers: tuple[WagerChange, ...] = ()
    pay_cents: int = 0
    recover_cents: int = 0
    operator_funded_cents: int = 0
    corrected_wagers: str = ""
    corrected_cards: str = ""
    settle_fp: str = ""
    content_fp: str = ""
    request_id: str = ""
    requested_by_cert: str = ""
    requested_at_ms: int = 0
    from_table: bool = False
    decided_by: str = ""
    decided_by_cert: str = ""
    decided_at_ms: int = 0
    decision_seq: int = 0
    note: str = ""
    jackpot_ids: tuple[str, ...] = ()

    def by_seat(self) -> dict[int, int]:
        """Per seat, the award difference in cents (positive: pay; negative: recover)."""
        return CorrectionPlan(self.lines, self.wagers).by_seat()
