"""``jackpotctl irregularities``: rounds held by a chip count that differed, and the seeded
irregularities tables reported.

    jackpotctl irregularities list [--status open] [--table cs-1] [--format table|csv|json]
    jackpotctl irregularities confirm cs-1 42 --note "recounted on camera: 3 chips"
    jackpotctl irregularities void cs-1 42 --note "a late bet was in the count"

A round whose dealer's chip count differs from the Progressive Payout Wagers accepted at
lockout (§ 639a.8(b)) is ``open``: the table cannot settle it until a supervisor confirms it
(it settles with the wagers accepted) or voids it (its wagers are returned). Both are
journaled with the supervisor's certificate identity and the note. Seeded irregularities
(misdeal, wrong number of cards, cards exposed, dealer's card exposed, shoe jam) are
``applied`` when reported; ``list`` shows them with their effect and section.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from controller.ctl.remote import call, print_records, show
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2 as pb

STATUSES = ("open", "confirmed", "voided", "applied")
FORMATS = ("table", "csv", "json")
FIELDS = tuple(field.name for field in pb.Irregularity.DESCRIPTOR.fields)
"""The columns of ``--format csv``: every field of the record, in the message's order."""
DECISIONS = {
    "confirm": pb.IRREGULARITY_DECISION_CONFIRM,
    "void": pb.IRREGULARITY_DECISION_VOID,
}


def add_commands(top: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``irregularities list|confirm|void`` to ``jackpotctl``."""
    commands = top.add_parser(
        "irregularities", help="irregularities: chip counts that differed, seeded ones"
    ).add_subparsers(dest="action", required=True)
    listing = commands.add_parser("list", help="recorded irregularities, filtered")
    listing.add_argument("--status", choices=STATUSES, help="only this status")
    listing.add_argument("--table", default="", metavar="TABLE_ID", help="only this table")
    listing.add_argument("--link-group", default="")
    listing.add_argument("--format", choices=FORMATS, default="table")
    listing.set_defaults(handler=_list)
    for decision, what in (
        ("confirm", "settle the held round with the wagers accepted at lockout"),
        ("void", "void the held round: its wagers are returned"),
    ):
        resolve = commands.add_parser(
            decision, help=f"{what} (as the supervisor this certificate names)"
        )
        resolve.add_argument("table_id")
        resolve.add_argument("round_id", type=int)
        resolve.add_argument("--note", required=True, help="why (journaled)")
        resolve.set_defaults(handler=_resolve, decision=decision)


def _list(args: argparse.Namespace) -> int:
    request = pb.ListIrregularitiesRequest(
        link_group_id=args.link_group, status=args.status or "", table_id=args.table
    )
    reply = call(args, "ListIrregularities", request)
    status = args.status + " " if args.status else ""
    return print_records(args, reply.irregularities, FIELDS, _table, f"no {status}irregularities")


def _what(record: pb.Irregularity) -> str:
    if record.kind == "chip_count":
        return f"{record.chips} chips for {record.accepted} wagers"
    return record.effect


def _table(records: Sequence[pb.Irregularity]) -> list[str]:
    """One line per irregularity under a header, columns aligned."""
    rows = [("TABLE", "ROUND", "KIND", "STATUS", "REPORTED (UTC)", "WHAT", "SECTION", "BY")]
    rows += [
        (
            r.table_id,
            str(r.round_id),
            r.kind,
            r.status,
            format_time(r.reported_at_ms).removesuffix(" UTC"),
            _what(r),
            r.section,
            r.resolved_by or "-",
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def irregularity_line(record: pb.Irregularity) -> str:
    """One line: the round, what was counted, and who resolved it how."""
    line = (
        f"table {record.table_id} round {record.round_id}: {record.kind} ({_what(record)}, "
        f"{record.section}) {record.status}"
    )
    if record.resolved_by:
        line += f" by {record.resolved_by} at {format_time(record.resolved_at_ms)}"
        line += f': "{record.note}"' if record.note else ""
    return line


def _resolve(args: argparse.Namespace) -> int:
    request = pb.ResolveIrregularityRequest(
        table_id=args.table_id,
        round_id=args.round_id,
        decision=DECISIONS[args.decision],
        note=args.note,
    )
    reply = call(args, "ResolveIrregularity", request)
    return show(args, reply, irregularity_line(reply))
