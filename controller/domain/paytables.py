"""Paytables as data: which hand pays what, as the regulation prints it.

An :class:`AwardRule` is one line's payout; a :class:`Paytable` maps paytable lines (hand
names such as ``royal_flush``, ``pair_of_tens_or_better`` or ``ace_king_suited``) to rules,
highest first. Which lines a hand qualifies for is the wager's business (``wagers.py``); a
paytable pays the highest of them that it lists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.domain.bounds import AWARD_TEXT_MAX_CHARS, excerpt
from jackpot.errors import InvalidConfiguration
from jackpot.kinds import AwardKind
from jackpot.money import (
    FULL_PPM,
    format_cents,
    format_percent,
    parse_dollars_cents,
    parse_percent_ppm,
)

_AWARD = re.compile(
    r"^(?:(?P<odds>\d[\d,]*) (?P<word>for|to) 1"
    r"|(?P<percent>\d{1,3}(?:\.\d{1,4})?)% of (?:the )?meter(?: (?P<meter>[A-Za-z0-9._-]{1,64}))?"
    r"|(?P<dollars>\$[\d,]+(?:\.\d{1,2})?))$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class AwardRule:
    """One paytable line's payout.

    ``multiplier`` is N for ``for_one``/``to_one``; ``meter_ppm`` is P% of the meter in parts
    per million (10% = 100,000; 100% = 1,000,000) for ``percent_of_meter``, and ``meter`` the
    meter it names ("10% of meter tcp-grand"), empty for the first meter the wager feeds.
    """

    kind: AwardKind
    multiplier: int = 0
    meter_ppm: int = 0
    amount_cents: int = 0
    meter: str = ""

    @classmethod
    def for_one(cls, multiplier: int) -> AwardRule:
        """ "N for 1": the award is N times the wager, the wager included."""
        return cls(AwardKind.FOR_ONE, multiplier=multiplier)

    @classmethod
    def to_one(cls, multiplier: int) -> AwardRule:
        """ "N to 1": the award is N times the wager plus the wager back."""
        return cls(AwardKind.TO_ONE, multiplier=multiplier)

    @classmethod
    def percent_of_meter(cls, percent: int) -> AwardRule:
        """ "P% of meter", P a whole percent as the regulation prints it."""
        return cls(AwardKind.PERCENT_OF_METER, meter_ppm=percent * FULL_PPM // 100)

    @classmethod
    def parse(cls, text: str) -> AwardRule:
        """Read an award as a paytable prints it: "500 for 1", "25 to 1", "10% of meter",
        "$500"; raise :class:`InvalidConfiguration` otherwise. The text is bounded before any
        number in it is converted (:data:`~controller.domain.bounds.AWARD_TEXT_MAX_CHARS`)."""
        if len(text) > AWARD_TEXT_MAX_CHARS:
            raise InvalidConfiguration(
                f"award {excerpt(text)} is longer than {AWARD_TEXT_MAX_CHARS} characters"
            )
        cleaned = " ".join(text.split())
        match = _AWARD.match(cleaned)
        if match is None:
            raise InvalidConfiguration(
                f"award {excerpt(text)} is not one of 'N for 1', 'N to 1', 'P% of meter', '$A'"
            )
        if match["odds"]:
            multiplier = int(match["odds"].replace(",", ""))
            kind = AwardKind.FOR_ONE if match["word"].lower() == "for" else AwardKind.TO_ONE
            if multiplier <= 0:
                raise InvalidConfiguration(f"award {text!r} must pay more than nothing")
            return cls(kind, multiplier=multiplier)
        if match["percent"]:
            ppm = parse_percent_ppm(match["percent"], "percentage of the meter")
            if ppm == 0:
                raise InvalidConfiguration(f"award {text!r} must pay more than 0% of the meter")
            return cls(AwardKind.PERCENT_OF_METER, meter_ppm=ppm, meter=match["meter"] or "")
        amount = parse_dollars_cents(match["dollars"])
        if amount <= 0:
            raise InvalidConfiguration(f"award {text!r} must pay more than $0")
        return cls(AwardKind.FIXED_AMOUNT, amount_cents=amount)

    @property
    def text(self) -> str:
        """The line as the regulation prints it: "5,000 for 1", "10% of meter", "$500.00"."""
        if self.kind is AwardKind.PERCENT_OF_METER:
            named = f" {self.meter}" if self.meter else ""
            return f"{format_percent(self.meter_ppm)}% of meter{named}"
        if self.kind is AwardKind.FIXED_AMOUNT:
            return format_cents(self.amount_cents)
        word = "for" if self.kind is AwardKind.FOR_ONE else "to"
        return f"{self.multiplier:,} {word} 1"

    def fixed_award_cents(self, wager_cents: int) -> int:
        """The award in cents for a fixed-odds line; a percentage award depends on the meter."""
        if self.kind is AwardKind.FOR_ONE:
            return self.multiplier * wager_cents
        if self.kind is AwardKind.TO_ONE:
            return (self.multiplier + 1) * wager_cents
        if self.kind is AwardKind.FIXED_AMOUNT:
            return self.amount_cents
        raise ValueError("a percentage-of-meter award is computed from the meter, not the wager")

    def returned_stake_cents(self, wager_cents: int) -> int:
        """The part of a fixed-odds award that is the wager returned: "N to 1" pays N wagers
        and the wager back, "N for 1" N wagers of which one is the wager back; "$A" none."""
        if self.kind in (AwardKind.TO_ONE, AwardKind.FOR_ONE):
            return wager_cents
        if self.kind is AwardKind.FIXED_AMOUNT:
            return 0
        raise ValueError("a percentage-of-meter award is computed from the meter, not the wager")

    def winnings_cents(self, wager_cents: int) -> int:
        """What a fixed-odds line wins on ``wager_cents``, the returned wager excluded: "N to 1"
        N x wager, "N for 1" (N - 1) x wager, "$A" A (§ 647a.12(c) counts winnings)."""
        return self.fixed_award_cents(wager_cents) - self.returned_stake_cents(wager_cents)


Lines = tuple[tuple[str, AwardRule], ...]


def _highest(lines: Lines, qualified: Sequence[str]) -> tuple[str, AwardRule] | None:
    for line in qualified:
        for name, rule in lines:
            if name == line:
                return line, rule
    return None


@dataclass(frozen=True, slots=True)
class Paytable:
    """A paytable: its name ("A"), where it is printed, and its lines, highest first.

    ``envy_lines`` (fixed amounts) are the Envy Bonus: what every other entitled seat is paid
    for one qualifying hand at the table (§ 670a.11(h)(1)(ii), (3)(ii)).
    """

    name: str
    citation: str
    lines: Lines
    envy_lines: Lines = ()

    def award_for(self, line: str) -> AwardRule | None:
        """The award for a hand on ``line`` (e.g. ``royal_flush``), or ``None``: no payout."""
        paid = _highest(self.lines, (line,))
        return paid[1] if paid else None

    def highest_award(self, lines: Sequence[str]) -> tuple[str, AwardRule] | None:
        """Of the ``lines`` a hand qualifies for (highest first), the first this paytable
        lists, with its award: a wager is paid only its highest line (§ 639a.12(d)(2))."""
        return _highest(self.lines, lines)

    def envy_award(self, lines: Sequence[str]) -> tuple[str, AwardRule] | None:
        """The envy bonus a hand on ``lines`` qualifies, or ``None`` (not a qualifying hand)."""
        return _highest(self.envy_lines, lines)

    def largest_winnings_cents(self, wager_cents: int) -> int:
        """The most one wager of ``wager_cents`` wins on this paytable: the winnings (the
        returned wager excluded) of its highest-paying fixed line; percentage lines and envy
        bonuses are not counted, 0 when it has no fixed line."""
        return max(
            (
                rule.winnings_cents(wager_cents)
                for _, rule in self.lines
                if rule.kind is not AwardKind.PERCENT_OF_METER
            ),
            default=0,
        )

    def meters_named(self) -> set[str]:
        """The meters its percentage lines name ("" for the wager's first meter)."""
        return {rule.meter for _, rule in self.lines if rule.kind is AwardKind.PERCENT_OF_METER}

    def to_data(self) -> dict[str, object]:
        """The paytable as plain data (each award as it prints): what a registration stores."""
        return {
            "name": self.name,
            "citation": self.citation,
            "lines": [[line, rule.text] for line, rule in self.lines],
            "envy_lines": [[line, rule.text] for line, rule in self.envy_lines],
        }

    @classmethod
    def from_data(cls, data: Mapping[str, object]) -> Paytable:
        """Read :meth:`to_data`'s output back."""

        def lines(key: str) -> Lines:
            raw = data.get(key, [])
            if not isinstance(raw, list):
                raise InvalidConfiguration(f"stored paytable: {key} must be a list, got {raw!r}")
            return tuple((str(line), AwardRule.parse(str(text))) for line, text in raw)

        return cls(str(data["name"]), str(data["citation"]), lines("lines"), lines("envy_lines"))


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
        ("royal_flush", AwardRule.percent_of_meter(100)),
        ("straight_flush", straight_flush),
        ("four_of_a_kind", AwardRule.for_one(four)),
        ("full_house", AwardRule.for_one(full_house)),
        ("flush", AwardRule.for_one(flush)),
        ("straight", AwardRule.for_one(straight)),
        ("three_of_a_kind", AwardRule.for_one(three)),
    ]
    if two_pair is not None:
        lines.append(("two_pair", AwardRule.for_one(two_pair)))
    return Paytable(name, "§ 639a.12(d)(1)", tuple(lines))


