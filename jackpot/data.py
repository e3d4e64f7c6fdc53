"""Records from plain data and back: one decoder built from a record's own fields.

A record is a frozen dataclass of the core or the controller whose fields are ints, strings,
booleans, string enums (or None), nested records, or tuples of records. Plain data is what JSON
carries: the store's Lua scripts answer with objects whose keys are the record's field names
and whose amounts are decimal strings (Lua would print a large double with an exponent), so
an int field is read with ``int()``; ``cjson`` encodes an empty array as ``{}``, read as no
items. A key that is missing takes the field's default; a field without a default must be
there. Adding a field to a record is one edit: the decoder follows.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar

R = TypeVar("R")

Decoder = Callable[[Any], Any]


def record_from_data(record_type: type[R], data: Mapping[str, Any]) -> R:
    """The ``record_type`` that ``data`` (a JSON object) describes."""
    kwargs = {}
    for name, decode, required in _plan(record_type):
        if name in data:
            kwargs[name] = decode(data[name])
        elif required:
            raise ValueError(f"{record_type.__name__}: {name} is missing from {sorted(data)}")
    return record_type(**kwargs)


def items(value: Any) -> list[Any]:
    """A JSON array's items (``cjson``'s ``{}`` for an empty array, or null: none)."""
    return list(value) if isinstance(value, list) else []


_PLANS: dict[type[Any], tuple[tuple[str, Decoder, bool], ...]] = {}


def _plan(record_type: type[Any]) -> tuple[tuple[str, Decoder, bool], ...]:
    """Each init field's name, decoder and whether it is required (built once per type)."""
    plan = _PLANS.get(record_type)
    if plan is None:
        hints = typing.get_type_hints(record_type)
        plan = _PLANS[record_type] = tuple(
            (
                field.name,
                _decoder(hints[field.name]),
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING,
            )
            for field in dataclasses.fields(record_type)
            if field.init
        )
    return plan


def _decoder(hint: Any) -> Decoder:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in args if arg is not type(None)]
        decode = _decoder(inner)
        return lambda value: None if value in (None, "") else decode(value)
    if origin is tuple:
        decode = _decoder(args[0])
        return lambda value: (
            tuple([decode(item) for item in value]) if isinstance(value, list) else ()
        )
    if origin in (dict, Mapping):
        return lambda value: dict(value) if isinstance(value, Mapping) else {}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        record_type: type[Any] = hint
        return lambda value: record_from_data(record_type, value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return hint
    if hint is int:
        return int
    if hint is bool:
        return bool
    if hint is str:
        return str
    raise TypeError(f"no decoder for a field of type {hint!r}")
