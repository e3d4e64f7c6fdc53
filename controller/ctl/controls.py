"""``jackpotctl`` meter and table controls: maintenance, meter updates, retirement and
two-person adjustments, table updates and retirement.

    jackpotctl link-groups maintenance enter casino-floor --reason "raise the reset"
    jackpotctl meters update cs-main --reset 15000 --reason "new Rules Submission, rev 4"
    jackpotctl meters retire cs-old --to cs-main --reason "table moved" --approval "PGCB 2024-118"
    jackpotctl tables update cs-1 --meter cs-main --reason "feeds the new meter"
    jackpotctl tables update cs-1 --paytable C --at next-reset --reason "after the jackpot"
    jackpotctl tables cancel-staged cs-1 --reason "withdrawn"
    jackpotctl tables retire cs-9 --reason "table removed from the floor"
    jackpotctl link-groups maintenance leave casino-floor --reason "changes done"
    jackpotctl meters adjust cs-main --amount -12.50 --reason "..." --reference "incident 77"
    jackpotctl meters approve-adjustment casino-floor:812 --note "checked the incident"

Amounts are dollars ("12.50", "-12.50" for an adjustment), rates percent.
"""

from __future__ import annotations

import argparse
from typing import Any

from controller.ctl import staged
from controller.ctl.remote import call, show, table_line
from jackpot.money import format_cents, parse_dollars_cents
from jackpot.v1 import jackpot_pb2 as pb

Subparsers = Any  # argparse's private _SubParsersAction


def add_link_group_commands(groups: Subparsers) -> None:
    """Add ``maintenance enter|leave`` to ``link-groups``."""
    maintenance = groups.add_parser(
        "maintenance",
        help="enter or leave maintenance: meters and tables change only then, and its tables "
        "refuse progressive wagers meanwhile",
    ).add_subparsers(dest="step", required=True)
    for step in ("enter", "leave"):
        command = maintenance.add_parser(step)
        command.add_argument("link_group_id")
        command.add_argument("--reason", required=True)
        command.set_defaults(handler=_maintenance, enter=step == "enter")


def add_meter_commands(meters: Subparsers) -> None:
    """Add ``update``, ``retire``, ``adjust``, ``approve-adjustment``, ``reject-adjustment`` and
    ``adjustments`` to ``meters``."""
    update = meters.add_parser(
        "update", help="change a meter's parameters (in maintenance; journaled with old and new)"
    )
    update.add_argument("meter_id")
    update.add_argument("--rate", metavar="PERCENT", help="rate of progression")
    update.add_argument("--reserve-rate", metavar="PERCENT")
    update.add_argument("--ceiling", metavar="DOLLARS", help="0: none; never below the amount")
    update.add_argument("--reset", metavar="DOLLARS")
    update.add_argument("--reason", required=True)
    update.add_argument(
        "--at",
        choices=sorted(staged.AT),
        default="now",
        help="now (in maintenance), or staged for the meter's next hit or next reset "
        "(docs/staged-changes.md)",
    )
    update.set_defaults(handler=_update_meter)
    retire = meters.add_parser(
        "retire",
        help="retire a meter: its amount above the reset and its reserve move to --to (in "
        "maintenance, once no table feeds it)",
    )
    retire.add_argument("meter_id")
    retire.add_argument("--to", required=True, metavar="METER", help="same game and link group")
    retire.add_argument("--reason", required=True)
    retire.add_argument("--approval", required=True, help="the approval's reference")
    retire.set_defaults(handler=_retire_meter)
    adjust = meters.add_parser(
        "adjust", help="request an adjustment; another operator approves it (approve-adjustment)"
    )
    adjust.add_argument("meter_id")
    adjust.add_argument("--amount", required=True, metavar="[-]DOLLARS", help="added to the meter")
    adjust.add_argument("--reason", required=True)
    adjust.add_argument("--reference", required=True, help="the incident or ticket it corrects")
    adjust.add_argument(
        "--request-id",
        default="",
        help="the request's idempotency key (default: derived from you and the request, so "
        "the same request again is the same adjustment, whatever became of it)",
    )
    adjust.set_defaults(handler=_adjust)
    for name, approve in (("approve-adjustment", True), ("reject-adjustment", False)):
        review = meters.add_parser(
            name,
            help="apply a requested adjustment (by another operator than its requester)"
            if approve
            else "refuse or withdraw a requested adjustment",
        )
        review.add_argument("adjustment_id")
        review.add_argument("--note", default="", required=not approve, help="a rejection's reason")
        review.set_defaults(handler=_review_adjustment, approve=approve)
    listing = meters.add_parser("adjustments", help="list adjustments")
    listing.add_argument("--link-group", default="")
    listing.add_argument("--status", default="", choices=["", "requested", "approved", "rejected"])
    listing.set_defaults(handler=_list_adjustments)


