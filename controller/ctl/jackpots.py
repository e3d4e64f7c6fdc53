"""``jackpotctl jackpots``: the lifecycle of jackpots and their hand-pay slips.

    jackpotctl jackpots list [--status pending] [--table cs-1] [--from 2025-03-01 --to 2025-03-31]
                             [--format table|csv|json]
    jackpotctl jackpots show floor:42            # the hand-pay slip
    jackpotctl jackpots approve floor:42 --amount 10016.05 --note "hand verified"  # a supervisor
    jackpotctl jackpots reject floor:42 --note "misdeal: two cards exposed"
    jackpotctl jackpots paid floor:42 --note "cage receipt 1187"    # the cage (cashier)
    jackpotctl jackpots witness floor:42 --note "present at the cage"  # a second person
    jackpotctl jackpots paid floor:42 --note "receipt 1188" --tax-form-ref W2G-2025-0042

A jackpot is ``pending`` (awaiting a supervisor's validation), then ``approved`` and ``paid``,
or ``rejected`` with its reason. Dates and times are UTC unless they carry an offset
(``2025-03-01``, ``2025-03-01T18:30``, ``2025-03-01T18:30-05:00``); ``--to`` a date takes the
whole day. Amounts print in dollars; ``--format csv`` and ``json`` print every field of the
slip as the controller holds it (cents, milliseconds since the Unix epoch). An approval names
the amount the supervisor read on the slip (``--amount``, in dollars as ``jackpots show``
prints it): the controller refuses another amount than the jackpot's, and nothing changes.

Under a payout compliance policy (``jackpot-controller serve --payout-compliance``,
docs/payout-compliance.md) the slip states whether a W-2G and a witness are required and why;
``paid`` is refused, naming what is missing, until the tax-form reference the casino's tax
system issued (``--tax-form-ref``; or, where the policy allows it, ``--tax-form-override
REASON``) and the witness (``witness``, by another supervisor's or cashier's certificate) are
given.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

from controller.ctl import gaming_days
from controller.ctl.remote import call, print_records, show
from controller.domain.gaming_day import GamingDay
from jackpot.hands.words import hand_words
from jackpot.kinds import wager_words
from jackpot.money import format_cents, parse_dollars_cents
from jackpot.results import METER_AFTER
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2 as pb

STATUSES = ("pending", "approved", "paid", "rejected")
FORMATS = ("table", "csv", "json")
SLIP_FIELDS = tuple(field.name for field in pb.Jackpot.DESCRIPTOR.fields)
"""The columns of ``--format csv``: every field of the slip, in the message's order."""


def add_commands(top: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``jackpots list|show|approve|reject|paid|witness`` to ``jackpotctl``."""
    jackpots = top.add_parser(
        "jackpots", help="jackpots: validation, payment and hand-pay slips"
    ).add_subparsers(dest="action", required=True)
    listing = jackpots.add_parser("list", help="jackpots with their slips, filtered")
    listing.add_argument("--status", choices=STATUSES, help="only this status")
    listing.add_argument("--table", default="", metavar="TABLE_ID", help="only this table")
    listing.add_argument("--link-group", default="")
    listing.add_argument(
        "--from", dest="since", metavar="WHEN", help="hit at or after (a date or a time)"
    )
    listing.add_argument(
        "--to", dest="until", metavar="WHEN", help="hit before (a date: up to its end)"
    )
    listing.add_argument("--format", choices=FORMATS, default="table")
    listing.set_defaults(handler=_list)
    slip = jackpots.add_parser("show", help="one jackpot's hand-pay slip")
    slip.add_argument("jackpot_id")
    slip.add_argument("--format", choices=("table", "json"), default="table")
    gaming_days.add_arguments(slip)  # optional here: the slip then names the hit's gaming day
    slip.set_defaults(handler=_show_slip)
    for decision in ("approve", "reject"):
        review = jackpots.add_parser(
            decision, help=f"{decision} as the supervisor this certificate names"
        )
        review.add_argument("jackpot_id")
        review.add_argument(
            "--note",
            default="",
            required=decision == "reject",
            help="the reason (required to reject)" if decision == "reject" else "a note",
        )
        if decision == "approve":
            review.add_argument(
                "--amount",
                required=True,
                metavar="DOLLARS",
                help="the jackpot's amount as the hand-pay slip shows it (e.g. 10016.05): "
                "another amount is refused",
            )
        review.set_defaults(handler=_review, decision=decision)
    paid = jackpots.add_parser(
        "paid", help="record the hand-pay of an approved jackpot (the cage, or another supervisor)"
    )
    paid.add_argument("jackpot_id")
    paid.add_argument("--note", default="", help="e.g. the cage's receipt number")
    paid.add_argument(
        "--tax-form-ref",
        default="",
        metavar="REF",
        help="the W-2G reference the casino's tax system issued (no patron data)",
    )
    paid.add_argument(
        "--tax-form-override",
        default="",
        metavar="REASON",
        help="why no W-2G is filed, where the payout policy lets the prompt be overridden",
    )
    paid.set_defaults(handler=_paid)
    witness = jackpots.add_parser(
        "witness",
        help="witness an approved jackpot's hand-pay before it is paid (a supervisor or "
        "cashier other than the payer)",
    )
    witness.add_argument("jackpot_id")
    witness.add_argument("--note", default="", help="e.g. where the payment was made")
    witness.set_defaults(handler=_witness)


def parse_when(text: str, *, end_of_day: bool = False) -> int:
    """``text`` (an ISO date or date and time, UTC unless it carries an offset) in ms since
    the Unix epoch; a date alone is its start, or with ``end_of_day`` the next day's start.
    :class:`ValueError` names a text that is neither."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return _ms(start + timedelta(days=1) if end_of_day else start)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text[:40]!r} is not a date or time such as 2025-03-01 or 2025-03-01T18:30"
        ) from None
    return _ms(moment if moment.tzinfo else moment.replace(tzinfo=UTC))


