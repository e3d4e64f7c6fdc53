"""The meter money, as a reference model in pure Python.

The store's Lua scripts do this arithmetic atomically in Redis (``lockout.lua``,
``settle.lua``, ``void_round.lua``, ``review_jackpot.lua``); this module states the same rules
once more, independently, so that a differential test can run random sequences of steps
through both and require identical meters, reserves and journal amounts
(tests/integration/test_meter_money.py). It is not on the request path.

Units: meter values and reserves are integer **microcents** (1 cent = 1,000,000); wagers,
awards and the reset are cents; rates are parts per million (ppm) of the wager. The rules:

* **contribution** (§ 639a.12(d)(2)): a wager of A cents adds A x rate to the meter and
  A x reserve rate to the reserve; above the meter's ceiling, what would pass it goes to the
  reserve instead;
* **percentage award** (§ 639a.12(d)(4)): P% of the meter *as it stands at that wager's turn*,
  in whole cents rounded down, taken from the meter at once; a 100% award then resets the
  meter to its reset amount, funded from the reserve first and the shortfall by the operator;
* **void**: each contribution of the round leaves the meter and reserve again; what the
  reserve no longer holds is taken from the meter; when a hit on the meter since the round's
  lockout paid the contribution out, the meter is not taken below its reset amount, the
  operator funding the difference;
* **rejection** of a pending jackpot: its amount returns to the meter, and a 100% award's reset
  is undone (the reserve's part to the reserve, the operator's seed back to the operator);
* **must-hit-by** (docs/mystery.md): the contribution that brings the meter to its hit point
  ``hit_cents`` wins exactly the hit point; the meter resets (funded from the reserve first,
  the shortfall by the operator) and the rest of that contribution starts the next cycle,
  whose hit point is the next draw (it may be reached by the same rest: another hit). A void
  of a contribution that hit is not taken below the reset, as after a hit since its lockout;
  the rejection of a must-hit-by jackpot returns its amount to the reserve (the meter is in
  its next cycle under a committed hit point).
* **adjustment** (approved by a second operator, ``review_adjustment.lua``): its signed amount
  is added to the meter, which stays within zero and its ceiling;
* **staged change** (docs/staged-changes.md, ``_lib.lua`` ``staged_check``): a change staged
  for the next hit (``at="hit"``) or the next reset (``"reset"``) is applied by the award that
  hits the meter, after the award is taken and before its reset (so the meter resets to the new
  reset amount and later contributions run at the new rates), or dropped when the meter's
  parameters are no longer those it was staged against or a new ceiling would not be above the
  new reset and what the meter holds after the hit;
* **retirement** (``retire_meter.lua``): the amount above the reset moves to the other meter
  (up to its ceiling, the rest to its reserve), the reserve to the other meter's reserve, the
  rest (the reset's part) back to the operator; the retired meter holds nothing after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jackpot.money import FULL_PPM, MICROCENTS_PER_CENT, percent_of_cents

MICRO = MICROCENTS_PER_CENT


@dataclass
class MeterBook:
    """One meter's money and parameters: ``value`` and ``reserve`` in microcents, the rates
    in ppm, ``ceiling_cents`` 0 for none, ``last_hit_seq`` the journal seq of its last hit."""

    meter_id: str
    value: int
    reserve: int
    rate_ppm: int
    reserve_rate_ppm: int
    reset_cents: int
    ceiling_cents: int = 0
    last_hit_seq: int = 0
    hit_cents: int = 0
    """A must-hit-by meter's current hit point (cents); 0 for a progressive meter."""
    staged: StagedChange | None = None
    """A change waiting for the meter's next hit or reset."""

    @property
    def parameters(self) -> tuple[int, int, int, int]:
        """(reset_cents, rate_ppm, reserve_rate_ppm, ceiling_cents), a staged change's order."""
        return (self.reset_cents, self.rate_ppm, self.reserve_rate_ppm, self.ceiling_cents)

    @classmethod
    def created(
        cls,
        meter_id: str,
        *,
        reset_cents: int,
        rate_ppm: int,
        reserve_rate_ppm: int = 0,
        ceiling_cents: int = 0,
    ) -> MeterBook:
        """A new meter: at its reset amount (operator seed), an empty reserve."""
        return cls(
            meter_id, reset_cents * MICRO, 0, rate_ppm, reserve_rate_ppm, reset_cents, ceiling_cents
        )


@dataclass(frozen=True, slots=True)
class StagedChange:
    """A staged change: ``at`` ``"hit"`` or ``"reset"``, the parameters it was staged against
    and those it gives, each (reset_cents, rate_ppm, reserve_rate_ppm, ceiling_cents)."""

    at: str
    old: tuple[int, int, int, int]
    new: tuple[int, int, int, int]


def take_staged(book: MeterBook, resets: bool) -> bool | None:
    """At a hit (``resets``: one that resets the meter), after its award is taken: apply the
    staged change (True), drop it (False), or leave it waiting (None: none, or one for the
    next reset at a hit that does not reset)."""
    staged = book.staged
    if staged is None or (staged.at == "reset" and not resets):
        return None
    book.staged = None
    reset, ceiling = staged.new[0], staged.new[3]
    after = reset * MICRO if resets else book.value
    if staged.old != book.parameters or (ceiling and (ceiling <= reset or ceiling * MICRO < after)):
        return False
    book.reset_cents, book.rate_ppm, book.reserve_rate_ppm, book.ceiling_cents = staged.new
    return True