def add_table_commands(tables: Subparsers) -> None:
    """Add ``update`` and ``retire`` to ``tables``."""
    table_update = tables.add_parser(
        "update",
        help="change a table's progressive wager, meters or seats (in maintenance, with no "
        "open round; or, with --at, staged for a meter's next hit or reset)",
    )
    table_update.add_argument("table_id")
    table_update.add_argument("--paytable", help="the progressive wager's paytable")
    table_update.add_argument("--seats", type=int)
    table_update.add_argument(
        "--meter", action="append", metavar="METER", help="the meters it feeds (repeatable)"
    )
    table_update.add_argument("--wager-cents", type=int, help="the fixed progressive wager")
    table_update.add_argument("--reason", required=True)
    table_update.add_argument(
        "--at",
        choices=tuple(staged.AT),
        default="now",
        help="now (in maintenance), or staged for the next hit or reset of --at-meter, applied "
        "by the settlement that pays it (no maintenance; docs/staged-changes.md)",
    )
    table_update.add_argument(
        "--at-meter", metavar="METER", help="the meter whose hit applies it (default: the first)"
    )
    table_update.set_defaults(handler=_update_table)
    table_cancel = tables.add_parser(
        "cancel-staged", help="cancel the change staged for a table (tables update --at)"
    )
    table_cancel.add_argument("table_id")
    table_cancel.add_argument("--reason", required=True)
    table_cancel.add_argument(
        "--staged-seq", type=int, default=0, help="the staged change you saw (journal #)"
    )
    table_cancel.set_defaults(handler=_cancel_staged_table)
    table_retire = tables.add_parser(
        "retire", help="remove a table from its link group (in maintenance, no open round)"
    )
    table_retire.add_argument("table_id")
    table_retire.add_argument("--reason", required=True)
    table_retire.set_defaults(handler=_retire_table)


def _group_line(group: pb.LinkGroup) -> str:
    state = group.maintenance
    if state.active:
        return (
            f"link group {group.link_group_id} is in maintenance since journal #{state.since_seq} "
            f"({state.by}: {state.reason}); its tables refuse progressive wagers"
        )
    return f"link group {group.link_group_id} is in play (journal #{group.journal.seq})"


def _maintenance(args: argparse.Namespace) -> int:
    method = "EnterMaintenance" if args.enter else "LeaveMaintenance"
    request = pb.MaintenanceRequest(link_group_id=args.link_group_id, reason=args.reason)
    group = call(args, method, request)
    return show(args, group, _group_line(group))


def _update_meter(args: argparse.Namespace) -> int:
    request = pb.UpdateMeterRequest(
        meter_id=args.meter_id, reason=args.reason, at=staged.AT[args.at]
    )
    if args.rate is not None:
        request.rate_of_progression_percent = args.rate
    if args.reserve_rate is not None:
        request.reserve_rate_percent = args.reserve_rate
    if args.ceiling is not None:
        request.ceiling_cents = parse_dollars_cents(args.ceiling)
    if args.reset is not None:
        request.reset_cents = parse_dollars_cents(args.reset)
    meter = call(args, "UpdateMeter", request)
    ceiling = format_cents(meter.ceiling_cents) if meter.ceiling_cents else "none"
    text = (
        f"meter {meter.meter_id}: reset {format_cents(meter.reset_cents)}, rate "
        f"{meter.rate_of_progression_percent}%, reserve rate {meter.reserve_rate_percent}%, "
        f"ceiling {ceiling}; amount {format_cents(meter.amount_cents)}"
    ) + staged.meter_status(meter)
    return show(args, meter, text)


