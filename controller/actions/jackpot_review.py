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
caller's certificate, never the approver nor the witness (the store refuses that); under a
payout compliance policy it needs the tax-form reference and the witness the jackpot requires
(:func:`witness_jackpot` records the witness, ``jackpotctl jackpots witness``, the floor
view's Witness button; docs/payout-compliance.md). The floor view also sends
the amount the person confirmed (``expected_cents``): a page showing another amount than the
record's (a stale page) is refused, and nothing changes. ``jackpotctl jackpots approve``
sends the amount the supervisor typed (``--amount``) with ``ApproveJackpot``, checked the
same way (``amount_advice`` says what to do instead of "reload the page").
"""

from __future__ import annotations

import logging
from dataclasses import replace

from controller.domain import bounds
from controller.domain.bounds import check_jackpot_id, check_text
from controller.domain.identity import Identity, Role
from controller.domain.payout_compliance import (
    DEFAULT,
    OVERRIDE_MAX_CHARS,
    PRESETS,
    PaymentCompliance,
    PayoutCompliance,
    check_tax_form_ref,
    requirements,
)
from controller.domain.records import Jackpot
from controller.observability.metrics import Metrics
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
    record = await store.jackpots.review_jackpot(
        jackpot_id,
        approve=approve,
        reviewer=reviewer.uri,
        reviewer_cert=reviewer.fingerprint,
        note=note,
    )
    log.info("jackpot %s %s by %s", record.jackpot_id, record.status, reviewer)
    if record.meter_id:
        metrics.set_meter_states([await store.catalog.get_meter(record.meter_id)])
    return record


async def check_amount(
    store: RedisStore, jackpot_id: str, expected_cents: int, advice: str = ""
) -> Jackpot:
    """The record of ``jackpot_id`` if its amount is ``expected_cents`` (what the person
    confirmed, integer cents), else :class:`FailedPrecondition` naming both and ``advice``
    (what to do; the floor view's by default). A jackpot's amount never changes once it hit,
    so the check holds for the step that follows it."""
    record = await store.jackpots.get_jackpot(jackpot_id)
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
    policy: PayoutCompliance = PRESETS[DEFAULT],
    tax_form_ref: str = "",
    tax_form_override: str = "",
) -> Jackpot:
    """Record the hand-pay of approved ``jackpot_id`` by ``payer`` (with certificates, never
    its approver nor its witness); the record as it is now. ``require_note``: the cage's
    receipt note must be given (the floor view). Under an active ``policy``
    (docs/payout-compliance.md) the store refuses, naming each, a missing tax-form reference
    (``tax_form_ref``; or ``tax_form_override``, the reason none is filed, where the policy
    allows it) and a missing witness. :class:`InvalidArgument` for a malformed id, note,
    reference or override; the store's refusals otherwise (not approved, already paid).
    Nothing changes on a refusal."""
    jackpot_id = check_jackpot_id(jackpot_id)
    note = check_text(note, "note", bounds.NOTE_MAX_CHARS)
    tax_form_ref = check_tax_form_ref(tax_form_ref)
    tax_form_override = check_text(tax_form_override, "tax-form override", OVERRIDE_MAX_CHARS)
    if tax_form_ref and tax_form_override:
        raise InvalidArgument(
            "give the tax-form reference or the reason the form is overridden, not both"
        )
    if require_note and not note.strip():
        raise InvalidArgument("a hand-pay needs the cage's receipt: give the note")
    if expected_cents is not None:
        record = await check_amount(store, jackpot_id, expected_cents)
    else:
        record = await store.jackpots.get_jackpot(jackpot_id)
    compliance = None
    if policy.active:
        needs = requirements(policy, record.amount_cents, record.wager_cents)
        if tax_form_override and not needs.tax_form_required and record.status != "paid":
            raise InvalidArgument(
                f"jackpot {jackpot_id} needs no tax form ({needs.tax_form_reason}): "
                "there is nothing to override"
            )
        compliance = PaymentCompliance(
            policy, record.amount_cents, record.wager_cents, needs, tax_form_ref, tax_form_override
        )
    elif tax_form_ref or tax_form_override:
        raise InvalidArgument(
            "this controller applies no payout compliance policy (--payout-compliance none): "
            "a tax-form reference or override is not recorded"
        )
    record = await store.jackpots.pay_jackpot(
        jackpot_id,
        payer=payer.uri,
        payer_cert=payer.fingerprint,
        note=note,
        two_people=payer.role is not Role.INSECURE,
        compliance=compliance,
    )
    log.info("jackpot %s paid by %s", record.jackpot_id, payer)
    return record


async def witness_jackpot(
    store: RedisStore, witness: Identity, jackpot_id: str, note: str
) -> Jackpot:
    """Record that ``witness`` (its certificate; a role of
    :data:`~controller.domain.payout_compliance.WITNESS_ROLES`, which the access table
    enforces) witnessed the hand-pay of approved ``jackpot_id``, before it is paid; the
    record as it is now. :class:`InvalidArgument` for a malformed id or note; the store's
    refusals otherwise. Nothing changes on a refusal."""
    jackpot_id = check_jackpot_id(jackpot_id)
    note = check_text(note, "note", bounds.NOTE_MAX_CHARS)
    record = await store.jackpots.witness_jackpot(
        jackpot_id, witness=witness.uri, witness_cert=witness.fingerprint, note=note
    )
    log.info("jackpot %s hand-pay witnessed by %s", record.jackpot_id, witness)
    return record


def with_requirements(policy: PayoutCompliance, record: Jackpot) -> Jackpot:
    """``record`` with what its hand-pay requires under ``policy`` (the slip's lines): a
    paid jackpot keeps what it was held to when it was paid; a jackpot still to be paid
    states what ``policy`` requires of it now; a rejected or voided one requires nothing."""
    if record.status not in ("pending", "approved") or not policy.active:
        return record
    needs = requirements(policy, record.amount_cents, record.wager_cents)
    return replace(
        record,
        payout_compliance=policy.name,
        tax_form_required=needs.tax_form_required,
        tax_form_reason=needs.tax_form_reason,
        tax_form_overridable=needs.tax_form_overridable,
        witness_required=needs.witness_required,
        witness_reason=needs.witness_reason,
    )
