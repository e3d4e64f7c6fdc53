"""``jackpotctl rounds``: corrections of a settled round (docs/corrections.md).

    jackpotctl rounds correct cs-1 42 --seat 3="3C 5C 8C JC KC" --seat 5="5D 6C 9C KD AH" \\
        --dealer "2D 3H 4S 7C 9S" --reason "KC keyed as JD"
    jackpotctl rounds correct cs-1 42 ... --wager 3:progressive:1 --wager 6:progressive:1 \\
        --reason "the sensor missed seat 6"
    jackpotctl rounds corrections [--status requested] [--table cs-1] [--format table|json]
    jackpotctl rounds approve-correction floor:812 --note "seen on camera"
    jackpotctl rounds reject-correction floor:812 --note "the cards were right"

A supervisor requests (the cards of every seat, the dealer's and community cards as they
should have been; the wagers too when they were wrong, else those accepted at lockout);
another supervisor or an operator approves (applied at once, in one journaled step) or
rejects. The answer is the new slip: per seat what to pay or recover. Amounts are dollars.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from controller.ctl.remote import call, message_data, show
from jackpot.errors import InvalidArgument
from jackpot.money import format_cents, parse_dollars_cents
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2 as pb

STATUSES = ("requested", "approved", "rejected")


def add_commands(top: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``rounds correct|corrections|approve-correction|reject-correction``."""
    rounds = top.add_parser(
        "rounds", help="corrections of a settled round (a second person approves)"
    ).add_subparsers(dest="action", required=True)
    correct = rounds.add_parser(
        "correct",
        help="request a correction of a settled round: the cards (and wagers) as they should "
        "have been",
    )
    correct.add_argument("table_id")
    correct.add_argument("round_id", type=int)
    correct.add_argument(
        "--seat",
        action="append",
        default=[],
        metavar='N="CARDS"',
        help="a seat's cards as they should have been (repeatable; every reported seat)",
    )
    correct.add_argument(
        "--folded", action="append", type=int, default=[], metavar="N", help="a folded seat"
    )
    correct.add_argument("--dealer", default="", metavar='"CARDS"')
    correct.add_argument("--community", default="", metavar='"CARDS"')
    correct.add_argument(
        "--wager",
        action="append",
        default=[],
        metavar="SEAT:KIND:DOLLARS[:dealer][:envy]",
        help="every wager as it should have been accepted (repeatable; default: the wagers "
        "accepted at lockout)",
    )
    correct.add_argument("--reason", required=True, help="why (journaled; at most 200 chars)")
    correct.add_argument("--request-id", default="", help="the request's idempotency key")
    correct.set_defaults(handler=_correct)
    listing = rounds.add_parser("corrections", help="list corrections")
    listing.add_argument("--status", choices=STATUSES)
    listing.add_argument("--table", default="", metavar="TABLE_ID")
    listing.add_argument("--link-group", default="")
    listing.add_argument("--format", choices=("table", "json"), default="table")
    listing.set_defaults(handler=_list)
    for name, approve in (("approve-correction", True), ("reject-correction", False)):
        review = rounds.add_parser(
            name,
            help="apply a requested correction (not by its requester)"
            if approve
            else "refuse or withdraw a requested correction",
        )
        review.add_argument("correction_id")
        review.add_argument("--note", default="", required=not approve, help="why (journaled)")
        review.set_defaults(handler=_review, approve=approve)


def _seat(text: str) -> pb.SeatCards:
    number, sep, cards = text.partition("=")
    if not sep or not number.strip().isdigit():
        raise InvalidArgument(f'--seat {text!r}: write N="CARDS", e.g. 3="AS KS QS JS TS"')
    return pb.SeatCards(seat=int(number), cards=cards.split())


def _wager(text: str) -> pb.Wager:
    parts = text.split(":")
    if len(parts) < 3 or not parts[0].isdigit():
        raise InvalidArgument(f"--wager {text!r}: write SEAT:KIND:DOLLARS, e.g. 3:progressive:1")
    name = "WAGER_KIND_" + parts[1].upper()
    if name not in pb.WagerKind.keys():
        kinds = ", ".join(
            k.removeprefix("WAGER_KIND_").lower()
            for k in pb.WagerKind.keys()
            if k != "WAGER_KIND_UNSPECIFIED"
        )
        raise InvalidArgument(f"--wager {text!r}: no wager kind {parts[1]!r} ({kinds})")
    flags = set(parts[3:])
    if flags - {"dealer", "envy"}:
        raise InvalidArgument(f"--wager {text!r}: the flags are 'dealer' and 'envy'")
    return pb.Wager(
        seat=int(parts[0]),
        kind=pb.WagerKind.Value(name),
        amount_cents=parse_dollars_cents(parts[2]),
        on_dealer_hand="dealer" in flags,
        envy="envy" in flags,
    )


