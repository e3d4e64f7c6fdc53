"""Paytables as data: which hand pays what, on which wager, as the regulation prints it.

An :class:`AwardRule` is one line's payout; a :class:`Paytable` maps hand categories to
rules. The controller pays only the highest-ranking hand a seat holds (§ 639a.12(d)(2)), which
is what :meth:`Paytable.award_for` gives, since a hand has exactly one category.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.domain.money import FULL_PPM, format_percent
from controller.domain.poker import HandCategory


class AwardKind(StrEnum):
    """How an award is computed (design.md §3)."""

    FOR_ONE = "for_one"  # N x wager, the wager included
    TO_ONE = "to_one"  # N x wager plus the wager back
    PERCENT_OF_METER = "percent_of_meter"  # P% of the meter at the seat's turn, floor to cent


@dataclass(frozen=True, slots=True)
class AwardRule:
    """One paytable line's payout.

    ``multiplier`` is N for ``for_one``/``to_one``; ``meter_ppm`` is P% of the meter in parts
    per million (10% = 100,000; 100% = 1,000,000) for ``percent_of_meter``.
    """

    kind: AwardKind
    multiplier: int = 0
    meter_ppm: int = 0

    @classmethod
    def for_one(cls, multiplier: int) -> AwardRule:
        """ "N for 1": the award is N times the wager, the wager included."""
        return cls(AwardKind.FOR_ONE, multiplier=multiplier)

    @classmethod
    def percent_of_meter(cls, percent: int) -> AwardRule:
        """ "P% of meter", P a whole percent as the regulation prints it."""
        return cls(AwardKind.PERCENT_OF_METER, meter_ppm=percent * FULL_PPM // 100)

    @property
    def text(self) -> str:
        """The line as the regulation prints it: "5,000 for 1", "10% of meter"."""
        if self.kind is AwardKind.PERCENT_OF_METER:
            return f"{format_percent(self.meter_ppm)}% of meter"
        word = "for" if self.kind is AwardKind.FOR_ONE else "to"
        return f"{self.multiplier:,} {word} 1"

    def fixed_award_cents(self, wager_cents: int) -> int:
        """The award in cents for a fixed-odds line; a percentage award depends on the meter."""
        if self.kind is AwardKind.FOR_ONE:
            return self.multiplier * wager_cents
        if self.kind is AwardKind.TO_ONE:
            return (self.multiplier + 1) * wager_cents
        raise ValueError("a percentage-of-meter award is computed from the meter, not the wager")


@dataclass(frozen=True, slots=True)
class Paytable:
    """A regulation paytable: its name ("A"), where it is printed, and its lines."""

    name: str
    citation: str
    lines: tuple[tuple[HandCategory, AwardRule], ...]

    def award_for(self, category: HandCategory) -> AwardRule | None:
        """The award for a hand of ``category``, or ``None`` when the hand does not pay."""
        for line_category, rule in self.lines:
            if line_category is category:
                return rule
        return None


def _caribbean_progressive(
    name: str,
    straight_flush: AwardRule,
    four: int,
    full_house: int,
    flush: int,
    straight: int,
    three: int,
    two_pair: int | None,
) -> Paytable:
    lines = [
        (HandCategory.ROYAL_FLUSH, AwardRule.percent_of_meter(100)),
        (HandCategory.STRAIGHT_FLUSH, straight_flush),
        (HandCategory.FOUR_OF_A_KIND, AwardRule.for_one(four)),
        (HandCategory.FULL_HOUSE, AwardRule.for_one(full_house)),
        (HandCategory.FLUSH, AwardRule.for_one(flush)),
        (HandCategory.STRAIGHT, AwardRule.for_one(straight)),
        (HandCategory.THREE_OF_A_KIND, AwardRule.for_one(three)),
    ]
    if two_pair is not None:
        lines.append((HandCategory.TWO_PAIR, AwardRule.for_one(two_pair)))
    return Paytable(name, "§ 639a.12(d)(1)", tuple(lines))


# Caribbean Stud Poker Progressive Payout Wager, § 639a.12(d)(1), exactly as printed.
# Two pair pays only on paytables A and B ("N/A" on C).
CARIBBEAN_STUD_PROGRESSIVE: dict[str, Paytable] = {
    "A": _caribbean_progressive("A", AwardRule.for_one(5000), 500, 100, 50, 10, 3, 2),
    "B": _caribbean_progressive("B", AwardRule.percent_of_meter(10), 500, 100, 50, 10, 3, 2),
    "C": _caribbean_progressive("C", AwardRule.percent_of_meter(10), 200, 50, 40, 30, 9, None),
}
