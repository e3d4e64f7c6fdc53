"""How ``jackpotctl`` calls the controller's AdminService and prints its answers."""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from jackpot import tls
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc

M = TypeVar("M", bound=Message)


def call(args: argparse.Namespace, method: str, request: Message) -> Any:
    """Call AdminService ``method`` over mutual TLS (``--controller``, ``--ca``/``--cert``/
    ``--key``); a refusal raises :class:`grpc.RpcError`."""
    with tls.channel(args.controller, tls.from_arguments(args)) as channel:
        stub = pb_grpc.AdminServiceStub(channel)
        return getattr(stub, method)(request, timeout=10)


def message_data(message: Message) -> dict[str, Any]:
    """A message as JSON data, every field by its proto name (64-bit integers as strings),
    every enum value by its lowercase name as records, exports and the floor view spell it
    (``WAGER_KIND_FIVE_CARD_BONUS`` is ``five_card_bonus``; the .proto lists them)."""
    data: dict[str, Any] = MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    _lowercase_enums(message.DESCRIPTOR, data)
    return data


def _lowercase_enums(descriptor: Any, data: dict[str, Any]) -> None:
    for field in descriptor.fields:
        value = data.get(field.name)
        if value is None:
            continue
        items = value if isinstance(value, list) else [value]
        if field.enum_type is not None:
            prefix = _enum_prefix(field.enum_type.name)
            lowered = [v.removeprefix(prefix).lower() if isinstance(v, str) else v for v in items]
            data[field.name] = lowered if isinstance(value, list) else lowered[0]
        elif field.message_type is not None and not field.message_type.GetOptions().map_entry:
            for item in items:
                if isinstance(item, dict):
                    _lowercase_enums(field.message_type, item)


def _enum_prefix(enum_name: str) -> str:
    """``WagerKind`` -> ``WAGER_KIND_``: the prefix of its values' names."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", enum_name).upper() + "_"


def print_records(
    args: argparse.Namespace,
    records: Sequence[M],
    fields: Sequence[str],
    table: Callable[[Sequence[M]], Iterable[str]],
    empty: str,
) -> int:
    """Print listed records as ``--format json`` (or ``--json``), ``csv`` (a header of
    ``fields``, then one row a record) or a table (``table``'s lines; ``empty`` when none)."""
    if args.json or args.format == "json":
        print(json.dumps([message_data(record) for record in records], indent=2))
    elif args.format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(fields)
        for record in records:
            writer.writerow(getattr(record, name) for name in fields)
    elif not records:
        print(empty)
    else:
        for line in table(records):
            print(line)
    return 0


def show(args: argparse.Namespace, message: Message, text: str) -> int:
    """Print ``message`` as JSON with ``--json``, else ``text``; exit status 0."""
    print(json.dumps(message_data(message), indent=2) if args.json else text)
    return 0


def table_line(table: pb.Table) -> str:
    """ "cs-1: caribbean-stud, 7 seats (floor); progressive B $1.00 -> cs-main; bonus A ..." """
    wagers = []
    for offer in table.wagers:
        amount = (
            format_cents(offer.min_cents)
            if offer.min_cents == offer.max_cents
            else f"{format_cents(offer.min_cents)}-{format_cents(offer.max_cents)}"
        )
        meters = f" -> {', '.join(offer.meter_ids)}" if offer.meter_ids else ""
        envy = " +envy" if offer.envy_lines else ""
        name = pb.WagerKind.Name(offer.kind).removeprefix("WAGER_KIND_").lower()
        wagers.append(f"{name} {offer.paytable} {amount}{meters}{envy}")
    limit = (
        f"; payout limit {format_cents(table.payout_limit_cents)} per hand"
        if table.payout_limit_cents
        else ""
    )
    staged = ""
    if table.HasField("staged_change"):  # docs/staged-changes.md
        change = table.staged_change
        when = "reset" if change.at == pb.METER_CHANGE_AT_NEXT_RESET else "hit"
        new = pb.Table(
            table_id=table.table_id,
            game=table.game,
            seats=change.seats,
            link_group_id=table.link_group_id,
            wagers=change.wagers,
            payout_limit_cents=change.payout_limit_cents,
        )
        staged = (
            f"; staged for the next {when} of {change.meter_id} (journal #{change.staged_seq}, "
            f"{change.by}: {change.reason}): {table_line(new).partition(': ')[2]}"
        )
    return (
        f"{table.table_id}: {table.game}, {table.seats} seats ({table.link_group_id}); "
        + "; ".join(wagers)
        + limit
        + staged
    )
