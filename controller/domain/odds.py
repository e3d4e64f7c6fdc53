"""Exact odds of a paytable: probability of each paying line, hit frequency, return, break-even.

Probabilities are exact fractions from the wager's combinatorial line counts (never
sampling; see ``wagers.py``), which the tests check against full enumerations.

The return is the expected amount paid back per unit wagered, the wager included, at a given
meter: "N for 1" returns N, "N to 1" returns N + 1, "P% of meter" returns P% x meter / wager.
The break-even meter is the smallest meter, in whole cents, at which the return reaches 100%.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from controller.domain.paytables import AwardRule, Paytable
from controller.domain.wagers import LineCounts
from jackpot.kinds import AwardKind
from jackpot.money import FULL_PPM


@dataclass(frozen=True, slots=True)
class LineOdds:
    """One paying line: how many hands make it, their probability and what it returns."""

    hand: str
    combinations: int
    probability: Fraction
    award: AwardRule
    returns: Fraction  # per unit wagered, the wager included


@dataclass(frozen=True, slots=True)
class PaytableOdds:
    """A paytable's exact odds at one meter value (cents) for one wager amount (cents)."""

    paytable: str
    meter_cents: int
    wager_cents: int
    total_combinations: int
    lines: tuple[LineOdds, ...]

    @property
    def hit_frequency(self) -> Fraction:
        """Probability that the wager wins anything."""
        return sum((line.probability for line in self.lines), Fraction(0))

    @property
    def expected_return(self) -> Fraction:
        """Expected amount paid back per unit wagered (1 = 100%)."""
        return sum((line.probability * line.returns for line in self.lines), Fraction(0))

    @property
    def breakeven_meter_cents(self) -> int | None:
        """The smallest meter (cents) at which the return reaches 100%; None if no meter line
        pays, or 0 if the fixed lines alone return 100% or more."""
        fixed = sum(
            (
                line.probability * line.returns
                for line in self.lines
                if line.award.kind is not AwardKind.PERCENT_OF_METER
            ),
            Fraction(0),
        )
        per_meter_cent = sum(
            (
                line.probability * Fraction(line.award.meter_ppm, FULL_PPM * self.wager_cents)
                for line in self.lines
                if line.award.kind is AwardKind.PERCENT_OF_METER
            ),
            Fraction(0),
        )
        if fixed >= 1:
            return 0
        if per_meter_cent == 0:
            return None
        needed = (1 - fixed) / per_meter_cent
        return -(-needed.numerator // needed.denominator)  # ceiling


def paytable_odds(
    paytable: Paytable, line_counts: LineCounts, *, meter_cents: int, wager_cents: int
) -> PaytableOdds:
    """The exact odds of ``paytable`` given how many deals qualify for which lines; each
    deal is counted on the highest line the paytable lists."""
    paid: Counter[str] = Counter()
    for qualifying, count in line_counts.counts.items():
        highest = paytable.highest_award(qualifying)
        if highest is not None:
            paid[highest[0]] += count
    total_combinations = line_counts.total
    lines = []
    for hand, award in paytable.lines:
        combinations = paid[hand]
        if award.kind is AwardKind.PERCENT_OF_METER:
            returns = Fraction(meter_cents * award.meter_ppm, FULL_PPM * wager_cents)
        else:
            returns = Fraction(award.fixed_award_cents(wager_cents), wager_cents)
        lines.append(
            LineOdds(hand, combinations, Fraction(combinations, total_combinations), award, returns)
        )
    return PaytableOdds(paytable.name, meter_cents, wager_cents, total_combinations, tuple(lines))