def _ms(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _list(args: argparse.Namespace) -> int:
    request = pb.ListJackpotsRequest(
        link_group_id=args.link_group,
        status=args.status or "",
        table_id=args.table,
        from_ms=parse_when(args.since) if args.since else 0,
        to_ms=parse_when(args.until, end_of_day=True) if args.until else 0,
    )
    reply = call(args, "ListJackpots", request)
    status = args.status + " " if args.status else ""
    return print_records(args, reply.jackpots, SLIP_FIELDS, _table, f"no {status}jackpots")


def _table(jackpots: Sequence[pb.Jackpot]) -> list[str]:
    """One line per jackpot under a header, columns aligned."""
    rows: list[tuple[str, ...]] = [
        ("JACKPOT", "STATUS", "HIT (UTC)", "TABLE", "ROUND", "SEAT", "HAND", "AMOUNT")
    ]
    rows += [
        (
            j.jackpot_id,
            j.status,
            format_time(j.hit_at_ms).removesuffix(" UTC"),
            j.table_id,
            str(j.round_id),
            str(j.seat),
            hand_words(j.hand),
            format_cents(j.amount_cents),
        )
        for j in jackpots
    ]
    if any(j.payout_compliance for j in jackpots):  # docs/payout-compliance.md
        rows = [
            (*row, *extra)
            for row, extra in zip(
                rows, [("W-2G", "WITNESS")] + [_compliance_cells(j) for j in jackpots], strict=True
            )
        ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def slip_lines(j: pb.Jackpot, gaming_day: GamingDay | None = None) -> list[str]:
    """The hand-pay slip of a jackpot, for people (amounts in dollars, times in UTC; with
    ``gaming_day``, the gaming day the hit is counted in)."""
    wager = wager_words(j.wager, on_dealer_hand=j.on_dealer_hand)
    hand = f"{hand_words(j.hand)}: {j.cards}" if j.cards else hand_words(j.hand)
    if j.envy_for_seat:
        hand = f"envy bonus for seat {j.envy_for_seat}'s {hand}"
    lines = [
        f"HAND-PAY SLIP - jackpot {j.jackpot_id} ({j.status})",
        f"  table        {j.table_id}, seat {j.seat}, round {j.round_id}",
        f"  wager        {wager} {format_cents(j.wager_cents)}",
        f"  hand         {hand}",
        f"  award        {j.award_text} = {format_cents(j.amount_cents)}",
    ]
    if j.meter_id:
        lines.append(
            f"  meter        {j.meter_id} {format_cents(j.meter_before_cents)} -> "
            f"{format_cents(j.meter_after_cents)} ({METER_AFTER})"
        )
    else:
        lines.append("  meter        none (a fixed award)")
    if j.player_token:  # the rated player given at lockout (docs/staged-changes.md)
        lines.append(f"  player       {j.player_token} (the player system's token)")
    lines += [
        f"  journal      #{j.journal_seq} ({j.link_group_id})",
        f"  hit          {format_time(j.hit_at_ms)}",
    ]
    if gaming_day is not None:
        lines.append(
            f"  gaming day   {gaming_day.day_of(j.hit_at_ms)} ({gaming_day.zone} from "
            f"{gaming_day.start_hour:02d}:00)"
        )
    if j.reviewed_by:
        lines.append(
            f"  {j.status if j.status in ('rejected', 'voided') else 'approved':<12} "
            f"{format_time(j.reviewed_at_ms)} by {j.reviewed_by}{_cert(j.reviewed_by_cert)}"
            + (f': "{j.note}"' if j.note else "")
        )
    if j.status == "voided":  # a must-hit-by hit its round's void reversed (docs/mystery.md)
        lines.append(f"  round void   journal #{j.voided_seq}: {j.void_reason}")
        lines.append("  not payable  the amount went back to the meter's reserve")
    lines += compliance_lines(j)
    if j.paid_by:
        lines.append(
            f"  paid         {format_time(j.paid_at_ms)} by {j.paid_by}{_cert(j.paid_by_cert)}"
            + (f': "{j.paid_note}"' if j.paid_note else "")
        )
    return lines


def _compliance_cells(j: pb.Jackpot) -> tuple[str, str]:
    """The W-2G and witness columns of a listing: what was given, else whether required."""
    tax = j.tax_form_ref or ("override" if j.tax_form_override else "")
    tax = tax or ("required" if j.tax_form_required else "-")
    witness = j.witnessed_by.rpartition("/")[2] or ("required" if j.witness_required else "-")
    return tax, witness


def compliance_lines(j: pb.Jackpot) -> list[str]:
    """The slip's payout compliance lines (docs/payout-compliance.md); none without a
    policy. What is required, and why; what was given."""
    if not j.payout_compliance and not j.witnessed_by:
        return []
    lines = []
    if j.payout_compliance:
        overridable = "" if j.tax_form_overridable else ", not overridable"
        lines += [
            f"  policy       {j.payout_compliance}",
            f"  W-2G required: {'yes' if j.tax_form_required else 'no'} ({j.tax_form_reason}"
            f"{overridable if j.tax_form_required else ''})",
            f"  witness required: {'yes' if j.witness_required else 'no'} ({j.witness_reason})",
        ]
    if j.tax_form_ref:
        lines.append(f"  tax form     reference {j.tax_form_ref} (the casino's tax system's)")
    elif j.tax_form_override:
        lines.append(f'  tax form     overridden: "{j.tax_form_override}"')
    if j.witnessed_by:
        lines.append(
            f"  witnessed    {format_time(j.witnessed_at_ms)} by {j.witnessed_by}"
            f"{_cert(j.witnessed_by_cert)}" + (f': "{j.witness_note}"' if j.witness_note else "")
        )
    return lines


def _cert(fingerprint: str) -> str:
    return f" (certificate sha256:{fingerprint[:16]}...)" if fingerprint else ""


def _show_slip(args: argparse.Namespace) -> int:
    reply = call(args, "GetJackpot", pb.GetJackpotRequest(jackpot_id=args.jackpot_id))
    if args.format == "json":
        args.json = True
    return show(args, reply, "\n".join(slip_lines(reply, gaming_days.optional(args))))


def jackpot_line(jackpot: pb.Jackpot) -> str:
    """One line: the jackpot, its award, and who decided and paid it."""
    meter = (
        f" (meter {format_cents(jackpot.meter_before_cents)} -> "
        f"{format_cents(jackpot.meter_after_cents)} {METER_AFTER})"
        if jackpot.meter_id
        else ""
    )
    return (
        f"{jackpot.jackpot_id}: {jackpot.status} - table {jackpot.table_id} round "
        f"{jackpot.round_id} seat {jackpot.seat} {hand_words(jackpot.hand)}, "
        f"{jackpot.award_text} = "
        f"{format_cents(jackpot.amount_cents)}{meter}"
        + (f", reviewed by {jackpot.reviewed_by}" if jackpot.reviewed_by else "")
        + (f", paid by {jackpot.paid_by}" if jackpot.paid_by else "")
        + (f", witnessed by {jackpot.witnessed_by}" if jackpot.witnessed_by else "")
        + (f", W-2G {jackpot.tax_form_ref}" if jackpot.tax_form_ref else "")
    )


def _review(args: argparse.Namespace) -> int:
    request = pb.ReviewJackpotRequest(jackpot_id=args.jackpot_id, note=args.note)
    if args.decision == "approve":
        request.confirmed_amount_cents = parse_dollars_cents(args.amount)
    method = "ApproveJackpot" if args.decision == "approve" else "RejectJackpot"
    reply = call(args, method, request)
    return show(args, reply, jackpot_line(reply))


def _paid(args: argparse.Namespace) -> int:
    reply = call(
        args,
        "RecordJackpotPaid",
        pb.RecordJackpotPaidRequest(
            jackpot_id=args.jackpot_id,
            note=args.note,
            tax_form_ref=args.tax_form_ref,
            tax_form_override=args.tax_form_override,
        ),
    )
    return show(args, reply, jackpot_line(reply))


def _witness(args: argparse.Namespace) -> int:
    reply = call(
        args,
        "WitnessJackpotPayment",
        pb.WitnessJackpotPaymentRequest(jackpot_id=args.jackpot_id, note=args.note),
    )
    return show(args, reply, jackpot_line(reply))
