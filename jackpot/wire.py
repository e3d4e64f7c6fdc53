"""Records to protobuf messages and back: the one mapping, built from the message's fields.

A record's field carries the name of the message field it fills (``SeatResult.kind`` is
``SeatResult.kind`` on the wire); a record may hold more than the wire (``replayed``), never
less: every field of the message is read from the record. A string enum maps to the protobuf enum
value with the same name after the enum's prefix (``WagerKind.FIVE_CARD_BONUS`` is
``WAGER_KIND_FIVE_CARD_BONUS``); None is the enum's ``..._UNSPECIFIED`` 0. The controller
encodes with :func:`to_message`, the table agent decodes with :func:`from_message`, so adding
a field to a result is one edit in the record and one in the .proto.

Each direction is a function compiled once per message type (and record type) from the
message's descriptor and the record's fields (:mod:`jackpot.codegen`), straight-line code
naming each field, compiled when the module that uses it is imported
(:func:`compile_encoders`, :func:`compile_decoders`), never on a first request. An encoder
gives the message's fields as the keyword arguments that make it, a nested message's fields
as a dict of the same kind, so that :func:`to_message` makes a message and everything in it
with one call. ``SeatResult``'s encoder begins::

    def function(record):
        kwargs = {}
        value = record.seat
        if value:
            kwargs['seat'] = value
        ...
        value = record.outcome
        if value is not None:
            kwargs['outcome'] = _enum_number(value, _v1)
        ...
        return kwargs

(``_v1``, a global of the function, is ``SeatOutcome``'s descriptor) and ``SettleResponse``'s
decoder into ``SettleResult`` is one call::

    def function(message):
        return _record_type(message.table_id, message.round_id,
            _tuple([_v1(item) for item in message.results]), ...)

where ``_v1`` is the decoder of ``SeatResult`` messages into ``SeatResult``, compiled in turn.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from enum import Enum
from typing import Any, TypeVar

from google.protobuf.descriptor import EnumDescriptor
from google.protobuf.message import Message

from jackpot.codegen import Function, FunctionSource, attribute, call, complete, identifier

R = TypeVar("R")
M = TypeVar("M", bound=Message)


def to_message(record: object, message_type: type[M]) -> M:
    """The ``message_type`` message holding ``record``'s fields of the same names. A field
    without presence whose value is its default (0, "", False, None, no items) is left unset,
    which is the same message (and the same bytes) as setting it, built faster."""
    return message_type(**_encoder(message_type.DESCRIPTOR)(record))


def from_message(message: Message, record_type: type[R]) -> R:
    """The ``record_type`` record of ``message``'s fields of the same names."""
    record: R = _decoder(record_type, message.DESCRIPTOR)(message)
    return record


def compile_encoders(*message_types: type[Message]) -> None:
    """Compile now the encoder of records into each of ``message_types`` and of every
    message they hold (a module that encodes them calls this when imported)."""
    for message_type in message_types:
        complete(_encoder(message_type.DESCRIPTOR))


def compile_decoders(*pairs: tuple[type[Message], type[Any]]) -> None:
    """Compile now the decoder of each ``(message type, record type)`` of ``pairs`` and of
    every message they hold (a module that decodes them calls this when imported)."""
    for message_type, record_type in pairs:
        complete(_decoder(record_type, message_type.DESCRIPTOR))


def enum_number(value: Enum | None, descriptor: EnumDescriptor) -> int:
    """The wire number of ``value`` (0, ``..._UNSPECIFIED``, for None)."""
    if value is None:
        return 0
    numbers = _ENUM_NUMBERS.get(descriptor)
    if numbers is None:
        numbers = _enum_numbers(descriptor)
    number = numbers.get(value._name_)  # the member's own attribute: ``name`` is a property
    if number is None:  # not on the wire: refused as before
        raise KeyError(_prefix(descriptor) + value._name_)
    return number


def _enum_numbers(descriptor: EnumDescriptor) -> dict[str, int]:
    """``descriptor``'s entry of :data:`_ENUM_NUMBERS` (made once: by the encoders that use
    it when they are compiled)."""
    numbers = _ENUM_NUMBERS.get(descriptor)
    if numbers is None:
        prefix = _prefix(descriptor)
        numbers = _ENUM_NUMBERS[descriptor] = {
            str(wire.name).removeprefix(prefix): int(wire.number) for wire in descriptor.values
        }
    return numbers


def enum_member(number: int, enum_type: type[Enum], descriptor: EnumDescriptor) -> Any:
    """The member of ``enum_type`` that wire number ``number`` names, or None for 0 and for a
    number this release does not know."""
    members = _MEMBERS.get((enum_type, descriptor))
    if members is None:
        prefix = _prefix(descriptor)
        names = enum_type.__members__
        members = _MEMBERS[enum_type, descriptor] = {
            int(wire.number): names[name]
            for wire in descriptor.values
            if wire.number and (name := str(wire.name).removeprefix(prefix)) in names
        }
    member = members.get(number)
    if member is not None:
        return member
    wire = descriptor.values_by_number.get(number)
    if number == 0 or wire is None:
        return None
    return enum_type[wire.name.removeprefix(_prefix(descriptor))]


def _prefix(descriptor: EnumDescriptor) -> str:
    """``WAGER_KIND_`` for ``WagerKind``: its zero value's name without ``UNSPECIFIED``."""
    return str(descriptor.values_by_number[0].name).removesuffix("UNSPECIFIED")


