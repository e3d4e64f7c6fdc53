"""``jackpotctl meters``: create and list progressive meters (their updates, retirement and
adjustments: :mod:`controller.ctl.controls`; staged changes: :mod:`controller.ctl.staged`).

    jackpotctl --controller ... meters create cs-main --link-group casino-floor \\
        --game caribbean-stud --reset 10000 --rate 15 --reserve-rate 5
    jackpotctl --controller ... meters list --link-group casino-floor
"""

from __future__ import annotations

import argparse

from controller.ctl import controls, staged
from controller.ctl.remote import call, show
from jackpot.money import format_cents, parse_dollars_cents
from jackpot.v1 import jackpot_pb2 as pb


def add_commands(top: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``meters create|list``, then the controls' and the staged changes' commands."""
    meters = top.add_parser("meters", help="progressive meters").add_subparsers(
        dest="action", required=True
    )
    create_meter = meters.add_parser("create")
    create_meter.add_argument("meter_id")
    create_meter.add_argument("--link-group", required=True)
    create_meter.add_argument("--game", required=True)
    create_meter.add_argument(
        "--reset", required=True, metavar="DOLLARS", help="initial and reset amount"
    )
    create_meter.add_argument(
        "--rate",
        required=True,
        metavar="PERCENT",
        help="rate of progression, percent of each wager",
    )
    create_meter.add_argument("--reserve-rate", default="0", metavar="PERCENT")
    create_meter.add_argument("--ceiling", default="0", metavar="DOLLARS", help="0: none")
    create_meter.add_argument(
        "--must-hit-by",
        default="",
        metavar="DOLLARS",
        help="a must-hit-by mystery meter hitting at a secret amount up to this (docs/mystery.md)",
    )
    create_meter.set_defaults(handler=_create_meter)
    list_meters = meters.add_parser("list")
    list_meters.add_argument("--link-group", default="")
    list_meters.set_defaults(handler=_list_meters)

    controls.add_meter_commands(meters)
    staged.add_commands(meters)


def _meter_line(meter: pb.Meter) -> str:
    mystery = (
        f", must hit by {format_cents(meter.must_hit_by_cents)} (cycle {meter.mystery_cycle}, "
        f"commitment {meter.mystery_commitment})"
        if meter.kind == pb.METER_KIND_MUST_HIT_BY
        else ""
    )
    return (
        f"{meter.meter_id} ({meter.link_group_id}, {meter.game}{mystery}): "
        f"{format_cents(meter.amount_cents)}, reserve {format_cents(meter.reserve_cents)}, "
        f"reset {format_cents(meter.reset_cents)}, rate {meter.rate_of_progression_percent}%"
        f", reserve rate {meter.reserve_rate_percent}%, {meter.wagers_total} wagers, "
        f"{meter.hits_total} hits, {meter.pending_jackpots} pending"
    ) + staged.meter_status(meter)


def _create_meter(args: argparse.Namespace) -> int:
    request = pb.CreateMeterRequest(
        meter_id=args.meter_id,
        link_group_id=args.link_group,
        game=args.game,
        reset_cents=parse_dollars_cents(args.reset),
        rate_of_progression_percent=args.rate,
        reserve_rate_percent=args.reserve_rate,
        ceiling_cents=parse_dollars_cents(args.ceiling),
    )
    if args.must_hit_by:
        request.kind = pb.METER_KIND_MUST_HIT_BY
        request.must_hit_by_cents = parse_dollars_cents(args.must_hit_by)
    meter = call(args, "CreateMeter", request)
    return show(args, meter, _meter_line(meter))


def _list_meters(args: argparse.Namespace) -> int:
    reply = call(args, "ListMeters", pb.ListMetersRequest(link_group_id=args.link_group))
    tables = call(args, "ListTables", pb.ListTablesRequest(link_group_id=args.link_group))
    waiting = staged.staged_table_changes(tables.tables)  # what each meter's hit changes at a table
    lines = [_meter_line(m) + waiting.get(m.meter_id, "") for m in reply.meters]
    return show(args, reply, "\n".join(lines) or "no meters")