def _micro(microcents: int) -> str:
    return format_cents(microcents // 1_000_000)


def _retire_meter(args: argparse.Namespace) -> int:
    request = pb.RetireMeterRequest(
        meter_id=args.meter_id, to_meter_id=args.to, reason=args.reason, approval=args.approval
    )
    retired = call(args, "RetireMeter", request)
    text = (
        f"meter {retired.meter_id} retired (journal #{retired.retired_seq}): "
        f"{_micro(retired.transferred_microcents)} to {retired.to_meter_id}, reserve "
        f"{_micro(retired.reserve_transferred_microcents)} to its reserve, "
        f"{_micro(retired.operator_recovered_microcents)} back to the operator"
    )
    return show(args, retired, text)


def signed_dollars_cents(text: str) -> int:
    """ "-12.50" -> -1250, "+3" or "3" -> 300 (see :func:`parse_dollars_cents`)."""
    text = text.strip()
    sign = -1 if text.startswith("-") else 1
    return sign * parse_dollars_cents(text.removeprefix("-").removeprefix("+"))


def _adjustment_line(adjustment: pb.Adjustment) -> str:
    decided = f" by {adjustment.decided_by}" if adjustment.decided_by else ""
    note = f" ({adjustment.note})" if adjustment.note else ""
    return (
        f"{adjustment.adjustment_id}: {adjustment.status}{decided}{note}; meter "
        f"{adjustment.meter_id} {'+' if adjustment.amount_cents > 0 else ''}"
        f"{format_cents(adjustment.amount_cents)}, requested by {adjustment.requested_by}: "
        f"{adjustment.reason} [{adjustment.reference}]"
    )


def _adjust(args: argparse.Namespace) -> int:
    request = pb.RequestAdjustmentRequest(
        meter_id=args.meter_id,
        amount_cents=signed_dollars_cents(args.amount),
        reason=args.reason,
        reference=args.reference,
        request_id=args.request_id,
    )
    adjustment = call(args, "RequestAdjustment", request)
    if adjustment.status != "requested":
        # The same request was made before and decided: the answer is that adjustment.
        text = (
            f"{_adjustment_line(adjustment)}\nthis request was made before (request id "
            f"{adjustment.request_id}) and is {adjustment.status}; a new adjustment needs its "
            "own --request-id"
        )
    else:
        text = (
            f"{_adjustment_line(adjustment)}\nnothing moves until another operator approves "
            f"it: jackpotctl meters approve-adjustment {adjustment.adjustment_id}"
        )
    return show(args, adjustment, text)


def _review_adjustment(args: argparse.Namespace) -> int:
    method = "ApproveAdjustment" if args.approve else "RejectAdjustment"
    request = pb.ReviewAdjustmentRequest(adjustment_id=args.adjustment_id, note=args.note)
    adjustment = call(args, method, request)
    return show(args, adjustment, _adjustment_line(adjustment))


def _list_adjustments(args: argparse.Namespace) -> int:
    request = pb.ListAdjustmentsRequest(link_group_id=args.link_group, status=args.status)
    reply = call(args, "ListAdjustments", request)
    lines = [_adjustment_line(a) for a in reply.adjustments]
    return show(args, reply, "\n".join(lines) or "no adjustments")


def _update_table(args: argparse.Namespace) -> int:
    """The table as registered, with the options given changed (the progressive wager's
    paytable, meters and amount; the seats)."""
    reply = call(args, "ListTables", pb.ListTablesRequest())
    current = next((t for t in reply.tables if t.table_id == args.table_id), None)
    if current is None:
        raise ValueError(f"table {args.table_id} is not registered")
    table = pb.Table()
    table.CopyFrom(current)
    table.ClearField("staged_change")
    if args.seats is not None:
        table.seats = args.seats
    progressive = [w for w in table.wagers if w.kind == pb.WAGER_KIND_PROGRESSIVE]
    if (args.paytable or args.meter or args.wager_cents) and not progressive:
        raise ValueError(f"table {args.table_id} offers no progressive wager to change")
    for offer in progressive:
        if args.paytable:
            offer.paytable = args.paytable
            del offer.lines[:]
        if args.meter:
            offer.meter_ids[:] = args.meter
        if args.wager_cents:
            offer.min_cents = offer.max_cents = args.wager_cents
    request = pb.UpdateTableRequest(table=table, reason=args.reason, at=staged.AT[args.at])
    if args.at != "now":
        meter_ids = [m for offer in current.wagers for m in offer.meter_ids]
        request.at_meter_id = args.at_meter or (meter_ids[0] if meter_ids else "")
        updated = call(args, "UpdateTable", request)
        return show(args, updated, f"table change staged: {table_line(updated)}")
    updated = call(args, "UpdateTable", request)
    return show(args, updated, f"table updated: {table_line(updated)}")


def _cancel_staged_table(args: argparse.Namespace) -> int:
    request = pb.CancelStagedTableChangeRequest(
        table_id=args.table_id, reason=args.reason, staged_seq=args.staged_seq
    )
    table = call(args, "CancelStagedTableChange", request)
    return show(args, table, f"table {table.table_id}: no change staged")


def _retire_table(args: argparse.Namespace) -> int:
    request = pb.RetireTableRequest(table_id=args.table_id, reason=args.reason)
    retired = call(args, "RetireTable", request)
    return show(args, retired, f"table {retired.table_id} retired (journal #{retired.retired_seq})")
