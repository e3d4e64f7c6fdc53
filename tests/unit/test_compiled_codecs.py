"""The compiled codecs of jackpot.data and jackpot.wire give what the generic ones they replaced
gave: the same records, the same messages, the same errors.

The reference here is the generic code as it was (a loop over each field's converter), kept
small. Hypothesis builds every record that crosses these functions from its type hints: the
result records of jackpot.results (nested ones included), and the controller's records that
its store decodes (controller.store.codec) and its API encodes (controller.api). Plain data
is written the ways the Lua scripts write it: amounts as decimal strings or numbers, an empty
array as cjson's ``{}``, None as null or "", a field at its default sometimes left out.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

import pytest
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jackpot.results
from controller.domain.records import Adjustment, Irregularity, Jackpot, Maintenance, RetiredMeter
from jackpot.data import record_from_data
from jackpot.epochs import JournalPosition
from jackpot.kinds import WagerKind
from jackpot.results import (
    AcceptedWager,
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    MeterValue,
    SettleResult,
    VoidResult,
)
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.wire import enum_member, enum_number, from_message, to_message

EXAMPLES = settings(
    max_examples=60,
    deadline=None,  # the machine is shared: no example is timed
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ------------------------------------------------------------------ the records that cross

TO_MESSAGE: list[tuple[type[Any], type[Message]]] = [
    (LockoutResult, pb.LockoutResponse),
    (SettleResult, pb.SettleResponse),
    (VoidResult, pb.VoidRoundResponse),
    (ChipCountResult, pb.ReportChipCountResponse),
    (IrregularityResult, pb.ReportIrregularityResponse),
    (MeterValue, pb.MeterValue),
    (JournalPosition, pb.JournalPosition),
    (Maintenance, pb.Maintenance),
    (Jackpot, pb.Jackpot),
    (Adjustment, pb.Adjustment),
    (RetiredMeter, pb.RetiredMeter),
    (Irregularity, pb.Irregularity),
]
"""Each record the controller encodes, with its message (controller.api)."""
FROM_MESSAGE = TO_MESSAGE[:5]
"""What the table agent decodes (table_agent.client): the answers to a table."""
FROM_DATA: list[type[Any]] = [
    AcceptedWager,
    LockoutResult,
    SettleResult,
    VoidResult,
    ChipCountResult,
    IrregularityResult,
    Irregularity,
    Jackpot,
    Adjustment,
    RetiredMeter,
]
"""Each record the store decodes from a script's JSON (controller.store.codec)."""


def _nested(record_type: type[Any]) -> set[type[Any]]:
    """``record_type`` and every record type its fields hold, transitively."""
    found = {record_type}
    for hint in typing.get_type_hints(record_type).values():
        for arg in (hint, *typing.get_args(hint)):
            if dataclasses.is_dataclass(arg) and arg not in found:
                found |= _nested(typing.cast(type[Any], arg))
    return found


def test_every_result_record_is_covered() -> None:
    results = {
        value
        for value in vars(jackpot.results).values()
        if inspect.isclass(value)
        and dataclasses.is_dataclass(value)
        and value.__module__ == jackpot.results.__name__
    }
    encoded = set().union(*(_nested(record) for record, _ in TO_MESSAGE))
    decoded = set().union(*(_nested(record) for record in FROM_DATA))
    assert results <= encoded and results <= decoded


# ------------------------------------------------------------- the reference: generic code


