"""Records from plain data and back: one decoder built from a record's own fields.

A record is a frozen dataclass of the core or the controller whose fields are ints, strings,
booleans, string enums (or None), nested records, or tuples of records. Plain data is what JSON
carries: the store's Lua scripts answer with objects whose keys are the record's field names
and whose amounts are decimal strings (Lua would print a large double with an exponent), so
an int field is read with ``int()``; ``cjson`` encodes an empty array as ``{}``, read as no
items. A key that is missing takes the field's default; a field without a default must be
there. Adding a field to a record is one edit: the decoder follows.

The decoder of a record type is a function compiled for it once and kept
(:mod:`jackpot.codegen`); each module that decodes records names their types to
:func:`compile_decoders` when it is imported, so none is compiled on a first request. Its
source names each field, so decoding a record is straight-line code, not a loop over a plan
with a closure per field. ``SeatResult``'s begins::

    def function(data):
        if 'seat' in data:
            value = data['seat']
            f0 = _int(value)
        else:
            raise _missing(_record_type, 'seat', data)
        ...
        if 'kind' in data:
            value = data['kind']
            f3 = (None if value in _NONE_OR_EMPTY else (_v3[value] if _type(value) is _str
                  and value in _v3 else _v4(value)))
        else:
            f3 = _v5
        ...
        return _record_type(f0, f1, f2, f3, ...)

where ``_v3`` is ``WagerKind``'s members by value, ``_v4`` ``WagerKind`` and ``_v5`` the
field's default, None: globals of the function. A nested record is decoded by its own compiled
decoder, looked up when first used.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar

from jackpot.codegen import FunctionSource, call, complete, identifier

R = TypeVar("R")

Decoder = Callable[[Any], Any]
"""A compiled decoder: a JSON object in, its record out."""


def record_from_data(record_type: type[R], data: Mapping[str, Any]) -> R:
    """The ``record_type`` that ``data`` (a JSON object) describes."""
    record: R = _decoder(record_type)(data)
    return record


def compile_decoders(*record_types: type[Any]) -> None:
    """Compile now the decoder of each of ``record_types`` and of every record they hold (a
    module that decodes them calls this when imported: nothing is compiled on a first call)."""
    for record_type in record_types:
        complete(_decoder(record_type))


def items(value: Any) -> list[Any]:
    """A JSON array's items (``cjson``'s ``{}`` for an empty array, or null: none)."""
    return list(value) if isinstance(value, list) else []


_DECODERS: dict[type[Any], Decoder] = {}
"""Per record type: its compiled decoder (built by :func:`compile_decoders` or on first use)."""
_NONE_OR_EMPTY = (None, "")
"""What an Optional field reads as None."""


def _decoder(record_type: type[Any]) -> Decoder:
    """``record_type``'s decoder (compiled once)."""
    decode = _DECODERS.get(record_type)
    if decode is None:
        decode = _DECODERS[record_type] = _compile(record_type)
    return decode


def _missing(record_type: type[Any], name: str, data: Mapping[str, Any]) -> ValueError:
    """The refusal of ``data`` without the required field ``name``."""
    return ValueError(f"{record_type.__name__}: {name} is missing from {sorted(data)}")


def _compile(record_type: type[Any]) -> Decoder:
    """``record_type``'s decoder: each init field read from its key, or its default."""
    hints = typing.get_type_hints(record_type)
    source = FunctionSource(
        "data",
        f"data decoder of {record_type.__module__}.{record_type.__qualname__}",
        _record_type=record_type,
        _missing=_missing,
        _NONE_OR_EMPTY=_NONE_OR_EMPTY,
        _Mapping=Mapping,
    )
    arguments = []
    for index, field in enumerate(f for f in dataclasses.fields(record_type) if f.init):
        name = identifier(field.name)
        local = f"f{index}"
        source.lines += [
            f"    if {name!r} in data:",
            f"        value = data[{name!r}]",
            f"        {local} = {_expression(hints[name], 'value', source)}",
            "    else:",
        ]
        if field.default is not dataclasses.MISSING:
            source.lines.append(f"        {local} = {source.bind(field.default)}")
        elif field.default_factory is not dataclasses.MISSING:
            source.lines.append(f"        {local} = {source.bind(field.default_factory)}()")
        else:
            source.lines.append(f"        raise _missing(_record_type, {name!r}, data)")
        arguments.append((name, local))
    source.lines.append(f"    return {call('_record_type', record_type, arguments)}")
    return source.compile()


def _expression(hint: Any, value: str, source: FunctionSource) -> str:
    """The expression decoding the local ``value`` for a field of type ``hint``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in args if arg is not type(None)]
        decoded = _expression(inner, value, source)
        return f"(None if {value} in _NONE_OR_EMPTY else {decoded})"
    if origin is tuple:
        item = _expression(args[0], "item", source)
        return f"(_tuple([{item} for item in {value}]) if _isinstance({value}, _list) else ())"
    if origin in (dict, Mapping):
        return f"(_dict({value}) if _isinstance({value}, _Mapping) else {{}})"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return f"{source.later(functools.partial(_decoder, hint))}({value})"
    if isinstance(hint, type) and issubclass(hint, Enum):
        # A string is looked up among the members' values (what calling the enum does first,
        # ten times faster); anything else, and a string that is no member's value (refused,
        # or found by the enum's _missing_), goes through calling the enum itself.
        members = source.bind({m.value: m for m in hint if isinstance(m.value, str)})
        called = f"{source.bind(hint)}({value})"
        found = f"_type({value}) is _str and {value} in {members}"
        return f"({members}[{value}] if {found} else {called})"
    if hint is int or hint is bool or hint is str:
        return f"_{hint.__name__}({value})"
    raise TypeError(f"no decoder for a field of type {hint!r}")
