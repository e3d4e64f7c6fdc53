"""The payout compliance policy at its thresholds, its presets and changes, the tax-form
reference's bounds, and the audit's check of payments against the policy they state."""

from __future__ import annotations

import pytest

from controller.domain.payout_compliance import (
    MAX_WITNESS_FROM_CENTS,
    NONE,
    OKLAHOMA,
    PRESETS,
    US_DEFAULT,
    PaymentCheck,
    PaymentCompliance,
    PayoutCompliance,
    check_tax_form_ref,
    policy,
    requirements,
)
from jackpot.errors import InvalidArgument, InvalidConfiguration

US = PRESETS[US_DEFAULT]


@pytest.mark.parametrize(
    ("amount_cents", "wager_cents", "required"),
    [
        (59_999, 100, False),  # $599.99: under $600
        (60_000, 100, True),  # $600.00 and 600x the $1 wager
        (60_000, 201, False),  # $600.00 but 298.5x a $2.01 wager
        (60_000, 200, True),  # exactly 300x a $2.00 wager
        (89_700, 300, False),  # $897.00: 299x a $3.00 wager
        (89_999, 300, False),  # 299.99x a $3.00 wager
        (90_000, 300, True),  # 300x a $3.00 wager
        (1_000_000, 5_000, False),  # $10,000 on a $50 wager: 200x
        (1_500_000, 5_000, True),  # 300x
    ],
)
def test_the_tax_form_at_its_thresholds(
    amount_cents: int, wager_cents: int, required: bool
) -> None:
    needs = requirements(US, amount_cents, wager_cents)
    assert needs.tax_form_required is required
    assert needs.tax_form_reason  # a reason either way, for the slip


@pytest.mark.parametrize(
    ("amount_cents", "required"), [(119_999, False), (120_000, True), (120_001, True)]
)
def test_the_witness_at_its_threshold(amount_cents: int, required: bool) -> None:
    needs = requirements(US, amount_cents, 100)
    assert needs.witness_required is required
    assert needs.witness_reason == (
        "$1,200.00 >= $1,200.00"
        if amount_cents == 120_000
        else ("$1,199.99 < $1,200.00" if amount_cents == 119_999 else "$1,200.01 >= $1,200.00")
    )


def test_the_reasons_say_which_bound() -> None:
    assert requirements(US, 59_999, 100).tax_form_reason == "$599.99 < $600.00"
    assert requirements(US, 60_000, 201).tax_form_reason == "$600.00 < 300x the $2.01 wager"
    assert requirements(US, 60_000, 200).tax_form_reason == (
        "$600.00 >= $600.00 and >= 300x the $2.00 wager"
    )


def test_presets() -> None:
    assert not PRESETS[NONE].active
    assert requirements(PRESETS[NONE], 10**9, 100) == requirements(PRESETS[NONE], 0, 0)
    assert not requirements(PRESETS[NONE], 10**9, 100).tax_form_required
    assert US.tax_form_overridable and not PRESETS[OKLAHOMA].tax_form_overridable
    for name in (US_DEFAULT, OKLAHOMA):
        preset = PRESETS[name]
        assert (preset.tax_form_from_cents, preset.tax_form_wager_multiple) == (60_000, 300)
        assert preset.witness_from_cents == 120_000
    assert "not overridable" in PRESETS[OKLAHOMA].describe()


def test_changing_a_preset() -> None:
    raised = policy(US_DEFAULT, witness_from_cents=500_000)
    assert raised.name == "us-default+custom" and raised.witness_from_cents == 500_000
    assert not requirements(raised, 499_999, 100).witness_required
    assert requirements(raised, 500_000, 100).witness_required
    off = policy(OKLAHOMA, tax_form_from_cents=0)
    assert off.tax_form_from_cents is None and not requirements(off, 10**8, 1).tax_form_required
    assert policy(US_DEFAULT) is US


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"witness_from_cents": MAX_WITNESS_FROM_CENTS + 1}, "at most|0.01 to \\$5,000.00"),
        ({"tax_form_wager_multiple": 0}, "multiple must be 1 to"),
        ({"witness_from_cents": -1}, "never negative"),
        ({"tax_form_from_cents": -5}, "never negative"),
    ],
)
def test_bad_changes_are_refused(changes: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidConfiguration, match=message):
        policy(US_DEFAULT, **changes)


def test_an_unknown_preset_is_refused() -> None:
    with pytest.raises(InvalidConfiguration, match="unknown payout compliance preset 'nevada'"):
        policy("nevada")


@pytest.mark.parametrize("good", ["W2G-2025-0042", "a", "TX/2025/17", "r.1_2-3", "A" * 40])
def test_tax_form_references(good: str) -> None:
    assert check_tax_form_ref(good) == good


