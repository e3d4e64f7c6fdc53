"""The AdminService RPCs of corrections of a settled round (docs/corrections.md).

A supervisor requests (``RequestCorrection``); so may the table itself, for its last round
before its next lockout (the dealer's window: the dealer console). Another identity, a
supervisor or an operator, approves or rejects; an approval applies the difference in one
journaled step. Amounts are cents.
"""

from __future__ import annotations

import logging

from grpc import aio

from controller.api import convert
from controller.api.access import caller
from controller.domain import bounds
from controller.domain.bounds import check_id, check_text, excerpt
from controller.domain.corrections import CORRECTION_STATUSES, Correction
from controller.domain.identity import Role
from controller.domain.rounds import Wager
from controller.store.corrections import Corrections
from controller.store.redis_store import RedisStore
from controller.store.state_guard import StateGuard
from jackpot.errors import InvalidArgument
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb

log = logging.getLogger("controller.corrections")

Context = aio.ServicerContext[object, object]


def correction_id(value: str) -> str:
    """A correction id ``<link group>:<seq>``; anything else is refused."""
    group, _, seq = value.rpartition(":")
    if not group or not seq.isdigit() or len(value) > 100:
        raise InvalidArgument(
            f"correction id {excerpt(value)} is not '<link group>:<number>' (e.g. 'floor:17')"
        )
    check_id(group, "link group id")
    return value


def correction_message(record: Correction) -> pb.Correction:
    """A correction record on the wire."""
    return pb.Correction(
        correction_id=record.correction_id,
        link_group_id=record.link_group_id,
        table_id=record.table_id,
        round_id=record.round_id,
        status=record.status,
        reason=record.reason,
        requested_by=record.requested_by,
        requested_by_cert=record.requested_by_cert,
        requested_at_ms=record.requested_at_ms,
        request_seq=record.request_seq,
        from_table=record.from_table,
        decided_by=record.decided_by,
        decided_by_cert=record.decided_by_cert,
        decided_at_ms=record.decided_at_ms,
        decision_seq=record.decision_seq,
        note=record.note,
        lines=[
            pb.CorrectionLine(
                seat=x.seat,
                wager=x.kind,
                on_dealer_hand=x.on_dealer_hand,
                envy_for_seat=x.envy_for_seat,
                hand=x.hand,
                line=x.line,
                award_text=x.award_text,
                award_kind=x.award_kind,
                paid_cents=x.paid_cents,
                due_cents=x.due_cents,
                delta_cents=x.delta_cents,
                basis=x.basis,
                meter_id=x.meter_id,
                meter_basis_cents=x.meter_basis_cents,
                needs_validation=x.needs_validation,
            )
            for x in record.lines
        ],
        wagers=[
            pb.CorrectionWager(
                seat=w.seat,
                wager=w.kind,
                amount_cents=w.amount_cents,
                on_dealer_hand=w.on_dealer_hand,
                envy=w.envy,
                removed=w.removed,
                meter_ids=list(w.meter_ids),
            )
            for w in record.wagers
        ],
        seats=[
            pb.SeatDifference(seat=seat, delta_cents=delta)
            for seat, delta in sorted(record.by_seat().items(), reverse=True)
        ],
        pay_cents=record.pay_cents,
        recover_cents=record.recover_cents,
        operator_funded_cents=record.operator_funded_cents,
        jackpot_ids=list(record.jackpot_ids),
        corrected_wagers=record.corrected_wagers,
        corrected_cards=record.corrected_cards,
    )


class CorrectionRpcs:
    """The correction RPCs, mixed into :class:`controller.api.admin_service.AdminService`."""

    _store: RedisStore
    _guard: StateGuard

    @property
    def _corrections(self) -> Corrections:
        return self._store.corrections

    async def RequestCorrection(
        self, request: pb.RequestCorrectionRequest, context: Context
    ) -> pb.Correction:
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        why = check_text(request.reason, "reason", bounds.REASON_MAX_CHARS, required=True)
        request_id = check_id(request.request_id, "request_id") if request.request_id else ""
        table = await self._store.tables.get_table(table_id)
        self._guard.refuse_group(table.link_group_id)
        cards = convert.round_cards(
            pb.SettleRequest(
                table_id=table_id,
                round_id=round_id,
                seats=request.seats,
                dealer_cards=request.dealer_cards,
                community_cards=request.community_cards,
            ),
            table.game_rules.facts.joker,
        )
        if request.same_wagers and request.wagers:
            raise InvalidArgument("give the corrected wagers or same_wagers, not both")
        wagers: list[Wager] | None = None
        if not request.same_wagers:
            wagers = convert.wagers(request.wagers)
        person = caller()
        record = await self._corrections.request(
            table,
            round_id,
            wagers,
            cards,
            reason=why,
            actor=person.uri,
            actor_cert=person.fingerprint,
            request_id=request_id,
            from_table=person.role is Role.TABLE,
        )
        log.warning(
            "correction %s of round %d of table %s requested by %s: pay %s, recover %s: %s",
            record.correction_id,
            round_id,
            table_id,
            person,
            format_cents(record.pay_cents),
            format_cents(record.recover_cents),
            why,
        )
        return correction_message(record)

    async def ApproveCorrection(
        self, request: pb.ReviewCorrectionRequest, context: Context
    ) -> pb.Correction:
        return await self._review_correction(request, approve=True)

    async def RejectCorrection(
        self, request: pb.ReviewCorrectionRequest, context: Context
    ) -> pb.Correction:
        return await self._review_correction(request, approve=False)

    async def _review_correction(
        self, request: pb.ReviewCorrectionRequest, *, approve: bool
    ) -> pb.Correction:
        """The second identity's decision: the decider is the caller's certificate identity."""
        wanted = correction_id(request.correction_id)
        note = check_text(request.note, "note", bounds.NOTE_MAX_CHARS)
        if not approve and not note:
            raise InvalidArgument("a rejection needs its reason: give the note", field="note")
        self._guard.refuse_group(wanted.rpartition(":")[0])
        person = caller()
        record = await self._corrections.review(
            wanted, approve=approve, actor=person.uri, actor_cert=person.fingerprint, note=note
        )
        log.warning("correction %s %s by %s", record.correction_id, record.status, person)
        return correction_message(record)

    async def ListCorrections(
        self, request: pb.ListCorrectionsRequest, context: Context
    ) -> pb.ListCorrectionsResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        if request.status and request.status not in CORRECTION_STATUSES:
            raise InvalidArgument(
                f"status {excerpt(request.status)} is not one of {', '.join(CORRECTION_STATUSES)}",
                field="status",
            )
        table_id = convert.table_id(request.table_id) if request.table_id else ""
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        found = await self._corrections.list(link_group_id, request.status, table_id)
        return pb.ListCorrectionsResponse(corrections=[correction_message(c) for c in found])
