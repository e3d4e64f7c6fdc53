"""A supervisor's validation of a jackpot: the one path for gRPC and the floor view.

``ApproveJackpot``/``RejectJackpot`` (``jackpotctl jackpots approve|reject``) and the floor
view's approve and reject buttons both come here, so the rules are the same whichever a
supervisor uses: the reviewer is the caller's certificate (identity and SHA-256, journaled),
never a name typed into the request; a note is plain text of at most
:data:`~controller.domain.bounds.NOTE_MAX_CHARS` characters; a rejection states its reason;
the store's atomic step refuses a jackpot that is not pending, and a reviewer who may not
review it.

The hand-pay is recorded by :func:`pay_jackpot`, the one path of ``RecordJackpotPaid``
(``jackpotctl jackpots paid``) and of the floor view's Paid button: the payer is the
caller's certificate, never the approver (the store refuses that). The floor view also sends
the amount the person confirmed (``expected_cents``): a page showing another amount than the
record's (a stale page) is refused, and nothing changes. ``jackpotctl jackpots approve``
sends the amount the supervisor typed (``--amount``) with ``ApproveJackpot``, checked the
same way (``amount_advice`` says what to do instead of "reload the page").
"""

from __future__ import annotations

import logging

from controller.domain import bounds
from controller.domain.bounds import check_jackpot_id, check_text
from controller.domain.identity import Identity, Role
from controller.domain.records import Jackpot
from controller.metrics import Metrics
from controller.store.redis_store import RedisStore
from jackpot.errors import FailedPrecondition, InvalidArgument
from jackpot.money import format_cents

log = logging.getLogger("controller.admin")


async def review_jackpot(
    store: RedisStore,
    metrics: Metrics,
    reviewer: Identity,
    jackpot_id: str,
    note: str,
    *,
    approve: bool,
    expected_cents: int | None = None,
    amount_advice: str = "",
) -> Jackpot:
    """Approve or reject ``jackpot_id`` as ``reviewer`` (§ 639a.11(c)(5)(iii)); the record
    as it is now. :class:`InvalidArgument` for a malformed id or note, or a rejection
    without its reason; :class:`FailedPrecondition` when ``expected_cents`` (the amount the
    person confirmed, integer cents) is given and is not the jackpot's; the store's refusals
    otherwise. Nothing changes on a refusal."""
    jackpot_id = check_jackpot_id(jackpot_id)
    note = check_text(note, "note", bounds.NOTE_MAX_CHARS)
    if not approve and not note:
        raise InvalidArgument("a rejection needs its reason: give the note")
    if expected_cents is not None:
        await check_amount(store, jackpot_id, expected_cents, amount_advice)
    record = await store.review_jackpot(
        jackpot_id,
        approve=approve,
        reviewer=reviewer.uri,
        reviewer_cert=reviewer.fingerprint,
        note=note,
    )
    log.info("jackpot %s %s by %s", record.jackpot_id, record.status, reviewer)
    if record.meter_id:
        metrics.set_meter_states([await store.get_meter(record.meter_id)])
    return record


async def check_amount(
    store: RedisStore, jackpot_id: str, expected_cents: int, advice: str = ""
) -> Jackpot:
    """The record of ``jackpot_id`` if its amount is ``expected_cents`` (what the person
    confirmed, integer cents), else :class:`FailedPrecondition` naming both and ``advice``
    (what to do; the floor view's by default). A jackpot's amount never changes once it hit,
    so the check holds for the step that follows it."""
    record = await store.get_jackpot(jackpot_id)
    if record.amount_cents != expected_cents:
        raise FailedPrecondition(
            f"jackpot {jackpot_id} is {format_cents(record.amount_cents)}, not the "
            f"{format_cents(expected_cents)} confirmed: "
            + (advice or "reload the page and check the slip")
        )
    return record


async def pay_jackpot(
    store: RedisStore,
    payer: Identity,
    jackpot_id: str,
    note: str,
    *,
    expected_cents: int | None = None,
    require_note: bool = False,
) -> Jackpot:
    """Record the hand-pay of approved ``jackpot_id`` by ``payer`` (with certificates, never
    its approver); the record as it is now. ``require_note``: the cage's receipt note must
    be given (the floor view). :class:`InvalidArgument` for a malformed id or note; the
    store's refusals otherwise (not approved, already paid). Nothing changes on a refusal."""
    jackpot_id = check_jackpot_id(jackpot_id)
    note = check_text(note, "note", bounds.NOTE_MAX_CHARS)
    if require_note and not note.strip():
        raise InvalidArgument("a hand-pay needs the cage's receipt: give the note")
    if expected_cents is not None:
        await check_amount(store, jackpot_id, expected_cents)
    record = await store.pay_jackpot(
        jackpot_id,
        payer=payer.uri,
        payer_cert=payer.fingerprint,
        note=note,
        two_people=payer.role is not Role.INSECURE,
    )
    log.info("jackpot %s paid by %s", record.jackpot_id, payer)
    return record
