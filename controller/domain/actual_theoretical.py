"""Actual against theoretical: what the journal shows beside what the paytable's odds expect.

Mississippi (13-7-9.6, 13-8-4.5) asks for a monthly analysis of the actual return of each game
against its theoretical one, and an investigation beyond +-4%. Pure: the caller reads the
window's journal entries and the tables (:mod:`controller.ctl.theoretical`); nothing here does
I/O. The method, as a lab would check it, is in docs/theoretical.md.

For each (game, wager kind, paytable) the trials are the wagers that stood: every wager of the
window's ``wagers_accepted`` entries (lockout) less the wagers of those rounds voided in the
window. Observed are the awards of those rounds (``fixed_award`` and percentage ``award``
entries, by the paytable line they paid; envy bonuses apart), less the awards a supervisor
rejected in the window. Theoretical are the exact line probabilities of the odds calculator
(:func:`controller.domain.odds.paytable_odds`).

- **Hit counts, per line.** ``n`` trials, probability ``p``: expected ``n p``, variance
  ``n p (1 - p)``. The observed count ``k`` is inside the band when
  ``(k - n p)^2 <= z^2 n p (1 - p)``, compared exactly in fractions (``z^2`` rational): this is
  the score test, so the band is exactly the set of ``p`` inside the Wilson interval of
  ``k / n`` at the stated confidence. The band's edges are the least and greatest whole
  numbers of hits inside it.
- **Return, the fixed lines.** One wager of ``w`` cents pays ``M w + A`` cents on a line ("N for
  1": M = N; "N to 1": M = N + 1; "$A": A), so the paid total over the trials has mean
  ``C E[M] + n E[A]`` and variance ``W2 Var(M) + n Var(A) - 2 C E[M] E[A]`` (``C`` the cents
  wagered, ``W2`` the sum of the squared wagers; lines exclude each other, so ``E[M A] = 0``).
  A wager with one amount (every wager that feeds a meter) gives ``W2 = n w^2`` exactly; a
  wager whose amount varies gives the upper bound ``W2 <= max x C`` (a wider band), and the row
  says so. The observed paid total (integer cents, what the journal paid, after any payout
  limit) is inside the band when ``(paid - mean)^2 <= z^2 variance``.
- **Percentage-of-meter lines** are reported separately: their hit counts are tested as above;
  what they paid depends on the meter, which the wagers' contributions fund, so their
  theoretical return is not a fixed fraction of the handle. Beside their actual payout the row
  shows the contributions of the same wagers (microcents): over the long run a meter pays what
  it was given (the audit proves that to the microcent), so that is the meter part's
  theoretical.
- **The regulator's 4%.** The relative deviation ``(observed - expected) / expected`` is shown
  beside the band, and flagged beyond :data:`REGULATOR_TOLERANCE`; for small samples only the
  band is meaningful (a line expected twice is "off" by 50% with one hit), which the row says
  (``few_expected``: fewer than :data:`FEW_EXPECTED` expected).

Money is integers (cents; contributions in microcents); expectations, variances and ratios are
exact fractions; nothing is rounded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from controller.domain.config import TableConfig
from controller.domain.odds import paytable_odds
from controller.domain.paytables import AwardRule, Paytable
from controller.domain.records import JournalEntry
from jackpot.errors import InvalidArgument
from jackpot.kinds import AwardKind

REGULATOR_TOLERANCE = Fraction(4, 100)
"""Mississippi's +-4% of actual against theoretical, beyond which an operator investigates."""

FEW_EXPECTED = 5
"""Below this many expected hits (or expected misses) the normal band is rough and the 4% is
noise: the row is marked ``few_expected``."""

CONFIDENCE_Z: dict[str, Fraction] = {
    "95": Fraction(19600, 10000),
    "99": Fraction(25758, 10000),
    "99.9": Fraction(32905, 10000),
}
"""The two-sided confidence levels offered and their normal quantiles z (to 4 decimals, as
exact fractions): the band is expected +- z standard deviations."""

DEFAULT_CONFIDENCE = "99"