# Caribbean Stud Poker Progressive Payout Wager, § 639a.12(d)(1), exactly as printed.
# Two pair pays only on paytables A and B ("N/A" on C).
CARIBBEAN_STUD_PROGRESSIVE: dict[str, Paytable] = {
    "A": _caribbean_progressive("A", AwardRule.for_one(5000), 500, 100, 50, 10, 3, 2),
    "B": _caribbean_progressive("B", AwardRule.percent_of_meter(10), 500, 100, 50, 10, 3, 2),
    "C": _caribbean_progressive("C", AwardRule.percent_of_meter(10), 200, 50, 40, 30, 9, None),
}


def _caribbean_bonus(name: str, straight: int, three: int) -> Paytable:
    to_one = AwardRule.to_one
    return Paytable(
        name,
        "§ 639a.12(c)",
        (
            ("royal_flush", to_one(1000)),
            ("straight_flush", to_one(200)),
            ("four_of_a_kind", to_one(100)),
            ("full_house", to_one(50)),
            ("flush", to_one(40)),
            ("straight", to_one(straight)),
            ("three_of_a_kind", to_one(three)),
            ("two_pair", to_one(3)),
            ("pair_of_tens_or_better", to_one(1)),
        ),
    )


# Caribbean Stud Bonus Wager, § 639a.12(c), exactly as printed: "to 1", a pair of 10s or better.
CARIBBEAN_STUD_BONUS: dict[str, Paytable] = {
    "A": _caribbean_bonus("A", 25, 7),
    "B": _caribbean_bonus("B", 25, 6),
    "C": _caribbean_bonus("C", 20, 6),
}


def _texas_holdem_bonus(name: str, dealer_and_player: bool) -> Paytable:
    to_one = AwardRule.to_one
    lines = [("ace_ace_dealer_and_player", to_one(1000))] if dealer_and_player else []
    lines += [
        ("ace_ace", to_one(30)),
        ("ace_king_suited", to_one(25)),
        ("ace_queen_or_ace_jack_suited", to_one(20)),
        ("ace_king_offsuit", to_one(15)),
        ("king_king_queen_queen_or_jack_jack", to_one(10)),
        ("ace_queen_or_ace_jack_offsuit", to_one(5)),
        ("pair_2_through_10", to_one(3)),
    ]
    return Paytable(name, "§ 647a.12(b)", tuple(lines))


# Texas Hold 'Em Bonus Wager, § 647a.12(b), as printed; "ace-ace (dealer and player)" is N/A
# on paytable B, where such a hand pays as ace-ace.
TEXAS_HOLDEM_BONUS: dict[str, Paytable] = {
    "A": _texas_holdem_bonus("A", dealer_and_player=True),
    "B": _texas_holdem_bonus("B", dealer_and_player=False),
}
