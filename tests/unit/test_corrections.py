"""The difference a correction of a settled round computes (controller.domain.corrections)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.domain import corrections
from controller.domain.config import TableConfig
from controller.domain.corrections import plan_correction
from controller.domain.rounds import RoundCards, Wager
from controller.domain.settlement import plan_settlement
from jackpot.errors import InvalidArgument, InvalidCards
from jackpot.kinds import AwardKind
from jackpot.results import AcceptedWager, Contribution, SeatOutcome, SeatResult
from tests.unit.rounds_kit import CARIBBEAN, TABLE, deal, seat

P = "progressive"
RATE_PPM = 150_000  # 15% of each wager, in microcents per cent
RESET = 1_000_000
DEALER = "2C 3D 4S 8C 9D"
NOTHING = "3C 7D 9S JC KD"
PAIR = "2H 2D 9H JH KH"  # keyed: the 2D should have been the 5H
FLUSH = "2H 5H 9H JH KH"
ROYAL = "AS KS QS JS TS"
STRAIGHT = "AS KH QS JS TS"


def accepted(table: TableConfig, wagers: Sequence[Wager]) -> tuple[AcceptedWager, ...]:
    """The wagers as a lockout records them, with contributions at RATE_PPM."""
    out = []
    for wager in wagers:
        offer = table.offer(wager.kind)
        meters = offer.meter_ids if offer else ()
        out.append(
            AcceptedWager(
                wager.seat,
                wager.kind,  # type: ignore[arg-type]
                wager.amount_cents,
                tuple(Contribution(m, wager.amount_cents * RATE_PPM, 0) for m in meters),
                wager.on_dealer_hand,
                wager.envy,
            )
        )
    return tuple(out)


def settled(
    table: TableConfig, wagers: Sequence[Wager], cards: RoundCards, meter_cents: int
) -> tuple[tuple[SeatResult, ...], dict[str, int]]:
    """The results the settle script answers (a percentage award from the meter at its turn,
    100% resetting it), and the meters after."""
    meters = {m: meter_cents for m in table.meter_ids}
    results = []
    for number, p in enumerate(plan_settlement(table, wagers, cards)):
        amount, before, meter_id = p.amount_cents, 0, ""
        if p.outcome is SeatOutcome.PAID and p.award and p.award.kind is AwardKind.PERCENT_OF_METER:
            meter_id = p.meter_id
            before = meters[meter_id]
            amount = before * p.award.meter_ppm // 1_000_000
            meters[meter_id] = RESET if p.award.meter_ppm == 1_000_000 else before - amount
        results.append(
            SeatResult(
                p.seat,
                p.hand,
                p.outcome,
                p.kind or None,  # type: ignore[arg-type]
                p.on_dealer_hand,
                p.envy_for_seat,
                line=p.line,
                award_kind=p.award.kind if p.award and p.outcome is SeatOutcome.PAID else None,
                award_text=p.award.text if p.award else "",
                amount_cents=amount,
                meter_id=meter_id,
                meter_before_cents=before,
                jackpot_id=f"g:{number + 1}" if meter_id else "",
            )
        )
    return tuple(results), meters


def correct(
    table: TableConfig,
    wagers: Sequence[Wager],
    cards: RoundCards,
    new_wagers: Sequence[Wager],
    new_cards: RoundCards,
    meter_cents: int = 2_000_000,
    unpaid: frozenset[str] = frozenset(),
) -> corrections.CorrectionPlan:
    results, after = settled(table, wagers, cards, meter_cents)
    resets = {m: RESET for m in table.meter_ids}
    return plan_correction(
        table,
        accepted(table, wagers),
        results,
        after,
        resets,
        new_wagers,
        new_cards,
        unpaid_jackpots=unpaid,
    )


def rows(plan: corrections.CorrectionPlan) -> list[tuple[int, str, int, int, str]]:
    return [(x.seat, x.line, x.paid_cents, x.due_cents, x.basis) for x in plan.lines]


def test_a_wrong_card_keyed_turns_a_pair_into_a_flush() -> None:
    wagers = [Wager(3, P, 100)]
    plan = correct(
        TABLE,
        wagers,
        deal(seat(3, PAIR), dealer=DEALER),
        wagers,
        deal(seat(3, FLUSH), dealer=DEALER),
    )
    assert rows(plan) == [(3, "flush", 0, 5_000, corrections.FIXED)]  # 50 for 1, exactly
    assert plan.by_seat() == {3: 5_000}
    assert (plan.pay_cents, plan.recover_cents, plan.operator_funded_cents) == (5_000, 0, 0)
    assert plan.wagers == ()


def test_a_hand_credited_to_the_wrong_seat() -> None:
    wagers = [Wager(2, P, 100), Wager(5, P, 100)]
    plan = correct(
        TABLE,
        wagers,
        deal(seat(2, FLUSH), seat(5, NOTHING), dealer=DEALER),
        wagers,
        deal(seat(2, NOTHING), seat(5, FLUSH), dealer=DEALER),
    )
    # settlement order: seat 5 first; the flush moves from seat 2 to seat 5
    assert rows(plan) == [
        (5, "flush", 0, 5_000, corrections.FIXED),
        (2, "flush", 5_000, 0, corrections.FIXED),
    ]
    assert plan.by_seat() == {5: 5_000, 2: -5_000}
    assert (plan.pay_cents, plan.recover_cents) == (5_000, 5_000)


def test_a_missed_wager_is_added_with_its_award_and_contribution() -> None:
    cards = deal(seat(1, NOTHING), seat(4, FLUSH), dealer=DEALER)
    plan = correct(TABLE, [Wager(1, P, 100)], cards, [Wager(1, P, 100), Wager(4, P, 100)], cards)
    assert rows(plan) == [(4, "flush", 0, 5_000, corrections.FIXED)]
    (change,) = plan.wagers
    assert (change.seat, change.kind, change.amount_cents, change.removed) == (4, P, 100, False)
    assert change.meter_ids == ("m",)


def test_a_removed_wager_takes_back_its_recorded_contribution() -> None:
    cards = deal(seat(1, NOTHING), seat(4, "3H 7S 9C JD KS"), dealer=DEALER)
    plan = correct(TABLE, [Wager(1, P, 100), Wager(4, P, 100)], cards, [Wager(1, P, 100)], cards)
    assert plan.lines == ()
    (change,) = plan.wagers
    assert change.removed and change.to_meter_microcents == (100 * RATE_PPM,)


def test_a_royal_that_was_not_is_recovered_from_the_seat_never_from_the_meter() -> None:
    wagers = [Wager(1, P, 100)]
    plan = correct(
        TABLE,
        wagers,
        deal(seat(1, ROYAL), dealer=DEALER),
        wagers,
        deal(seat(1, STRAIGHT), dealer=DEALER),
        meter_cents=2_000_000,
    )
    # the 100% award of $20,000 is recovered; the straight's 10 for 1 is due
    assert sorted(rows(plan)) == [
        (1, "royal_flush", 2_000_000, 0, corrections.RECOVERED),
        (1, "straight", 0, 1_000, corrections.FIXED),
    ]
    assert plan.by_seat() == {1: -1_999_000}
    assert plan.operator_funded_cents == 0


def test_a_missed_royal_is_paid_at_the_meter_the_settlement_recorded() -> None:
    wagers = [Wager(1, P, 100), Wager(2, P, 100)]
    # the original round paid seat 2 a straight flush (10% of $20,000 = $2,000): the meter
    # was left at $18,000; seat 1's royal was keyed as a straight
    plan = correct(
        TABLE,
        wagers,
        deal(seat(1, STRAIGHT), seat(2, "9H 8H 7H 6H 5H"), dealer=DEALER),
        wagers,
        deal(seat(1, ROYAL), seat(2, "9H 8H 7H 6H 5H"), dealer=DEALER),
        meter_cents=2_000_000,
    )
    assert sorted(rows(plan)) == [
        (1, "royal_flush", 0, 1_800_000, corrections.AT_RECORDED_METER),
        (1, "straight", 1_000, 0, corrections.FIXED),
    ]
    line = next(x for x in plan.lines if x.line == "royal_flush")
    assert line.needs_validation and line.operator_funded and line.meter_basis_cents == 1_800_000
    assert plan.operator_funded_cents == 1_800_000
    # The slip settles only the straight's $10 back; the royal is a pending jackpot, paid once
    # through validation and the cage, never from the slip as well.
    assert plan.by_seat() == {1: -1_000}


def test_two_missed_percentage_awards_share_the_recorded_meter_in_order() -> None:
    wagers = [Wager(1, P, 100), Wager(2, P, 100)]
    plan = correct(
        TABLE,
        wagers,
        deal(seat(1, NOTHING), seat(2, STRAIGHT), dealer=DEALER),
        wagers,
        deal(seat(1, "9H 8H 7H 6H 5H"), seat(2, ROYAL), dealer=DEALER),
        meter_cents=2_000_000,
    )
    # seat 2 first: 100% of the recorded $20,000; then seat 1: 10% of the reset
    assert [(x.seat, x.due_cents) for x in plan.lines if x.due_cents] == [
        (2, 2_000_000),
        (1, 100_000),
    ]


def test_a_paid_percentage_award_still_due_keeps_its_amount() -> None:
    wagers = [Wager(1, P, 100), Wager(3, P, 100)]
    plan = correct(
        TABLE,
        wagers,
        deal(seat(1, ROYAL), seat(3, PAIR), dealer=DEALER),
        wagers,
        deal(seat(1, ROYAL), seat(3, FLUSH), dealer=DEALER),
    )
    assert rows(plan) == [(3, "flush", 0, 5_000, corrections.FIXED)]


def test_a_rejected_jackpot_counts_as_not_paid() -> None:
    wagers = [Wager(1, P, 100)]
    cards = deal(seat(1, ROYAL), dealer=DEALER)
    plan = correct(
        TABLE,
        wagers,
        cards,
        wagers,
        deal(seat(1, STRAIGHT), dealer=DEALER),
        unpaid=frozenset({"g:1"}),
    )
    assert rows(plan) == [(1, "straight", 0, 1_000, corrections.FIXED)]


def test_a_bonus_wager_amount_corrected_pays_the_difference() -> None:
    cards = deal(seat(2, FLUSH), dealer=DEALER)
    plan = correct(
        CARIBBEAN,
        [Wager(2, "bonus", 500)],
        cards,
        [Wager(2, "bonus", 2_500)],
        cards,
    )
    # 40 to 1: $205 paid on $5, $1,025 due on $25
    assert rows(plan) == [(2, "flush", 20_500, 102_500, corrections.FIXED)]
    assert [(c.amount_cents, c.removed) for c in plan.wagers] == [(500, True), (2_500, False)]


@pytest.mark.parametrize(
    ("new_cards", "error", "text"),
    [
        (deal(seat(3, "2H 2H 9H JH KH"), dealer=DEALER), InvalidCards, "2H"),
        (deal(seat(3, "2H 5H 9H JH"), dealer=DEALER), InvalidCards, "seat 3"),
        (deal(seat(3, "2H 5H 9H JH 2C"), dealer=DEALER), InvalidCards, "2C"),
    ],
)
def test_impossible_cards_are_refused(new_cards: RoundCards, error: type, text: str) -> None:
    wagers = [Wager(3, P, 100)]
    with pytest.raises(error, match=text):
        correct(TABLE, wagers, deal(seat(3, PAIR), dealer=DEALER), wagers, new_cards)


def test_a_correction_that_changes_nothing_is_refused() -> None:
    wagers = [Wager(3, P, 100)]
    cards = deal(seat(3, FLUSH), dealer=DEALER)
    with pytest.raises(InvalidArgument, match="changes nothing"):
        correct(TABLE, wagers, cards, wagers, cards)
    # a different keying of the same hand value changes nothing either
    with pytest.raises(InvalidArgument, match="changes nothing"):
        correct(TABLE, wagers, cards, wagers, deal(seat(3, "2H 5H 9H JH AH"), dealer=DEALER))


def test_a_corrected_wager_the_table_does_not_take_is_refused() -> None:
    cards = deal(seat(3, FLUSH), dealer=DEALER)
    with pytest.raises(InvalidArgument):
        correct(TABLE, [Wager(3, P, 100)], cards, [Wager(3, P, 500)], cards)
