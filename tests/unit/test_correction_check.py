"""The audit's replay of corrections (controller.domain.correction_check): each sum that does
not add up is named."""

from __future__ import annotations

import json

from controller.domain.correction_check import CorrectionCheck

LINES = [
    {
        "seat": 3,
        "kind": "progressive",
        "paid_cents": "0",
        "due_cents": "5000",
        "basis": "fixed",
        "needs_validation": False,
    },
    {
        "seat": 1,
        "kind": "progressive",
        "paid_cents": "0",
        "due_cents": "1800000",
        "basis": "meter_after_original_settlement",
        "needs_validation": True,
    },
    {
        "seat": 2,
        "kind": "progressive",
        "paid_cents": "5000",
        "due_cents": "0",
        "basis": "fixed",
        "needs_validation": False,
    },
]
WAGERS = [
    {
        "seat": 2,
        "kind": "progressive",
        "amount_cents": "100",
        "removed": True,
        "meter_ids": ["m"],
        "to_meter_microcents": ["15000000"],
        "to_reserve_microcents": ["0"],
    },
    {
        "seat": 4,
        "kind": "progressive",
        "amount_cents": "100",
        "removed": False,
        "meter_ids": ["m"],
        "to_meter_microcents": {},
        "to_reserve_microcents": {},
    },
]


ANN = "jackpot://supervisor/ann"


def entries(**changes: str) -> list[dict[str, str]]:
    common = {"table": "t1", "round": "1", "correction": "g:1"}
    totals = {"pay_cents": "1805000", "recover_cents": "5000", "operator_funded_cents": "1800000"}
    lines = json.dumps(LINES)
    rows = [
        {
            "seq": "1",
            "type": "correction_requested",
            "table": "t1",
            "round": "1",
            "lines": lines,
            "wagers": json.dumps(WAGERS),
            "by": ANN,
            "by_cert": "ann-cert",
            **totals,
        },
        {
            "seq": "2",
            "type": "correction_contribution",
            "meter": "m",
            "d_meter": "-15000000",
            "d_reserve": "0",
            "seat": "2",
            "wager": "progressive",
            "removed": "1",
            **common,
        },
        {
            "seq": "3",
            "type": "correction_contribution",
            "meter": "m",
            "d_meter": "15000000",
            "d_reserve": "0",
            "seat": "4",
            "wager": "progressive",
            "removed": "0",
            **common,
        },
        {
            "seq": "4",
            "type": "round_corrected",
            "lines": lines,
            "requested_by": ANN,
            "by": "jackpot://supervisor/bob",
            "by_cert": "bob-cert",
            **totals,
            **common,
        },
        {
            "seq": "5",
            "type": "correction_award",
            "seat": "1",
            "wager": "progressive",
            "amount_cents": "1800000",
            **common,
        },
    ]
    for key, value in changes.items():
        seq, field = key.split("_", 1)
        rows[int(seq[1:]) - 1][field] = value
    return rows


def problems(rows: list[dict[str, str]]) -> list[str]:
    check = CorrectionCheck("g")
    for fields in rows:
        check.add(fields)
    return check.problems


def test_a_correction_whose_sums_add_up_passes() -> None:
    assert problems(entries()) == []


def test_a_request_whose_totals_are_not_its_lines_is_named() -> None:
    (problem,) = problems(entries(e1_pay_cents="1805001"))
    assert "journal #1" in problem and "(1805001, 5000, 1800000)" in problem


def test_an_application_with_other_lines_is_named() -> None:
    other = json.dumps(LINES[:1])
    found = problems(
        entries(
            e4_lines=other, e4_pay_cents="5000", e4_recover_cents="0", e4_operator_funded_cents="0"
        )
    )
    assert any("applies other lines" in p for p in found)


def test_a_removed_contribution_other_than_recorded_is_named() -> None:
    (problem,) = problems(entries(e2_d_meter="-16000000"))
    assert "not the recorded contribution of seat 2" in problem


def test_an_added_contribution_above_the_wager_is_named() -> None:
    (problem,) = problems(entries(e3_d_meter="100000001"))
    assert "adds 100000001 microcents" in problem


def test_a_held_award_no_line_is_due_is_named() -> None:
    (problem,) = problems(entries(e5_amount_cents="1800001"))
    assert "no line of correction g:1" in problem


def test_a_correction_applied_twice_is_named() -> None:
    rows = entries()
    assert any("again" in p for p in problems([*rows, rows[3]]))


def test_a_correction_applied_by_its_requester_is_named() -> None:
    (problem,) = problems(entries(e4_by=ANN))
    assert "not by a second identity after" in problem
    (problem,) = problems(entries(e4_by_cert="ann-cert"))  # another name, the same certificate
    assert "not by a second identity after" in problem


def test_a_contribution_journaled_twice_is_named() -> None:
    rows = entries()
    twice = [*rows[:2], rows[1] | {"seq": "2b"}, *rows[2:]]
    (problem,) = problems(twice)
    assert "again" in problem and "seat 2" in problem


def test_an_award_held_twice_or_before_the_correction_is_applied_is_named() -> None:
    rows = entries()
    (problem,) = problems([*rows, rows[4] | {"seq": "6"}])
    assert "held already" in problem
    (problem,) = problems([*rows[:3], rows[4], rows[3]])
    assert "not applied first" in problem