@pytest.mark.parametrize(
    "bad",
    ["A" * 41, "John Smith", "123-45-6789 Main St", "-leading", "ref\n", "é", "a;b", "ref,2"],
)
def test_tax_form_references_refused(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="never the patron's personal data"):
        check_tax_form_ref(bad)


def _paid(seq: int, **fields: str) -> dict[str, str]:
    """A jackpot_paid entry as pay_jackpot.lua writes it under us-default."""
    needs = requirements(US, 150_000, 100)
    args = PaymentCompliance(US, 150_000, 100, needs, "W2G-1").arguments()
    entry = {
        "seq": str(seq),
        "type": "jackpot_paid",
        "jackpot": "floor:3",
        "amount_cents": "150000",
        "payer": "jackpot://cashier/cage-1",
        "compliance": args[0],
        "tax_form_from_cents": args[1],
        "tax_form_multiple": args[2],
        "tax_form_overridable": args[3],
        "witness_from_cents": args[4],
        "tax_form_required": args[5],
        "witness_required": args[6],
        "tax_form_ref": args[7],
        "tax_form_override": args[8],
        "wager_cents": args[10],
        "witness": "jackpot://supervisor/ann",
        "witness_seq": "4",
    }
    return entry | fields


WITNESSED = {
    "seq": "4",
    "type": "jackpot_witnessed",
    "jackpot": "floor:3",
    "witness": "jackpot://supervisor/ann",
}


def _problems(*entries: dict[str, str], history_start: int = 0) -> list[str]:
    check = PaymentCheck("floor", history_start)
    for entry in entries:
        check.add(entry)
    return check.problems


def test_the_audit_accepts_a_compliant_payment() -> None:
    assert _problems(WITNESSED, _paid(5)) == []
    # a payment without a policy is not checked (a controller with --payout-compliance none)
    assert _problems({"seq": "5", "type": "jackpot_paid", "jackpot": "floor:3"}) == []


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ((WITNESSED, _paid(5, tax_form_ref="")), "without the tax form"),
        ((WITNESSED, _paid(5, tax_form_ref="John Smith")), "of another form"),
        ((WITNESSED, _paid(5, tax_form_required="0")), "states tax form/witness required"),
        ((_paid(5),), "no jackpot_witnessed entry"),
        ((WITNESSED, _paid(5, witness="")), "without the witness"),
        ((WITNESSED, _paid(5, witness_seq="2")), "but entry #4"),
        (
            (
                WITNESSED | {"witness": "jackpot://cashier/cage-1"},
                _paid(5, witness="jackpot://cashier/cage-1"),
            ),
            "as its own witness",
        ),
        ((WITNESSED, _paid(5, tax_form_multiple="0")), "not one"),
        (
            (
                WITNESSED,
                _paid(5, tax_form_ref="", tax_form_override="filed", tax_form_overridable="0"),
            ),
            "does not allow",
        ),
    ],
)
def test_the_audit_names_a_payment_its_policy_refused(
    entries: tuple[dict[str, str], ...], problem: str
) -> None:
    found = _problems(*entries)
    assert len(found) >= 1 and problem in found[0], found
    assert found[0].startswith("floor: journal #5 (jackpot_paid of floor:3)")


def test_the_audit_takes_a_trimmed_witness_as_named() -> None:
    assert _problems(_paid(5), history_start=4) == []
    assert _problems(_paid(5), history_start=3) != []
    # a witness "trimmed away" from before the jackpot's own hit (floor:3) is a forgery
    assert "no jackpot_witnessed entry" in _problems(_paid(5, witness_seq="2"), history_start=4)[0]


def test_the_audit_names_a_tax_form_reference_filed_twice() -> None:
    other = WITNESSED | {"seq": "6", "jackpot": "floor:4"}
    second = _paid(7, witness_seq="6") | {"jackpot": "floor:4"}
    assert _problems(WITNESSED, _paid(5), other, second | {"tax_form_ref": "W2G-2"}) == []
    found = _problems(WITNESSED, _paid(5), other, second)
    assert len(found) == 1 and "reuses tax-form reference" in found[0] and "floor:3" in found[0]


def test_an_override_where_allowed() -> None:
    assert (
        _problems(WITNESSED, _paid(5, tax_form_ref="", tax_form_override="filed at the cage")) == []
    )


def test_a_policy_dataclass_refuses_out_of_range_values() -> None:
    with pytest.raises(InvalidConfiguration, match="witness threshold"):
        PayoutCompliance("x", None, 1, False, 0)
    with pytest.raises(InvalidConfiguration, match="tax-form threshold"):
        PayoutCompliance("x", 0, 1, False, None)
