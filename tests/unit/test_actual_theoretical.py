"""Actual against theoretical: a seeded, bounded simulation of fair play stays inside the bands;
a rigged paytable (a line paid twice as often) is flagged; the band and variance are exact."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from fractions import Fraction

import pytest

from controller.domain.actual_theoretical import (
    CONFIDENCE_Z,
    Comparison,
    band,
    compare,
    fixed_mean_variance,
    moments,
)
from controller.domain.config import TableConfig, WagerOffer
from controller.domain.games import get_game
from controller.domain.odds import paytable_odds
from controller.domain.paytables import AwardRule
from controller.domain.records import JournalEntry
from jackpot.errors import InvalidArgument
from jackpot.kinds import AwardKind

SEATS = 7
NO_LINE = ""


def bonus_table(table_id: str = "cs-1", min_cents: int = 500, max_cents: int = 500) -> TableConfig:
    """A Caribbean Stud table offering the progressive wager ($1, meter m1) and the bonus
    wager (paytable A, feeding no meter)."""
    game = get_game("caribbean-stud")
    progressive = TableConfig.progressive(table_id, "caribbean-stud", "A", SEATS, "floor", "m1")
    bonus = WagerOffer("bonus", game.wager("bonus").paytable("A"), min_cents, max_cents)
    return TableConfig(table_id, "caribbean-stud", SEATS, "floor", (*progressive.wagers, bonus))


class Journal:
    """Journal entries as the lockout and settle scripts write them."""

    def __init__(self) -> None:
        self.entries: list[JournalEntry] = []

    def add(self, type_: str, meter: str = "", d_meter: str = "0", **fields: str) -> JournalEntry:
        seq = len(self.entries) + 1
        entry = JournalEntry(f"{1_000 + seq}-0", seq, type_, meter, int(d_meter), 0, dict(fields))
        self.entries.append(entry)
        return entry

    def round(
        self, table: TableConfig, round_id: int, wagers: dict[str, list[int]], lines: list[str]
    ) -> None:
        """One round: ``wagers`` by kind (cents per seat), ``lines`` the line each wager's
        hand made in that order ("" none); the awards are the table's paytable's."""
        fields = {"table": table.table_id, "round": str(round_id)}
        for kind, amounts in wagers.items():
            fields[f"count:{kind}"] = str(len(amounts))
            fields[f"cents:{kind}"] = str(sum(amounts))
        self.add("wagers_accepted", **fields)
        made = iter(lines)
        for kind, amounts in wagers.items():
            offer = table.offer(kind)
            assert offer is not None
            for seat, cents in enumerate(amounts, 1):
                line = next(made)
                rule = offer.paytable.award_for(line) if line else None
                if rule is None:
                    continue
                common = {"table": table.table_id, "round": str(round_id), "seat": str(seat)}
                if rule.kind is AwardKind.PERCENT_OF_METER:
                    self.add(
                        "award", "m1", str(-MICRO_METER), amount_cents="1000000",
                        wager=kind, line=line, hand=line, **common,
                    )  # fmt: skip
                else:
                    self.add(
                        "fixed_award", amount_cents=str(rule.fixed_award_cents(cents)),
                        wager=kind, line=line, hand=line, **common,
                    )  # fmt: skip


MICRO_METER = 1_000_000 * 1_000_000


def draw(
    table: TableConfig, wager: str, n: int, rng: random.Random, rig: dict[str, int] | None = None
) -> list[str]:
    """``n`` hands' paying lines drawn from the wager's exact line distribution; ``rig``
    multiplies a line's weight (a line paid twice as often: 2)."""
    offer = table.offer(wager)
    assert offer is not None
    odds = paytable_odds(
        offer.paytable, table.game_rules.wager(wager).line_counts(), meter_cents=0, wager_cents=1
    )
    names = [line.hand for line in odds.lines] + [NO_LINE]
    weights = [line.combinations * (rig or {}).get(line.hand, 1) for line in odds.lines]
    weights.append(odds.total_combinations - sum(line.combinations for line in odds.lines))
    return rng.choices(names, weights, k=n)