@dataclass(frozen=True, slots=True)
class MysteryAward:
    """A must-hit-by hit: the hit point won (cents), the reset's part from the reserve
    (microcents; the operator funds the rest of the reset) and the meter after (microcents)."""

    amount_cents: int
    from_reserve: int
    after: int


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one wager put in: to the meter and to the reserve, microcents; on a must-hit-by
    meter, the hits it made."""

    to_meter: int
    to_reserve: int
    hits: tuple[MysteryAward, ...] = ()


def contribute(
    book: MeterBook, amount_cents: int, next_hit: Callable[[], int] | None = None
) -> Contribution:
    """A wager of ``amount_cents`` feeds the meter (see the module); on a must-hit-by meter
    ``next_hit`` gives the hit point of each cycle a hit starts."""
    to_meter = amount_cents * book.rate_ppm
    to_reserve = amount_cents * book.reserve_rate_ppm
    if book.ceiling_cents:
        room = max(book.ceiling_cents * MICRO - book.value, 0)
        if to_meter > room:
            to_reserve += to_meter - room
            to_meter = room
    book.value += to_meter
    book.reserve += to_reserve
    hits: list[MysteryAward] = []
    while book.hit_cents and book.value >= book.hit_cents * MICRO:
        if next_hit is None:
            raise ValueError(f"meter {book.meter_id} is must-hit-by: a hit needs the next draw")
        rest = book.value - book.hit_cents * MICRO
        from_reserve = min(book.reserve, book.reset_cents * MICRO)
        book.reserve -= from_reserve
        book.value = book.reset_cents * MICRO + rest
        hits.append(MysteryAward(book.hit_cents, from_reserve, book.value))
        book.hit_cents = next_hit()
    return Contribution(to_meter, to_reserve, tuple(hits))


@dataclass(frozen=True, slots=True)
class PercentAward:
    """A percentage award at its turn: the amount (cents), the meter before it (whole cents),
    and for a 100% award the reset: ``topup`` added to the meter and the part of it
    ``from_reserve`` (microcents); the operator funds ``topup - from_reserve``."""

    amount_cents: int
    before_cents: int
    topup: int = 0
    from_reserve: int = 0

    @property
    def operator_seed(self) -> int:
        """What the operator funded of the reset, microcents."""
        return self.topup - self.from_reserve


def award_percent(book: MeterBook, ppm: int, seq: int) -> PercentAward:
    """Pay ``ppm`` of the meter at this turn (journal seq ``seq``), see the module."""
    before = book.value // MICRO
    amount = percent_of_cents(before, ppm)
    book.value -= amount * MICRO
    book.last_hit_seq = seq
    take_staged(book, ppm == FULL_PPM)
    if ppm != FULL_PPM:
        return PercentAward(amount, before)
    topup = book.reset_cents * MICRO - book.value
    from_reserve = min(book.reserve, topup)
    book.reserve -= from_reserve
    book.value = book.reset_cents * MICRO
    return PercentAward(amount, before, topup, from_reserve)


@dataclass(frozen=True, slots=True)
class VoidReturn:
    """What a void took back of one contribution (microcents): from the meter, from the
    reserve, and what the operator funded instead of the meter."""

    from_meter: int
    from_reserve: int
    operator_funded: int


def void(book: MeterBook, given: Contribution, lockout_seq: int) -> VoidReturn:
    """Take one contribution of a round locked out at journal ``lockout_seq`` back out."""
    from_meter, from_reserve = given.to_meter, given.to_reserve
    if from_reserve > book.reserve:
        from_meter += from_reserve - book.reserve
        from_reserve = book.reserve
    funded = 0
    if book.last_hit_seq > lockout_seq or given.hits:
        funded = max(0, from_meter - max(0, book.value - book.reset_cents * MICRO))
    from_meter -= funded
    book.value -= from_meter
    book.reserve -= from_reserve
    return VoidReturn(from_meter, from_reserve, funded)


def reject(book: MeterBook, award: PercentAward) -> None:
    """Undo a pending percentage award (see the module)."""
    book.value += award.amount_cents * MICRO - award.topup
    book.reserve += award.from_reserve


def reject_mystery(book: MeterBook, award: MysteryAward) -> None:
    """Reject a pending must-hit-by jackpot: its amount goes to the reserve (see the module)."""
    book.reserve += award.amount_cents * MICRO


def adjust(book: MeterBook, amount_cents: int) -> bool:
    """Apply an approved adjustment of ``amount_cents`` (signed); False (nothing changes) when
    it would take the meter below zero or above its ceiling."""
    after = book.value + amount_cents * MICRO
    if after < 0 or (book.ceiling_cents and after > book.ceiling_cents * MICRO):
        return False
    book.value = after
    return True


@dataclass(frozen=True, slots=True)
class Retirement:
    """Where a retired meter's money went (microcents): ``to_meter`` and ``to_reserve`` of the
    other meter (the amount above the reset, diverted to the reserve above the other meter's
    ceiling, plus the reserve), ``recovered`` back to the operator."""

    to_meter: int
    to_reserve: int
    recovered: int


def retire(book: MeterBook, into: MeterBook) -> Retirement:
    """Retire ``book``, moving its money to ``into`` (see the module)."""
    above = max(book.value - book.reset_cents * MICRO, 0)
    room = above
    if into.ceiling_cents:
        room = max(into.ceiling_cents * MICRO - into.value, 0)
    to_meter = min(above, room)
    moved = Retirement(to_meter, above - to_meter + book.reserve, book.value - above)
    into.value += moved.to_meter
    into.reserve += moved.to_reserve
    book.value = book.reserve = 0
    return moved