_MEMBERS: dict[tuple[type[Enum], EnumDescriptor], dict[int, Any]] = {}
"""Per enum and its wire descriptor: the member of each wire number that names one (made at
the first call; any other number takes the lookup by name, which refuses a name the enum
lacks as before)."""
_ENUM_NUMBERS: dict[EnumDescriptor, dict[str, int]] = {}
"""Per enum: each wire value's number by its name without the enum's prefix."""
_ENCODERS: dict[Any, Function] = {}
"""Per message descriptor: its compiled encoder, a record in, the message's fields out (the
keyword arguments that make the message; a nested message's fields are given as such a
dict too, so a message and all it holds is made by one call)."""
_DECODERS: dict[tuple[type[Any], Any], Function] = {}
"""Per record type and message descriptor: the compiled decoder (a message in, the record
out)."""


def _encoder(descriptor: Any) -> Function:
    """The encoder of records into ``descriptor``'s messages (compiled once)."""
    encode = _ENCODERS.get(descriptor)
    if encode is None:
        encode = _ENCODERS[descriptor] = _compile_encoder(descriptor)
    return encode


def _compile_encoder(descriptor: Any) -> Function:
    """The encoder: each field of the message read from the record's attribute of the same
    name, converted, and kept unless it is left unset (see :func:`to_message`)."""
    source = FunctionSource(
        "record", f"wire encoder of {descriptor.full_name}", _enum_number=enum_number
    )
    source.lines.append("    kwargs = {}")
    for field in descriptor.fields:
        source.lines.append(f"    value = {attribute('record', field.name)}")
        keep = f"kwargs[{field.name!r}] = {_encoded(field, source)}"
        if field.has_presence:  # always set: its absence means something
            source.lines.append(f"    {keep}")
        else:
            kept = "value is not None" if _single_enum(field) else "value"
            source.lines += [f"    if {kept}:", f"        {keep}"]
    source.lines.append("    return kwargs")
    return source.compile()


def _single_enum(field: Any) -> bool:
    """True for an enum field that is not repeated: its None (the 0) is left unset."""
    return field.enum_type is not None and not _repeated(field)


def _encoded(field: Any, source: FunctionSource) -> str:
    """The expression encoding the local ``value`` for the message field ``field``."""
    if field.message_type is not None:
        encode = source.later(functools.partial(_encoder, field.message_type))
        return f"[{encode}(item) for item in value]" if _repeated(field) else f"{encode}(value)"
    if field.enum_type is not None:
        _enum_numbers(field.enum_type)
        enum = source.bind(field.enum_type)
        if _repeated(field):
            return f"[_enum_number(item, {enum}) for item in value]"
        return f"_enum_number(value, {enum})"
    return "_list(value)" if _repeated(field) else "value"


def _decoder(record_type: type[Any], descriptor: Any) -> Function:
    """The decoder of ``descriptor``'s messages into ``record_type`` (compiled once)."""
    decode = _DECODERS.get((record_type, descriptor))
    if decode is None:
        decode = _DECODERS[record_type, descriptor] = _compile_decoder(record_type, descriptor)
    return decode


def _compile_decoder(record_type: type[Any], descriptor: Any) -> Function:
    """The decoder: each init field of the record that the message has, read from it."""
    hints = typing.get_type_hints(record_type)
    wire = descriptor.fields_by_name
    source = FunctionSource(
        "message",
        f"wire decoder of {descriptor.full_name} into "
        f"{record_type.__module__}.{record_type.__qualname__}",
        _record_type=record_type,
        _enum_member=enum_member,
    )
    arguments = [
        (field.name, _decoded(hints[field.name], wire[field.name], source))
        for field in dataclasses.fields(record_type)
        if field.init and field.name in wire
    ]
    source.lines.append(f"    return {call('_record_type', record_type, arguments)}")
    return source.compile()


def _decoded(hint: Any, field: Any, source: FunctionSource) -> str:
    """The expression reading the message field ``field`` for a record field of type
    ``hint``."""
    value = attribute("message", identifier(field.name))
    inner = _without_none(hint)
    if typing.get_origin(inner) is tuple:
        item = typing.get_args(inner)[0]
        if field.message_type is not None:
            decode = source.later(functools.partial(_decoder, item, field.message_type))
            return f"_tuple([{decode}(item) for item in {value}])"
        return f"_tuple({value})"
    if field.message_type is not None:
        decode = source.later(functools.partial(_decoder, inner, field.message_type))
        return f"{decode}({value})"
    if field.enum_type is not None:
        members = _members(inner, field.enum_type)
        if members is not None:
            return f"{source.bind(members.get)}({value})"
        return f"_enum_member({value}, {source.bind(inner)}, {source.bind(field.enum_type)})"
    return value


def _members(enum_type: type[Enum], descriptor: Any) -> dict[int, Enum] | None:
    """What :func:`enum_member` gives for each wire number but 0 (None, as for a number not
    here), when ``enum_type`` has a member for every wire value; else None."""
    prefix = _prefix(descriptor)
    members = {}
    for number, wire in descriptor.values_by_number.items():
        name = wire.name.removeprefix(prefix)
        if number != 0:
            if name not in enum_type.__members__:
                return None  # enum_member refuses it: left to enum_member
            members[number] = enum_type[name]
    return members


def _without_none(hint: Any) -> Any:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return inner
    return hint


def _repeated(field: Any) -> bool:
    return bool(field.is_repeated)
