"""The one mapping between the core's records and protobuf (jackpot.wire), and the one decoder
of records from plain data (jackpot.data)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pytest
from google.protobuf.descriptor import EnumDescriptor

from jackpot.data import record_from_data
from jackpot.epochs import JournalPosition
from jackpot.kinds import AwardKind, WagerKind
from jackpot.results import Contribution, MeterValue, SeatOutcome
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.wire import enum_member, enum_number, from_message, to_message

ENUMS: list[tuple[type[Enum], EnumDescriptor]] = [
    (WagerKind, pb.WagerKind.DESCRIPTOR),
    (AwardKind, pb.AwardKind.DESCRIPTOR),
    (SeatOutcome, pb.SeatOutcome.DESCRIPTOR),
]


@pytest.mark.parametrize(("enum_type", "descriptor"), ENUMS, ids=lambda e: getattr(e, "name", ""))
def test_every_kind_has_exactly_one_wire_value_and_back(
    enum_type: type[Enum], descriptor: EnumDescriptor
) -> None:
    numbers = {enum_number(member, descriptor) for member in enum_type}
    assert 0 not in numbers and len(numbers) == len(enum_type)
    assert numbers == set(descriptor.values_by_number) - {0}  # the .proto has no other value
    for member in enum_type:
        assert enum_member(enum_number(member, descriptor), enum_type, descriptor) is member


def test_none_is_the_unspecified_zero_and_an_unknown_number_reads_as_none() -> None:
    descriptor = pb.WagerKind.DESCRIPTOR
    assert enum_number(None, descriptor) == pb.WAGER_KIND_UNSPECIFIED == 0
    assert enum_member(0, WagerKind, descriptor) is None
    assert enum_member(999, WagerKind, descriptor) is None


def test_a_record_goes_to_its_message_and_back_by_field_names() -> None:
    meter = MeterValue("m-1", 1_234_567_891)
    message = to_message(meter, pb.MeterValue)
    assert message.amount_cents == 1234 and message.amount_microcents == 1_234_567_891
    assert from_message(message, MeterValue) == meter
    position = JournalPosition("e-1", 42)
    assert from_message(to_message(position, pb.JournalPosition), JournalPosition) == position
    contribution = Contribution("m-1", 5_000, 1_000)
    assert from_message(to_message(contribution, pb.Contribution), Contribution) == contribution


def test_a_record_that_lacks_a_message_field_is_a_programming_error() -> None:
    @dataclass(frozen=True)
    class Partial:
        meter_id: str

    with pytest.raises(AttributeError):
        to_message(Partial("m-1"), pb.MeterValue)


@dataclass(frozen=True, slots=True)
class _Inner:
    kind: WagerKind
    amount_cents: int


@dataclass(frozen=True, slots=True)
class _Outer:
    name: str
    items: tuple[_Inner, ...]
    award_kind: AwardKind | None = None
    flag: bool = False
    count: int = 0


def test_plain_data_decodes_by_the_records_field_types() -> None:
    data = {
        "name": "x",
        "items": [{"kind": "bonus", "amount_cents": "500"}],
        "award_kind": "percent_of_meter",
        "flag": True,
        "count": "90071992547409910",  # a decimal string beyond a double's exact range
    }
    assert record_from_data(_Outer, data) == _Outer(
        "x", (_Inner(WagerKind.BONUS, 500),), AwardKind.PERCENT_OF_METER, True, 90071992547409910
    )


def test_missing_keys_take_defaults_and_cjsons_empty_object_is_no_items() -> None:
    assert record_from_data(_Outer, {"name": "x", "items": {}, "award_kind": ""}) == _Outer("x", ())


def test_a_required_field_missing_or_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="items is missing"):
        record_from_data(_Outer, {"name": "x"})
    with pytest.raises(ValueError, match="'lottery' is not a valid WagerKind"):
        record_from_data(_Inner, {"kind": "lottery", "amount_cents": 1})
