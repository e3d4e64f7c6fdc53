"""Records to protobuf messages and back: the one mapping, built from the message's fields.

A record's field carries the name of the message field it fills (``SeatResult.kind`` is
``SeatResult.kind`` on the wire); a record may hold more than the wire (``replayed``), never
less: every field of the message is read from the record. A string enum maps to the protobuf enum
value with the same name after the enum's prefix (``WagerKind.FIVE_CARD_BONUS`` is
``WAGER_KIND_FIVE_CARD_BONUS``); None is the enum's ``..._UNSPECIFIED`` 0. The controller
encodes with :func:`to_message`, the table agent decodes with :func:`from_message`, so adding
a field to a result is one edit in the record and one in the .proto.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

from google.protobuf.descriptor import EnumDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

R = TypeVar("R")
M = TypeVar("M", bound=Message)

Convert = Callable[[Any], Any]


def to_message(record: object, message_type: type[M]) -> M:
    """The ``message_type`` message holding ``record``'s fields of the same names. A field
    without presence whose value is its default (0, "", False, None, no items) is left unset,
    which is the same message (and the same bytes) as setting it, built faster."""
    kwargs: dict[str, Any] = {}
    for name, convert, unset in _encoder(message_type):
        value = getattr(record, name)
        if (unset is _FALSY and not value) or (unset is _NONE and value is None):
            continue
        kwargs[name] = value if convert is None else convert(value)
    return message_type(**kwargs)


def from_message(message: Message, record_type: type[R]) -> R:
    """The ``record_type`` record of ``message``'s fields of the same names."""
    return record_type(
        **{
            name: convert(getattr(message, name))
            for name, convert in _decoder(record_type, message.DESCRIPTOR)
        }
    )


def enum_number(value: Enum | None, descriptor: EnumDescriptor) -> int:
    """The wire number of ``value`` (0, ``..._UNSPECIFIED``, for None)."""
    if value is None:
        return 0
    numbers = _ENUM_NUMBERS.get(descriptor)
    if numbers is None:
        prefix = _prefix(descriptor)
        numbers = _ENUM_NUMBERS[descriptor] = {
            str(wire.name).removeprefix(prefix): int(wire.number) for wire in descriptor.values
        }
    number = numbers.get(value.name)
    if number is None:  # not on the wire: refused as before
        raise KeyError(_prefix(descriptor) + value.name)
    return number


def enum_member(number: int, enum_type: type[Enum], descriptor: EnumDescriptor) -> Any:
    """The member of ``enum_type`` that wire number ``number`` names, or None for 0 and for a
    number this release does not know."""
    wire = descriptor.values_by_number.get(number)
    if number == 0 or wire is None:
        return None
    return enum_type[wire.name.removeprefix(_prefix(descriptor))]


def _prefix(descriptor: EnumDescriptor) -> str:
    """``WAGER_KIND_`` for ``WagerKind``: its zero value's name without ``UNSPECIFIED``."""
    return str(descriptor.values_by_number[0].name).removesuffix("UNSPECIFIED")


_ENUM_NUMBERS: dict[EnumDescriptor, dict[str, int]] = {}
"""Per enum: each wire value's number by its name without the enum's prefix."""
_FALSY, _NONE, _ALWAYS = "falsy", "none", "always"
"""Which values of a field :func:`to_message` leaves unset: a scalar's or a repeated field's
falsy ones (0, "", False, no items), an enum's None (its 0), none of a field with presence."""
_ENCODERS: dict[type[Message], tuple[tuple[str, Convert | None, str], ...]] = {}
"""Per message type: each field's name, its encoder (None: the value as it is) and which of
its values are left unset."""
_DECODERS: dict[tuple[type[Any], Any], tuple[tuple[str, Convert], ...]] = {}


def _encoder(message_type: type[Message]) -> tuple[tuple[str, Convert | None, str], ...]:
    """Each message field's name, encoder and which values are left unset (built once per
    message type)."""
    plan = _ENCODERS.get(message_type)
    if plan is None:
        fields = message_type.DESCRIPTOR.fields
        plan = _ENCODERS[message_type] = tuple(
            (f.name, _encode_field(f), _unset(f)) for f in fields
        )
    return plan


def _unset(field: Any) -> str:
    if field.has_presence:
        return _ALWAYS
    if field.enum_type is not None and not _repeated(field):
        return _NONE
    return _FALSY


def _encode_field(field: Any) -> Convert | None:
    if field.message_type is not None:
        nested = GetMessageClass(field.message_type)
        if _repeated(field):
            return lambda values: [to_message(value, nested) for value in values]
        return lambda value: to_message(value, nested)
    if field.enum_type is not None:
        enum = field.enum_type
        if _repeated(field):
            return lambda values: [enum_number(value, enum) for value in values]
        return lambda value: enum_number(value, enum)
    if _repeated(field):
        return list
    return None


def _same(value: Any) -> Any:
    return value


def _decoder(record_type: type[Any], descriptor: Any) -> tuple[tuple[str, Convert], ...]:
    plan = _DECODERS.get((record_type, descriptor))
    if plan is None:
        hints = typing.get_type_hints(record_type)
        wire = descriptor.fields_by_name
        plan = _DECODERS[record_type, descriptor] = tuple(
            (field.name, _decode_field(hints[field.name], wire[field.name]))
            for field in dataclasses.fields(record_type)
            if field.init and field.name in wire
        )
    return plan


def _decode_field(hint: Any, field: Any) -> Convert:
    inner = _without_none(hint)
    if typing.get_origin(inner) is tuple:
        item = typing.get_args(inner)[0]
        if field.message_type is not None:
            return lambda values: tuple(from_message(value, item) for value in values)
        return tuple
    if field.message_type is not None:
        return lambda value: from_message(value, inner)
    if field.enum_type is not None:
        enum = field.enum_type
        return lambda number: enum_member(number, inner, enum)
    return _same


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return inner
    return hint


def _repeated(field: Any) -> bool:
    return bool(field.is_repeated)
