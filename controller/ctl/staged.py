"""``jackpotctl`` staged meter changes and winding a meter down (docs/staged-changes.md).

    jackpotctl meters update cs-main --reset 15000 --at next-reset --reason "Gazette 3.15.3"
    jackpotctl meters cancel-staged cs-main --reason "withdrawn"
    jackpotctl meters wind-down cs-old --reason "the link ends"   (in maintenance)
    jackpotctl meters retire cs-old --to cs-main --reason "..." --approval "PGCB 2024-118"

``meters list`` shows a staged change and a meter winding down (:func:`meter_status`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from controller.ctl.remote import call, show
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb

Subparsers = Any  # argparse's private _SubParsersAction

AT = {
    "now": pb.METER_CHANGE_AT_NOW,
    "next-hit": pb.METER_CHANGE_AT_NEXT_HIT,
    "next-reset": pb.METER_CHANGE_AT_NEXT_RESET,
}
"""``meters update --at``: when the change applies."""

_AT_TEXT = {pb.METER_CHANGE_AT_NEXT_HIT: "next hit", pb.METER_CHANGE_AT_NEXT_RESET: "next reset"}


def add_commands(meters: Subparsers) -> None:
    """Add ``cancel-staged`` and ``wind-down`` to ``meters``."""
    cancel = meters.add_parser(
        "cancel-staged", help="cancel the change staged for a meter's next hit or reset"
    )
    cancel.add_argument("meter_id")
    cancel.add_argument("--reason", required=True)
    cancel.add_argument(
        "--staged-seq", type=int, default=0, help="the staged change you saw (journal #)"
    )
    cancel.set_defaults(handler=_cancel)
    wind = meters.add_parser(
        "wind-down",
        help="end a meter: no contributions from now on; it stays until won, or is retired "
        "into another meter (in maintenance)",
    )
    wind.add_argument("meter_id")
    wind.add_argument("--reason", required=True)
    wind.set_defaults(handler=_wind_down)


def meter_status(meter: pb.Meter) -> str:
    """What ``meters list`` adds to a meter's line: its staged change, its wind-down."""
    text = ""
    if meter.HasField("staged_change"):
        staged = meter.staged_change
        ceiling = format_cents(staged.ceiling_cents) if staged.ceiling_cents else "none"
        text += (
            f"; staged for the {_AT_TEXT.get(staged.at, 'next hit')} (journal "
            f"#{staged.staged_seq}, {staged.by}: {staged.reason}): reset "
            f"{format_cents(staged.reset_cents)}, rate {staged.rate_of_progression_percent}%, "
            f"reserve rate {staged.reserve_rate_percent}%, ceiling {ceiling}"
        )
    if meter.wound_down_seq:
        text += (
            f"; winding down since journal #{meter.wound_down_seq}: no contributions, stays "
            "until won or retired"
        )
    return text


def staged_table_changes(tables: Iterable[pb.Table]) -> dict[str, str]:
    """What ``meters list`` adds to a meter's line for the table changes its next hit or reset
    applies (docs/staged-changes.md): per meter id, e.g. "; table cs-1's change waits for
    its next reset (journal #901)"."""
    found: dict[str, str] = {}
    for table in tables:
        if table.HasField("staged_change"):
            change = table.staged_change
            found[change.meter_id] = found.get(change.meter_id, "") + (
                f"; table {table.table_id}'s change waits for its "
                f"{_AT_TEXT.get(change.at, 'next hit')} (journal #{change.staged_seq})"
            )
    return found


def _cancel(args: argparse.Namespace) -> int:
    request = pb.CancelStagedMeterChangeRequest(
        meter_id=args.meter_id, reason=args.reason, staged_seq=args.staged_seq
    )
    meter = call(args, "CancelStagedMeterChange", request)
    return show(args, meter, f"meter {meter.meter_id}: no change staged")


def _wind_down(args: argparse.Namespace) -> int:
    request = pb.WindDownMeterRequest(meter_id=args.meter_id, reason=args.reason)
    meter = call(args, "WindDownMeter", request)
    text = (
        f"meter {meter.meter_id} winds down (journal #{meter.wound_down_seq}): no "
        f"contributions from now on; it stays at {format_cents(meter.amount_cents)} until won, "
        f"or retire it into another meter: jackpotctl meters retire {meter.meter_id} --to METER "
        "--reason ... --approval ..."
    )
    return show(args, meter, text)