def reference_from_data(record_type: type[Any], data: Mapping[str, Any]) -> Any:
    """jackpot.data's record_from_data as it was: a loop over each field's decoder."""
    hints = typing.get_type_hints(record_type)
    kwargs = {}
    for f in dataclasses.fields(record_type):
        if not f.init:
            continue
        if f.name in data:
            kwargs[f.name] = _reference_decoder(hints[f.name])(data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{record_type.__name__}: {f.name} is missing from {sorted(data)}")
    return record_type(**kwargs)


def _reference_decoder(hint: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in args if arg is not type(None)]
        decode = _reference_decoder(inner)
        return lambda value: None if value in (None, "") else decode(value)
    if origin is tuple:
        item = _reference_decoder(args[0])
        return lambda value: tuple(item(v) for v in value) if isinstance(value, list) else ()
    if origin in (dict, Mapping):
        return lambda value: dict(value) if isinstance(value, Mapping) else {}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return lambda value: reference_from_data(hint, value)
    if isinstance(hint, type) and issubclass(hint, Enum | int | bool | str):
        return hint
    raise TypeError(f"no decoder for a field of type {hint!r}")


def reference_to_message(record: object, message_type: type[Message]) -> Message:
    """jackpot.wire's to_message as it was."""
    kwargs: dict[str, Any] = {}
    f: Any
    for f in message_type.DESCRIPTOR.fields:
        value = getattr(record, f.name)
        enum = f.enum_type
        if f.has_presence:
            pass
        elif (enum is not None and not f.is_repeated and value is None) or (
            (enum is None or f.is_repeated) and not value
        ):
            continue
        encode = _reference_encoder(f)
        kwargs[f.name] = [encode(v) for v in value] if f.is_repeated else encode(value)
    return message_type(**kwargs)


def _reference_encoder(f: Any) -> Callable[[Any], Any]:
    if f.message_type is not None:
        nested = GetMessageClass(f.message_type)
        return lambda value: reference_to_message(value, nested)
    if f.enum_type is not None:
        return lambda value: enum_number(value, f.enum_type)
    return lambda value: value


def reference_from_message(message: Message, record_type: type[Any]) -> Any:
    """jackpot.wire's from_message as it was."""
    hints = typing.get_type_hints(record_type)
    wire: Mapping[str, Any] = message.DESCRIPTOR.fields_by_name
    kwargs = {}
    for f in dataclasses.fields(record_type):
        if not f.init or f.name not in wire:
            continue
        hint, value, w = _without_none(hints[f.name]), getattr(message, f.name), wire[f.name]
        if typing.get_origin(hint) is tuple:
            item = typing.get_args(hint)[0]
            if w.message_type is not None:
                kwargs[f.name] = tuple(reference_from_message(v, item) for v in value)
            else:
                kwargs[f.name] = tuple(value)
        elif w.message_type is not None:
            kwargs[f.name] = reference_from_message(value, hint)
        elif w.enum_type is not None:
            kwargs[f.name] = enum_member(value, hint, w.enum_type)
        else:
            kwargs[f.name] = value
    return record_type(**kwargs)


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        return next(arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


# ------------------------------------------------------------ records from their type hints

WIRE_INT = st.integers(min_value=0, max_value=2**32 - 1)
"""An int that every integer field of the wire holds (uint32 is the narrowest)."""


def records(record_type: type[Any]) -> st.SearchStrategy[Any]:
    """Records of ``record_type`` built from its fields' type hints."""
    if record_type is JournalPosition:  # its epoch id is checked: letters, digits, '-'
        return st.builds(JournalPosition, st.text("ab09-", max_size=8), WIRE_INT)
    hints = typing.get_type_hints(record_type)
    fields = {f.name: _values(hints[f.name]) for f in dataclasses.fields(record_type) if f.init}
    return st.builds(record_type, **fields)


def _values(hint: Any) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return st.none() | _values(_without_none(hint))
    if origin is tuple:
        return st.lists(_values(args[0]), max_size=3).map(tuple)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return records(hint)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return st.sampled_from(list(hint))
    if hint is bool:
        return st.booleans()
    if hint is int:
        return WIRE_INT
    if hint is str:
        return st.text(max_size=6)
    raise TypeError(f"no strategy for {hint!r}")


@st.composite
def plain(draw: st.DrawFn, record: Any) -> Any:
    """``record`` as a Lua script's JSON might carry it."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        data = {}
        for f in dataclasses.fields(record):
            value = getattr(record, f.name)
            at_default = f.default is not dataclasses.MISSING and value == f.default
            if not (at_default and draw(st.booleans())):  # a default may be left out
                data[f.name] = draw(plain(value))
        return data
    if isinstance(record, tuple):
        if not record:
            return draw(st.sampled_from([[], {}]))  # cjson's {} for an empty array
        return [draw(plain(item)) for item in record]
    if record is None:
        return draw(st.sampled_from([None, ""]))
    if isinstance(record, Enum):
        return record.value
    if isinstance(record, int) and not isinstance(record, bool):
        return draw(st.sampled_from([record, str(record)]))  # amounts as decimal strings
    return record


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What ``call`` returns, or the type and text of what it raises."""
    try:
        return ("result", call())
    except Exception as error:  # compared, never swallowed: both sides must raise it
        return (type(error).__name__, str(error))


# ------------------------------------------------------------------------------ from data


@pytest.mark.parametrize("record_type", FROM_DATA, ids=lambda t: t.__name__)
@EXAMPLES
@given(data=st.data())
def test_records_from_data_as_the_generic_decoder(record_type: type[Any], data: Any) -> None:
    record = data.draw(records(record_type))
    plain_data = data.draw(plain(record))
    assert record_from_data(record_type, plain_data) == record
    assert reference_from_data(record_type, plain_data) == record


@pytest.mark.parametrize("record_type", FROM_DATA, ids=lambda t: t.__name__)
@EXAMPLES
@given(data=st.data())
def test_a_missing_field_is_refused_or_defaulted_as_before(
    record_type: type[Any], data: Any
) -> None:
    plain_data = data.draw(plain(data.draw(records(record_type))))
    name = data.draw(st.sampled_from(sorted(plain_data)))
    del plain_data[name]
    compiled = _outcome(lambda: record_from_data(record_type, plain_data))
    assert compiled == _outcome(lambda: reference_from_data(record_type, plain_data))
    required = {f.name for f in dataclasses.fields(record_type) if _required(f)}
    if name in required:
        assert compiled == (
            "ValueError",
            f"{record_type.__name__}: {name} is missing from {sorted(plain_data)}",
        )


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class _Colour(StrEnum):
    RED = "red"
    BLANK = ""


@dataclass(frozen=True, slots=True)
class _Leaf:
    colour: _Colour
    amount_cents: int = 0


@dataclass(frozen=True)
class _Shapes:
    """Every kind of field a record may have, a record of its own type among them."""

    leaves: tuple[_Leaf, ...]
    maybe_leaf: _Leaf | None = None
    maybe_cents: int | None = None
    names: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    child: _Shapes | None = None
    flag: bool = False
    note: str = field(default="", kw_only=True)


SHAPES_DATA = [
    {"leaves": {}},
    {"leaves": [], "labels": {"a": "b"}, "labels_ignored": 1},
    {"leaves": [{"colour": "red", "amount_cents": "9007199254740993"}], "names": ["x", 2]},
    {"leaves": [{"colour": ""}], "maybe_leaf": "", "maybe_cents": None, "labels": []},
    {"leaves": [], "maybe_leaf": {"colour": "red"}, "maybe_cents": "-5", "flag": 1},
    {"leaves": [], "child": {"leaves": [], "child": {"leaves": {}, "note": 7}}, "note": "n"},
    {"leaves": [], "child": ""},
    {"leaves": [{"colour": _Colour.RED}]},  # a member itself: calling the enum finds it
    {"leaves": [{"colour": "blue"}]},  # refused: not a colour
    {"leaves": [{"colour": ["red"]}]},  # refused: not hashable, not a colour
    {"leaves": [{"colour": None}]},  # refused: not optional
    {"leaves": [{"amount_cents": "1"}]},  # refused: no colour
    {"leaves": [{"colour": "red", "amount_cents": "1.5"}]},  # refused: not an integer
    {"leaves": "not an array"},  # read as no items, as cjson's {} is
    {"maybe_leaf": {"colour": "red"}},  # refused: no leaves
    {"leaves": [], "child": {"child": {}}},  # refused: a nested record without its leaves
]


@pytest.mark.parametrize("data", SHAPES_DATA)
def test_every_shape_of_field_decodes_or_is_refused_as_before(data: dict[str, Any]) -> None:
    compiled = _outcome(lambda: record_from_data(_Shapes, data))
    assert compiled == _outcome(lambda: reference_from_data(_Shapes, data))


@dataclass(frozen=True)
class _Odd:
    amount: float


@dataclass(frozen=True)
class _HoldsOdd:
    odd: _Odd | None = None


def test_a_field_type_without_a_decoder_is_refused_where_it_is_used() -> None:
    assert record_from_data(_HoldsOdd, {"odd": None}) == _HoldsOdd()
    for decode in (record_from_data, reference_from_data):
        with pytest.raises(TypeError, match="no decoder for a field of type <class 'float'>"):
            decode(_HoldsOdd, {"odd": {"amount": 1}})


# --------------------------------------------------------------------------- to and from wire


@pytest.mark.parametrize(
    ("record_type", "message_type"), TO_MESSAGE, ids=lambda t: getattr(t, "__name__", "")
)
@EXAMPLES
@given(data=st.data())
def test_records_to_messages_as_the_generic_encoder(
    record_type: type[Any], message_type: type[Message], data: Any
) -> None:
    record = data.draw(records(record_type))
    message = to_message(record, message_type)
    expected = reference_to_message(record, message_type)
    assert message == expected
    assert message.ListFields() == expected.ListFields()  # the same fields set, presence too
    assert message.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True
    )


@pytest.mark.parametrize(
    ("record_type", "message_type"), FROM_MESSAGE, ids=lambda t: getattr(t, "__name__", "")
)
@EXAMPLES
@given(data=st.data())
def test_messages_to_records_as_the_generic_decoder(
    record_type: type[Any], message_type: type[Message], data: Any
) -> None:
    record = data.draw(records(record_type))
    message = to_message(record, message_type)
    decoded = from_message(message, record_type)
    assert decoded == reference_from_message(message, record_type)
    assert decoded == dataclasses.replace(record, replayed=False)  # not on the wire


class _Lottery(StrEnum):
    PROGRESSIVE = "progressive"
    LOTTERY = "lottery"


@dataclass(frozen=True)
class _Ticket:
    seat: int
    kind: _Lottery | None
    amount_cents: int
    contributions: tuple[Any, ...] = ()
    on_dealer_hand: bool = False
    envy: bool = False
    player_token: str = ""  # pb.AcceptedWager's field since the player at the seat


@dataclass(frozen=True)
class _Share:
    meter_id: Any
    to_meter_microcents: Any
    to_reserve_microcents: Any


@pytest.mark.parametrize(
    ("ticket", "refusal"),
    [
        (_Ticket(1, _Lottery.LOTTERY, 100), "KeyError: 'WAGER_KIND_LOTTERY'"),
        (_Ticket(1, _Lottery.PROGRESSIVE, 100, ("not a contribution",)), "AttributeError"),
        (_Ticket(-1, _Lottery.PROGRESSIVE, 100), "ValueError"),
        (_Ticket(1, _Lottery.PROGRESSIVE, 100, (MeterValue("m", 1),)), "AttributeError"),
        (_Ticket(1, _Lottery.PROGRESSIVE, 100, (_Share("m", 1.5, 0),)), "TypeError"),
        (_Ticket(1, _Lottery.PROGRESSIVE, 100, (_Share(5, 1, 0),)), "TypeError"),
    ],
)
def test_a_record_the_wire_cannot_hold_is_refused_as_before(ticket: _Ticket, refusal: str) -> None:
    compiled = _outcome(lambda: to_message(ticket, pb.AcceptedWager))
    assert compiled == _outcome(lambda: reference_to_message(ticket, pb.AcceptedWager))
    assert f"{compiled[0]}: {compiled[1]}".startswith(refusal)


def test_none_and_unset_enums_and_defaults_are_left_unset_as_before() -> None:
    wager = AcceptedWager(0, WagerKind.BONUS, 0)
    message = to_message(wager, pb.AcceptedWager)
    assert [f.name for f, _ in message.ListFields()] == ["kind"]
    ticket = _Ticket(0, None, 0)
    assert to_message(ticket, pb.AcceptedWager).ListFields() == []
    result = to_message(SettleResult("t", 0, (), ()), pb.SettleResponse)
    assert [f.name for f, _ in result.ListFields()] == ["table_id", "journal"]  # presence


@dataclass(frozen=True)
class _MeterUpdate:
    meter_id: str
    rate_of_progression_percent: str | None
    reserve_rate_percent: str | None
    ceiling_cents: int | None
    reset_cents: int | None
    reason: str = ""
    at: Any = None  # UpdateMeterRequest's MeterChangeAt since staged changes: unset


def test_a_field_with_presence_is_always_set_as_before() -> None:
    update = _MeterUpdate("m-1", "", "0.5", 0, None)
    message = to_message(update, pb.UpdateMeterRequest)
    assert message == reference_to_message(update, pb.UpdateMeterRequest)
    assert message.HasField("rate_of_progression_percent") and message.HasField("ceiling_cents")
    assert not message.HasField("reset_cents")  # None: a presence field left unset


@dataclass(frozen=True)
class _TicketRead:
    seat: int
    kind: _Lottery | None


@pytest.mark.parametrize("record_type", [_TicketRead, AcceptedWager])
@pytest.mark.parametrize("kind", [0, pb.WAGER_KIND_PROGRESSIVE, pb.WAGER_KIND_BONUS, 999])
def test_wire_enum_numbers_read_as_before(record_type: type[Any], kind: int) -> None:
    message = pb.AcceptedWager(seat=3, kind=typing.cast(Any, kind))  # 999: a later release's
    compiled = _outcome(lambda: from_message(message, record_type))
    assert compiled == _outcome(lambda: reference_from_message(message, record_type))
    if record_type is _TicketRead and kind == pb.WAGER_KIND_BONUS:
        assert compiled == ("KeyError", "'BONUS'")  # no such lottery kind: refused


@dataclass(frozen=True, init=False)
class _Reordered:
    """A record whose constructor takes its fields in another order."""

    seat: int
    hand: str = ""

    def __init__(self, hand: str = "", seat: int = 0) -> None:
        object.__setattr__(self, "seat", seat)
        object.__setattr__(self, "hand", hand)


def test_a_constructor_is_called_by_its_own_parameters() -> None:
    data = {"seat": "4", "hand": "Flush"}
    assert record_from_data(_Reordered, data) == reference_from_data(_Reordered, data)
    assert record_from_data(_Reordered, data) == _Reordered(seat=4, hand="Flush")
    message = pb.SeatResult(seat=4, hand="Flush")
    assert from_message(message, _Reordered) == _Reordered(seat=4, hand="Flush")