_COUNT_PREFIX, _CENTS_PREFIX = "count:", "cents:"
_CONFIG_TYPES = frozenset({"table_registered", "table_updated", "table_retired"})


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Band:
    """A test of ``observed`` against ``expected`` (a fraction) with ``variance``: inside when
    ``(observed - expected)^2 <= z^2 variance``; ``low``/``high``: the least and greatest
    integers (hits, or cents) inside the band."""

    observed: int
    expected: Fraction
    variance: Fraction
    z: Fraction
    low: int
    high: int

    @property
    def inside(self) -> bool:
        """Whether the observed value lies in the band (exact)."""
        return (self.observed - self.expected) ** 2 <= self.z**2 * self.variance

    @property
    def deviation(self) -> Fraction | None:
        """``(observed - expected) / expected``, the regulator's percentage as a fraction
        (None when nothing is expected)."""
        if self.expected == 0:
            return None
        return (self.observed - self.expected) / self.expected

    @property
    def beyond_tolerance(self) -> bool:
        """Whether the deviation is beyond the regulator's +-4% (a hit with none expected
        is beyond it too)."""
        deviation = self.deviation
        if deviation is None:
            return self.observed != 0
        return abs(deviation) > REGULATOR_TOLERANCE


def band(observed: int, expected: Fraction, variance: Fraction, z: Fraction) -> Band:
    """The band ``expected +- z sqrt(variance)``: ``low``/``high`` are the least and the
    greatest integer inside it (exact; no lower than 0, as hits and cents are not negative),
    so an integer ``observed`` of 0 or more is inside exactly when ``low <= observed <= high``."""
    spread = z**2 * variance  # (z sd)^2, exact
    root = Fraction(math.isqrt(spread.numerator // spread.denominator))  # <= sqrt(spread)

    def inside(value: int) -> bool:
        return (value - expected) ** 2 <= spread

    high = math.floor(expected + root)
    while inside(high + 1):
        high += 1
    low = math.ceil(expected - root)
    while low > 0 and inside(low - 1):
        low -= 1
    return Band(observed, expected, variance, z, max(low, 0), high)


@dataclass(frozen=True, slots=True)
class LineComparison:
    """One paytable line: its probability, and the hits observed against the band."""

    line: str
    award: str
    meter_line: bool  # a percentage-of-meter line
    probability: Fraction
    hits: Band

    @property
    def few_expected(self) -> bool:
        """Fewer than :data:`FEW_EXPECTED` hits or misses expected: only the band counts."""
        trials_expected_misses = (
            self.hits.expected * (1 - self.probability) / self.probability
            if self.probability
            else Fraction(0)
        )
        return self.hits.expected < FEW_EXPECTED or trials_expected_misses < FEW_EXPECTED


@dataclass
class Comparison:
    """One (game, wager kind, paytable) over the window.

    ``wagers``/``wagered_cents``: the trials and their amount. ``fixed_paid``: the fixed lines'
    payout in cents against its band (``variance_exact`` False: the wager's amount varies and
    the variance is an upper bound). ``meter_paid_cents``: what the percentage lines paid;
    ``contributed_microcents``: what the same wagers gave their meters and reserves.
    ``envy_paid_cents``: envy bonuses paid on these wagers' hands (to other seats, not in the
    return). ``limited_cents``: what the payout limit cut from fixed awards. ``unlisted_hits``:
    awards on a line the current paytable does not list (see ``notes``)."""

    game: str
    wager: str
    paytable: str
    tables: tuple[str, ...]
    wagers: int
    wagered_cents: int
    lines: tuple[LineComparison, ...]
    fixed_paid: Band
    variance_exact: bool
    meter_paid_cents: int
    contributed_microcents: int
    envy_paid_cents: int
    limited_cents: int
    unlisted_hits: int
    notes: tuple[str, ...] = ()

    @property
    def fixed_return(self) -> Fraction | None:
        """Actual return of the fixed lines per unit wagered (None without wagers)."""
        return (
            Fraction(self.fixed_paid.observed, self.wagered_cents) if self.wagered_cents else None
        )

    @property
    def theoretical_fixed_return(self) -> Fraction | None:
        """Theoretical return of the fixed lines per unit wagered (None without wagers)."""
        return self.fixed_paid.expected / self.wagered_cents if self.wagered_cents else None

    @property
    def flagged(self) -> bool:
        """Whether anything lies outside its band."""
        return not self.fixed_paid.inside or any(not line.hits.inside for line in self.lines)


# ----------------------------------------------------------------------------- tallies


@dataclass
class _TableTally:
    """One table's wagers of one kind: trials, their amount, and what was paid per line."""

    wagers: int = 0
    cents: int = 0
    hits: dict[str, int] = field(default_factory=dict)
    fixed_paid_cents: int = 0
    meter_paid_cents: int = 0
    contributed_microcents: int = 0
    envy_paid_cents: int = 0
    limited_cents: int = 0


@dataclass(frozen=True, slots=True)
class _Moments:
    """Per-wager moments of a paytable's fixed lines: E[M], E[M^2], E[A], E[A^2] (M the
    multiplier of the wager, A a fixed amount in cents)."""

    m1: Fraction
    m2: Fraction
    a1: Fraction
    a2: Fraction


def _multiplier_and_amount(rule: AwardRule) -> tuple[int, int]:
    """A fixed line's payout as ``M x wager + A`` cents: (M, A); a meter line (0, 0)."""
    if rule.kind is AwardKind.FOR_ONE:
        return rule.multiplier, 0
    if rule.kind is AwardKind.TO_ONE:
        return rule.multiplier + 1, 0
    if rule.kind is AwardKind.FIXED_AMOUNT:
        return 0, rule.amount_cents
    return 0, 0


def moments(lines: Iterable[tuple[Fraction, AwardRule]]) -> _Moments:
    """The per-wager moments of the fixed lines, from (probability, award) pairs."""
    m1 = m2 = a1 = a2 = Fraction(0)
    for probability, rule in lines:
        multiplier, amount = _multiplier_and_amount(rule)
        m1 += probability * multiplier
        m2 += probability * multiplier**2
        a1 += probability * amount
        a2 += probability * amount**2
    return _Moments(m1, m2, a1, a2)


def fixed_mean_variance(
    m: _Moments, wagers: int, cents: int, squares: int
) -> tuple[Fraction, Fraction]:
    """Mean and variance (cents, cents^2) of the fixed lines' total payout over ``wagers``
    independent wagers of ``cents`` in all, ``squares`` the sum of their squared amounts."""
    mean = cents * m.m1 + wagers * m.a1
    variance = squares * (m.m2 - m.m1**2) + wagers * (m.a2 - m.a1**2) - 2 * cents * m.m1 * m.a1
    return mean, max(variance, Fraction(0))


# ----------------------------------------------------------------------------- comparison


def compare(
    windows: Sequence[tuple[Sequence[JournalEntry], Sequence[TableConfig]]],
    confidence: str = DEFAULT_CONFIDENCE,
) -> list[Comparison]:
    """Actual against theoretical over the windows of link groups (each: its entries, oldest
    first, and its tables), per (game, wager kind, paytable) in that order. The tables' current
    paytables are the theory; a table whose configuration changed in the window is noted."""
    z = CONFIDENCE_Z.get(confidence)
    if z is None:
        raise InvalidArgument(
            f"confidence {confidence!r}: choose one of {', '.join(CONFIDENCE_Z)} (percent)"
        )
    tallies: dict[tuple[str, str, str], _TableTally] = {}
    table_of: dict[tuple[str, str], TableConfig] = {}
    changed: set[tuple[str, str]] = set()
    for group_index, (entries, tables) in enumerate(windows):
        group = str(group_index)
        for table in tables:
            table_of[(group, table.table_id)] = table
        _tally(group, entries, tallies, changed)
    grouped: dict[tuple[str, str, Paytable], list[tuple[TableConfig, _TableTally]]] = {}
    for (group, table_id, wager), tally in tallies.items():
        config = table_of.get((group, table_id))
        offer = config.offer(wager) if config is not None else None
        if config is None or offer is None:
            continue  # no longer registered or offered: no paytable to compare with
        key = (config.game, wager, offer.paytable)
        grouped.setdefault(key, []).append((config, tally))
    out = [
        _comparison(game, wager, paytable, members, z, changed)
        for (game, wager, paytable), members in grouped.items()
    ]
    return sorted(out, key=lambda c: (c.game, c.wager, c.paytable))


def _tally(
    group: str,
    entries: Sequence[JournalEntry],
    tallies: dict[tuple[str, str, str], _TableTally],
    changed: set[tuple[str, str]],
) -> None:
    """Add one link group's window to ``tallies`` (by group, table, wager kind)."""

    def tally(table_id: str, wager: str) -> _TableTally:
        return tallies.setdefault((group, table_id, wager), _TableTally())

    standing = _standing_rounds(group, entries, changed)
    for key, locked in standing.items():
        fields = locked.fields
        for name, value in fields.items():
            if name.startswith(_COUNT_PREFIX):
                wager = name[len(_COUNT_PREFIX) :]
                t = tally(key[0], wager)
                t.wagers += int(value)
                t.cents += int(fields[_CENTS_PREFIX + wager])
    awards: dict[int, JournalEntry] = {}
    for e in entries:
        f = e.fields
        if e.type == "contribution" and (f["table"], f["round"]) in standing:
            t = tally(f["table"], f["wager"])
            t.contributed_microcents += e.delta_meter_microcents + e.delta_reserve_microcents
        elif e.type in ("award", "fixed_award") and (f["table"], f["round"]) in standing:
            awards[e.seq] = e
            _add_award(tally(f["table"], f["wager"]), e, sign=1)
        elif e.type == "jackpot_rejected":
            award = awards.get(int(f["jackpot"].rpartition(":")[2] or 0))
            if award is not None:
                _add_award(tally(award.fields["table"], award.fields["wager"]), award, sign=-1)


def _standing_rounds(
    group: str, entries: Sequence[JournalEntry], changed: set[tuple[str, str]]
) -> dict[tuple[str, str], JournalEntry]:
    """The window's rounds locked out and not voided in it: (table, round) -> its
    ``wagers_accepted`` entry; tables whose configuration changed are added to ``changed``."""
    locked: dict[tuple[str, str], JournalEntry] = {}
    voided: set[tuple[str, str]] = set()
    for e in entries:
        f = e.fields
        if e.type in _CONFIG_TYPES and "table" in f:
            changed.add((group, f["table"]))
        elif e.type == "wagers_accepted":
            locked[(f["table"], f["round"])] = e
        elif e.type == "round_voided":
            voided.add((f["table"], f["round"]))
    return {key: e for key, e in locked.items() if key not in voided}


def _add_award(t: _TableTally, e: JournalEntry, *, sign: int) -> None:
    """Count (``sign`` 1) or take back (-1, rejected) one award entry."""
    f = e.fields
    amount = sign * int(f["amount_cents"])
    if e.type == "fixed_award" and f.get("envy_for_seat", "0") not in ("", "0"):
        t.envy_paid_cents += amount
        return
    line = f.get("line") or f.get("hand", "")
    t.hits[line] = t.hits.get(line, 0) + sign
    if e.type == "award":
        t.meter_paid_cents += amount
    else:
        t.fixed_paid_cents += amount
        t.limited_cents += sign * max(
            int(f.get("limited_from_cents", "0")) - int(f["amount_cents"]), 0
        )


def _comparison(
    game: str,
    wager: str,
    paytable: Paytable,
    members: list[tuple[TableConfig, _TableTally]],
    z: Fraction,
    changed: set[tuple[str, str]],
) -> Comparison:
    first_table = members[0][0]
    rules = first_table.game_rules.wager(wager)
    odds = paytable_odds(paytable, rules.line_counts(), meter_cents=0, wager_cents=1)
    m = moments((line.probability, line.award) for line in odds.lines)
    wagers = sum(t.wagers for _, t in members)
    cents = sum(t.cents for _, t in members)
    mean = variance = Fraction(0)
    exact = True
    for table, t in members:
        offer = table.offer(wager)
        assert offer is not None  # grouped by it
        if offer.fixed:
            squares = t.wagers * offer.max_cents**2
        else:
            squares = offer.max_cents * t.cents  # sum w^2 <= max x sum w
            exact = exact and t.wagers == 0
        table_mean, table_variance = fixed_mean_variance(m, t.wagers, t.cents, squares)
        mean += table_mean
        variance += table_variance
    hits: dict[str, int] = {}
    for _, t in members:
        for line, count in t.hits.items():
            hits[line] = hits.get(line, 0) + count
    lines = tuple(
        LineComparison(
            line.hand,
            line.award.text,
            line.award.kind is AwardKind.PERCENT_OF_METER,
            line.probability,
            band(
                hits.pop(line.hand, 0),
                wagers * line.probability,
                wagers * line.probability * (1 - line.probability),
                z,
            ),
        )
        for line in odds.lines
    )
    unlisted = sum(hits.values())
    notes = []
    tables = tuple(sorted({table.table_id for table, _ in members}))
    if unlisted:
        notes.append(
            f"{unlisted} award(s) on lines paytable {paytable.name} does not list "
            f"({', '.join(sorted(hits))}): the paytable changed in the window"
        )
    moved = sorted({t for (_, t) in changed} & set(tables))
    if moved:
        notes.append(
            f"table(s) {', '.join(moved)} were registered, changed or retired in the window: "
            "their current paytable is the theory for the whole window"
        )
    return Comparison(
        game=game,
        wager=wager,
        paytable=paytable.name,
        tables=tables,
        wagers=wagers,
        wagered_cents=cents,
        lines=lines,
        fixed_paid=band(sum(t.fixed_paid_cents for _, t in members), mean, variance, z),
        variance_exact=exact,
        meter_paid_cents=sum(t.meter_paid_cents for _, t in members),
        contributed_microcents=sum(t.contributed_microcents for _, t in members),
        envy_paid_cents=sum(t.envy_paid_cents for _, t in members),
        limited_cents=sum(t.limited_cents for _, t in members),
        unlisted_hits=unlisted,
        notes=tuple(notes),
    )