def play(
    rounds: int, seed: int, rig: dict[str, int] | None = None, bonus_cents: int = 500
) -> tuple[Journal, TableConfig]:
    """``rounds`` rounds at a seven-seat table, every seat on both wagers."""
    table = bonus_table()
    rng = random.Random(seed)
    progressive = draw(table, "progressive", rounds * SEATS, rng)
    bonus = draw(table, "bonus", rounds * SEATS, rng, rig)
    journal = Journal()
    for r in range(rounds):
        seats = slice(r * SEATS, (r + 1) * SEATS)
        journal.round(
            table,
            r + 1,
            {"progressive": [100] * SEATS, "bonus": [bonus_cents] * SEATS},
            progressive[seats] + bonus[seats],
        )
    return journal, table


def by_wager(comparisons: list[Comparison]) -> dict[str, Comparison]:
    return {c.wager: c for c in comparisons}


ROUNDS = 6_000  # 42,000 wagers of each kind: bounded (well under a second to draw)


def test_a_fair_stream_stays_inside_every_band() -> None:
    journal, table = play(ROUNDS, seed=23)
    result = by_wager(compare([(journal.entries, [table])], "99.9"))
    for comparison in result.values():
        assert comparison.wagers == ROUNDS * SEATS
        assert not comparison.flagged, [
            (line.line, line.hits) for line in comparison.lines if not line.hits.inside
        ]
    bonus = result["bonus"]
    assert bonus.wagered_cents == ROUNDS * SEATS * 500
    assert bonus.variance_exact
    # The bonus wager's most frequent line is tested on thousands of hits: well inside.
    pair = {line.line: line for line in bonus.lines}["pair_of_tens_or_better"]
    assert pair.hits.observed > 5_000 and not pair.few_expected
    # the theory is the odds calculator's, exactly
    assert pair.probability == Fraction(1_098_240 * 5 // 13, 2_598_960)
    assert bonus.fixed_paid.expected == ROUNDS * SEATS * 500 * sum(
        (line.probability * (int(line.award.split()[0].replace(",", "")) + 1))
        for line in bonus.lines
    )


def test_a_line_paid_twice_as_often_is_flagged() -> None:
    journal, table = play(ROUNDS, seed=23, rig={"three_of_a_kind": 2})
    bonus = by_wager(compare([(journal.entries, [table])], "99.9"))["bonus"]
    lines = {line.line: line for line in bonus.lines}
    rigged = lines["three_of_a_kind"]
    assert not rigged.hits.inside
    assert rigged.hits.observed > rigged.hits.high
    assert rigged.hits.beyond_tolerance
    assert bonus.flagged
    # the extra three-of-a-kinds pay 8 for 1 each: the return leaves its band as well
    assert not bonus.fixed_paid.inside and bonus.fixed_paid.observed > bonus.fixed_paid.high


def test_the_band_edges_are_the_integers_inside_it() -> None:
    z = CONFIDENCE_Z["99"]
    for expected, variance in [
        (Fraction(100), Fraction(99)),
        (Fraction(7, 3), Fraction(2)),
        (Fraction(1, 2), Fraction(1, 100)),
        (Fraction(0), Fraction(0)),
    ]:
        b = band(0, expected, variance, z)
        assert b.low >= 0
        for k in range(200):
            inside = (k - expected) ** 2 <= z**2 * variance
            assert inside == (b.low <= k <= b.high), (expected, variance, k)
    # an expected count of 100 with sd ~9.95 at 99%: 75 to 125
    edges = band(0, Fraction(100), Fraction(99), z)
    assert (edges.low, edges.high) == (75, 125)
    assert band(126, Fraction(100), Fraction(99), z).inside is False
    assert band(125, Fraction(100), Fraction(99), z).inside is True
    # a count cannot be negative: the band of 3.36 expected hits starts at 0, not -1
    assert band(0, Fraction(336, 100), Fraction(335, 100), z).low == 0


def test_the_variance_equals_an_exhaustive_enumeration() -> None:
    """Two wagers of 300 and 700 cents on a three-line table: 4 for 1, $25, nothing."""
    outcomes = [
        (Fraction(1, 5), AwardRule.for_one(4)),
        (Fraction(1, 10), AwardRule.parse("$25")),
    ]
    m = moments(outcomes)
    mean, variance = fixed_mean_variance(m, 2, 1_000, 300**2 + 700**2)
    paid: dict[str, Callable[[int], int]] = {
        "four": lambda w: 4 * w,
        "fixed": lambda w: 2_500,
        "none": lambda w: 0,
    }
    chance = {"four": Fraction(1, 5), "fixed": Fraction(1, 10), "none": Fraction(7, 10)}
    first = second = Fraction(0)
    for a, b in itertools.product(paid, repeat=2):
        p = chance[a] * chance[b]
        total = paid[a](300) + paid[b](700)
        first += p * total
        second += p * total**2
    assert mean == first
    assert variance == second - first**2


def test_voids_and_rejections_are_taken_out_and_envy_kept_apart() -> None:
    table = bonus_table()
    journal = Journal()
    journal.round(table, 1, {"bonus": [500, 500]}, ["flush", ""])
    journal.round(table, 2, {"bonus": [500]}, ["straight"])
    journal.add("round_voided", table="cs-1", round="2")
    journal.round(table, 3, {"bonus": [500]}, ["two_pair"])
    award = journal.entries[-1]
    journal.add("jackpot_rejected", jackpot=f"floor:{award.seq}", amount_cents="2000")
    journal.add(
        "fixed_award", amount_cents="5000", table="cs-1", round="3", seat="2", wager="bonus",
        line="flush", hand="flush", envy_for_seat="1",
    )  # fmt: skip
    [bonus] = compare([(journal.entries, [table])])
    assert (bonus.wagers, bonus.wagered_cents) == (3, 1_500)
    hits = {line.line: line.hits.observed for line in bonus.lines}
    assert hits["flush"] == 1 and hits["straight"] == 0 and hits["two_pair"] == 0
    assert bonus.fixed_paid.observed == 41 * 500  # the flush: 40 to 1 and the wager back
    assert bonus.envy_paid_cents == 5_000
    assert all(line.few_expected for line in bonus.lines)


def test_a_wager_whose_amount_varies_gets_a_bounded_variance() -> None:
    table = bonus_table(min_cents=500, max_cents=10_000)
    journal = Journal()
    journal.round(table, 1, {"bonus": [500, 10_000, 2_500]}, ["", "", "pair_of_tens_or_better"])
    [bonus] = compare([(journal.entries, [table])])
    assert not bonus.variance_exact
    m = moments((line.probability, _rule(table, line.line)) for line in bonus.lines)
    exact = fixed_mean_variance(m, 3, 13_000, 500**2 + 10_000**2 + 2_500**2)[1]
    assert bonus.fixed_paid.variance >= exact
    assert bonus.fixed_paid.variance == fixed_mean_variance(m, 3, 13_000, 10_000 * 13_000)[1]


def _rule(table: TableConfig, line: str) -> AwardRule:
    offer = table.offer("bonus")
    assert offer is not None
    rule = offer.paytable.award_for(line)
    assert rule is not None
    return rule


def test_the_four_percent_beside_the_band_for_a_small_sample() -> None:
    """Ten hits where 9.5 were expected: 5% off, beyond the 4%, yet well inside the band."""
    b = band(10, Fraction(19, 2), Fraction(9), CONFIDENCE_Z["99"])
    assert b.beyond_tolerance and b.inside
    assert b.deviation == Fraction(1, 19)


def test_an_unknown_confidence_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="confidence '98'"):
        compare([], "98")


def test_awards_on_lines_the_paytable_does_not_list_are_noted() -> None:
    table = bonus_table()
    journal = Journal()
    journal.round(table, 1, {"bonus": [500]}, [""])
    journal.add(
        "fixed_award", amount_cents="500", table="cs-1", round="1", seat="1", wager="bonus",
        line="pair", hand="pair",
    )  # fmt: skip
    [bonus] = compare([(journal.entries, [table])])
    assert bonus.unlisted_hits == 1
    assert "does not list (pair)" in bonus.notes[0]
