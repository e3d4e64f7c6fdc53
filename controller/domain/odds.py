"""Exact odds of a paytable: probability of each paying line, hit frequency, return, break-even.

Probabilities are exact fractions from the wager's line counts: how many of all equally likely
deals make each tuple of lines. The counts are static integer tables
(:mod:`controller.domain.line_tables`), generated once by ``scripts/gen_line_counts.py`` from
the exhaustive combinatorics of :mod:`controller.domain.line_counting` (never sampling), which
the tests check against full enumerations; nothing is counted on a request path.

The return is the expected amount paid back per unit wagered, the wager included, at a given
meter: "N for 1" returns N, "N to 1" returns N + 1, "P% of meter" returns P% x meter / wager.
The break-even meter is the smallest meter, in whole cents, at which the return reaches 100%.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from controller.domain.line_tables import LINE_TABLES
from controller.domain.paytables import AwardRule, Paytable
from jackpot.errors import InvalidConfiguration
from jackpot.kinds import AwardKind
from jackpot.money import FULL_PPM

Lines = tuple[str, ...]  # the lines one hand makes, highest first

# The static line tables, one per way of placing hands on lines (wagers may share one).
FIVE_CARD_CATEGORIES = "five_card_categories"  # five cards, by category
FIVE_CARD_PAIR_OF_TENS = "five_card_pair_of_tens"  # ... a pair of 10s or better apart
FIVE_CARD_SUITED = "five_card_suited"  # ... one-suit hands also by suit
TWO_CARD = "two_card"  # the Texas Hold 'Em Bonus Wager's two cards, with the dealer's
THREE_CARD_SUITED = "three_card_suited"  # three cards, one-suit hands also by suit
SIX_CARD_SUITED = "six_card_suited"  # the best five of six from 53 cards, also by suit
SIX_CARD_INSURANCE = "six_card_insurance"  # ... king high or less apart


@dataclass(frozen=True, slots=True)
class LineCounts:
    """How many deals qualify for each tuple of lines, out of ``total`` equally likely."""

    counts: dict[Lines, int]
    total: int


def line_counts(table: str) -> LineCounts:
    """The static line table called ``table`` (one of the names above)."""
    try:
        total, counts = LINE_TABLES[table]
    except KeyError:
        raise InvalidConfiguration(
            f"no line table {table!r}; the tables are {', '.join(sorted(LINE_TABLES))}"
        ) from None
    return LineCounts(dict(counts), total)


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
