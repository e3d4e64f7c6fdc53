"""Exact odds of a paytable: probability of each paying line, hit frequency, return, break-even.

Probabilities are exact fractions from combinatorics (never sampling): five-card hands are
counted over every multiset of ranks, each weighted by the number of suit assignments that
make it (a hand of five different ranks has 4 suited and 1,020 unsuited assignments; a hand
with a repeated rank is never suited). The counts equal a full enumeration of all 2,598,960
hands, which the tests check.

The return is the expected amount paid back per unit wagered, the wager included, at a given
meter: "N for 1" returns N, "N to 1" returns N + 1, "P% of meter" returns P% x meter / wager.
The break-even meter is the smallest meter, in whole cents, at which the return reaches 100%.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import combinations_with_replacement
from math import comb

from controller.domain.cards import RANKS
from controller.domain.money import FULL_PPM
from controller.domain.paytables import AwardKind, AwardRule, Paytable
from controller.domain.poker import HandValue, five_rank_value

FIVE_CARD_HANDS = comb(52, 5)


@cache
def _five_card_classes() -> tuple[tuple[HandValue, int], ...]:
    """Every distinct five-card hand value with its number of hands (sums to 2,598,960)."""
    classes: list[tuple[HandValue, int]] = []
    for ranks in combinations_with_replacement(sorted(RANKS, reverse=True), 5):
        counts = Counter(ranks)
        if max(counts.values()) > 4:
            continue
        if len(counts) == 5:
            classes.append((five_rank_value(ranks, flush=True), 4))
            classes.append((five_rank_value(ranks, flush=False), 4**5 - 4))
        else:
            ways = 1
            for count in counts.values():
                ways *= comb(4, count)
            classes.append((five_rank_value(ranks, flush=False), ways))
    return tuple(classes)


def five_card_line_counts(line_of: Callable[[HandValue], str]) -> dict[str, int]:
    """How many of the 2,598,960 five-card hands fall on each line named by ``line_of``."""
    counts: Counter[str] = Counter()
    for value, ways in _five_card_classes():
        counts[line_of(value)] += ways
    return dict(counts)


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
                line.probability * _fixed_return(line.award)
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


def _fixed_return(award: AwardRule) -> Fraction:
    if award.kind is AwardKind.FOR_ONE:
        return Fraction(award.multiplier)
    if award.kind is AwardKind.TO_ONE:
        return Fraction(award.multiplier + 1)
    raise ValueError(f"{award.kind} is not a fixed award")


def paytable_odds(
    paytable: Paytable,
    line_counts: dict[str, int],
    total_combinations: int,
    *,
    meter_cents: int,
    wager_cents: int,
) -> PaytableOdds:
    """The exact odds of ``paytable`` given how many hands fall on each line."""
    lines = []
    for hand, award in paytable.lines:
        combinations = line_counts.get(hand, 0)
        if award.kind is AwardKind.PERCENT_OF_METER:
            returns = Fraction(meter_cents * award.meter_ppm, FULL_PPM * wager_cents)
        else:
            returns = _fixed_return(award)
        lines.append(
            LineOdds(hand, combinations, Fraction(combinations, total_combinations), award, returns)
        )
    return PaytableOdds(paytable.name, meter_cents, wager_cents, total_combinations, tuple(lines))