def _correct(args: argparse.Namespace) -> int:
    request = pb.RequestCorrectionRequest(
        table_id=args.table_id,
        round_id=args.round_id,
        seats=[_seat(text) for text in args.seat]
        + [pb.SeatCards(seat=seat, folded=True) for seat in args.folded],
        dealer_cards=args.dealer.split(),
        community_cards=args.community.split(),
        reason=args.reason,
        request_id=args.request_id,
    )
    if args.wager:
        request.wagers.extend(_wager(text) for text in args.wager)
    else:
        request.same_wagers = True
    record = call(args, "RequestCorrection", request)
    return show(args, record, "\n".join(slip(record)))


def _review(args: argparse.Namespace) -> int:
    method = "ApproveCorrection" if args.approve else "RejectCorrection"
    request = pb.ReviewCorrectionRequest(correction_id=args.correction_id, note=args.note)
    record = call(args, method, request)
    return show(args, record, "\n".join(slip(record)))


def _signed(cents: int) -> str:
    return ("+" if cents > 0 else "") + format_cents(cents)


def slip(record: pb.Correction) -> list[str]:
    """The correction as people read it: who, why, each line, then per seat what to do."""
    out = [
        f"correction {record.correction_id} of round {record.round_id} at table "
        f"{record.table_id}: {record.status}",
        f"  requested by {record.requested_by}"
        + (" (dealer console)" if record.from_table else "")
        + f": {record.reason}",
    ]
    if record.decided_by:
        out.append(f"  {record.status} by {record.decided_by}: {record.note}".rstrip(": "))
    for line in record.lines:
        hand = f"{line.hand} ({line.line})" if line.line else line.hand
        out.append(
            f"  seat {line.seat} {line.wager}: {hand}, paid {format_cents(line.paid_cents)}, "
            f"due {format_cents(line.due_cents)} ({_signed(line.delta_cents)}; {line.basis}"
            + (", awaits validation" if line.needs_validation else "")
            + ")"
        )
    for wager in record.wagers:
        what = "removed (its contribution leaves" if wager.removed else "added (contributes to"
        out.append(
            f"  seat {wager.seat} {wager.wager} wager of {format_cents(wager.amount_cents)} "
            f"{what} {', '.join(wager.meter_ids) or 'no meter'})"
        )
    for seat in record.seats:
        verb = "pay" if seat.delta_cents > 0 else "recover"
        out.append(f"  seat {seat.seat}: {verb} {format_cents(abs(seat.delta_cents))}")
    if record.operator_funded_cents:
        out.append(
            f"  operator-funded (never from the live meter): "
            f"{format_cents(record.operator_funded_cents)}"
        )
    if record.jackpot_ids:
        out.append(f"  pending jackpots to validate: {', '.join(record.jackpot_ids)}")
    return out


def _list(args: argparse.Namespace) -> int:
    request = pb.ListCorrectionsRequest(
        link_group_id=args.link_group, status=args.status or "", table_id=args.table
    )
    reply = call(args, "ListCorrections", request)
    if args.json or args.format == "json":
        data: list[dict[str, Any]] = [message_data(c) for c in reply.corrections]
        print(json.dumps(data, indent=2))
        return 0
    if not reply.corrections:
        print(f"no {args.status + ' ' if args.status else ''}corrections")
        return 0
    print("\n".join(_table(reply.corrections)))
    return 0


def _table(records: Sequence[pb.Correction]) -> list[str]:
    rows = [("ID", "TABLE", "ROUND", "STATUS", "REQUESTED (UTC)", "PAY", "RECOVER", "BY", "REASON")]
    rows += [
        (
            r.correction_id,
            r.table_id,
            str(r.round_id),
            r.status,
            format_time(r.requested_at_ms),
            format_cents(r.pay_cents),
            format_cents(r.recover_cents),
            r.requested_by,
            r.reason,
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]
