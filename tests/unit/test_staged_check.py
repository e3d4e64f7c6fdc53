"""The audit's check of staged meter changes names a bad entry and goes on."""

from __future__ import annotations

from controller.domain.staged import STAGED_PARAMETERS, StagedCheck


def _staged(seq: str) -> dict[str, str]:
    fields = {"seq": seq, "type": "meter_change_staged", "meter": "m1"}
    for name in STAGED_PARAMETERS:
        fields |= {f"old_{name}": "1", f"new_{name}": "2"}
    return fields


def test_an_applied_change_whose_hit_number_does_not_read_is_named_not_fatal() -> None:
    check = StagedCheck("floor")
    check.add({"seq": "3", "type": "reset", "meter": "m1", "reset_cents": "2"})
    check.add(_staged("4"))
    applied = _staged("9") | {"type": "meter_change_applied", "staged_seq": "4", "hit_seq": "x"}
    check.add(applied)
    check.add(_staged("10"))  # the audit goes on past it
    assert len(check.problems) == 1
    assert "floor/m1: journal #9" in check.problems[0]
    assert "does not read" in check.problems[0]


def test_an_end_of_a_change_no_entry_staged_is_named_for_a_meter_created_in_the_journal() -> None:
    check = StagedCheck("floor")
    check.add({"seq": "1", "type": "meter_created", "meter": "m1"})
    applied = _staged("9") | {"type": "meter_change_applied", "staged_seq": "4", "hit_seq": "8"}
    check.add(applied)
    assert len(check.problems) == 1
    assert "floor/m1: journal #9" in check.problems[0]
    assert "none waits" in check.problems[0]


def test_an_end_of_a_change_staged_before_a_trimmed_journal_is_accepted() -> None:
    check = StagedCheck("floor")  # the journal starts after m1's creation and the staging
    applied = _staged("9") | {"type": "meter_change_applied", "staged_seq": "4", "hit_seq": "8"}
    check.add(applied)
    assert check.problems == []
