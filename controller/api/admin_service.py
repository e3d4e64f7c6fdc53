"""AdminService: link groups, meters, tables, the lifecycle of jackpots (validation by a
supervisor, payment recorded by the cage or floor), the irregularities a supervisor resolves;
meter and table controls (maintenance, updates, retirement, two-person adjustments).

Operators and supervisors call it through ``jackpotctl``; who may call which method is
:mod:`controller.api.access`. Every definition is validated by the domain (citing the
regulation where it refuses) before one atomic store step applies it, journaled with the
caller's certificate identity.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from grpc import aio

from controller.actions import reconcile
from controller.actions.jackpot_review import (
    pay_jackpot,
    review_jackpot,
    with_requirements,
    witness_jackpot,
)
from controller.api import convert
from controller.api.access import caller
from controller.api.corrections import CorrectionRpcs
from controller.domain import bounds
from controller.domain.bounds import check_id, check_jackpot_id, check_range, check_text, excerpt
from controller.domain.config import LinkGroupConfig, MeterConfig, TableConfig
from controller.domain.digests import void_fingerprint
from controller.domain.payout_compliance import DEFAULT, PRESETS, PayoutCompliance
from controller.domain.records import (
    ADJUSTMENT_STATUSES,
    IRREGULARITY_STATUSES,
    MYSTERY_HIT_VOID,
    Jackpot,
    MeterState,
)
from controller.observability.metrics import Metrics
from controller.store import keys
from controller.store.irregularities import Resolution
from controller.store.redis_store import RedisStore
from controller.store.state_guard import StateGuard
from controller.store.tables import MAX_REBASE_ROUND_ID
from jackpot.errors import FailedPrecondition, InvalidArgument, InvalidConfiguration, NotFound
from jackpot.irregularities import CHIP_COUNT_SECTION
from jackpot.kinds import IrregularityKind
from jackpot.money import MAX_METER_CENTS, format_cents, format_percent
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.wire import compile_encoders, to_message

log = logging.getLogger("controller.admin")

compile_encoders(pb.Irregularity)  # what this module encodes, compiled now (jackpot.codegen)

Context: TypeAlias = "aio.ServicerContext[object, object]"

CONFIRM = pb.IRREGULARITY_DECISION_CONFIRM
VOID = pb.IRREGULARITY_DECISION_VOID


class AdminService(CorrectionRpcs, pb_grpc.AdminServiceServicer):
    """The operator-facing service."""

    def __init__(
        self,
        store: RedisStore,
        metrics: Metrics,
        guard: StateGuard,
        check_state: Callable[[], Awaitable[None]],
        payout_compliance: PayoutCompliance = PRESETS[DEFAULT],
    ) -> None:
        self._store = store
        self._metrics = metrics
        self._guard = guard
        self._check_state = check_state
        self._payout_compliance = payout_compliance
        self._staged_tables = store.staged_tables  # docs/staged-changes.md

    async def CreateLinkGroup(
        self, request: pb.CreateLinkGroupRequest, context: Context
    ) -> pb.LinkGroup:
        description = check_text(request.description, "description", bounds.DESCRIPTION_MAX_CHARS)
        config = LinkGroupConfig(check_id(request.link_group_id, "link group id"), description)
        self._guard.refuse_group(config.link_group_id)
        state = await self._store.catalog.create_link_group(config, actor=caller().actor)
        log.info("link group %s ready (%s)", config.link_group_id, caller())
        return convert.link_group(state)

    async def GetLinkGroup(self, request: pb.GetLinkGroupRequest, context: Context) -> pb.LinkGroup:
        check_id(request.link_group_id, "link group id")
        return convert.link_group(await self._store.catalog.get_link_group(request.link_group_id))

    async def ListLinkGroups(
        self, request: pb.ListLinkGroupsRequest, context: Context
    ) -> pb.ListLinkGroupsResponse:
        groups = await self._store.catalog.list_link_groups()
        return pb.ListLinkGroupsResponse(link_groups=[convert.link_group(g) for g in groups])

    async def CreateMeter(self, request: pb.CreateMeterRequest, context: Context) -> pb.Meter:
        config = convert.meter_config(request)
        self._guard.refuse_group(config.link_group_id)
        state = await self._store.catalog.create_meter(config, actor=caller().actor)
        self._metrics.set_meter_states([state])
        log.info(
            "meter %s ready in link group %s (%s)", config.meter_id, config.link_group_id, caller()
        )
        return convert.meter(state)

    async def GetMeter(self, request: pb.GetMeterRequest, context: Context) -> pb.Meter:
        check_id(request.meter_id, "meter id")
        return convert.meter(await self._store.catalog.get_meter(request.meter_id))

    async def ListMeters(
        self, request: pb.ListMetersRequest, context: Context
    ) -> pb.ListMetersResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        meters = await self._store.catalog.list_meters(link_group_id)
        return pb.ListMetersResponse(meters=[convert.meter(m) for m in meters])

    async def RegisterTable(self, request: pb.RegisterTableRequest, context: Context) -> pb.Table:
        if not request.HasField("table"):
            raise InvalidArgument("table is required", field="table")
        config = convert.table_config(request.table)
        self._guard.refuse_group(config.link_group_id)
        await self._store.tables.register_table(config, actor=caller().actor)
        self._metrics.initialise_tables([config])
        log.info(
            "table %s registered: %s, %d seats, wagers %s, meters %s (%s)",
            config.table_id,
            config.game,
            config.seats,
            ", ".join(f"{o.wager} ({o.paytable.name})" for o in config.wagers),
            ", ".join(config.meter_ids) or "none",
            caller(),
        )
        return convert.table(config)

    async def ListTables(
        self, request: pb.ListTablesRequest, context: Context
    ) -> pb.ListTablesResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        tables = await self._store.tables.list_tables(link_group_id)
        return pb.ListTablesResponse(tables=[await self._table_message(t) for t in tables])

    async def RebaseTableRounds(
        self, request: pb.RebaseTableRoundsRequest, context: Context
    ) -> pb.RebaseTableRoundsResponse:
        table = await self._store.tables.get_table(convert.table_id(request.table_id))
        last_round_id = check_range(request.last_round_id, "last_round_id", 0, MAX_REBASE_ROUND_ID)
        why = convert.reason(request.reason)
        before, after = await self._store.tables.rebase_table_rounds(
            table, last_round_id, reason=why, actor=caller().actor
        )
        log.warning(
            "table %s rounds rebased from %d to %d by %s: %s",
            table.table_id,
            before,
            after,
            caller(),
            why,
        )
        return pb.RebaseTableRoundsResponse(
            table_id=table.table_id, previous_last_round_id=before, last_round_id=after
        )

    async def ResumeLinkGroup(
        self, request: pb.ResumeLinkGroupRequest, context: Context
    ) -> pb.LinkGroup:
        link_group_id = check_id(request.link_group_id, "link group id")
        why = convert.reason(request.reason)
        reviewed = convert.known_position(pb.JournalPosition(epoch=request.epoch)).epoch
        if not reviewed:
            raise InvalidArgument(
                "epoch is required: the epoch of the stopped link group you reviewed "
                "(jackpotctl link-groups list)",
                field="epoch",
            )
        operator = caller()
        position = await self._store.epochs.resume_link_group(
            link_group_id,
            epoch=reviewed,
            reason=why,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
        )
        log.warning(
            "link group %s resumed in epoch %s at journal #%d by %s: %s",
            link_group_id,
            position.epoch,
            position.seq,
            operator,
            why,
        )
        await self._check_state()  # served again by this replica now, by the others within 2 s
        return convert.link_group(await self._store.catalog.get_link_group(link_group_id))

    async def _restore_steps(self, link_group_id: str, finished_seq: int = 0) -> pb.RestoreSteps:
        status = await reconcile.status(self._store, link_group_id)
        return pb.RestoreSteps(
            link_group_id=link_group_id,
            restored_from=status.restored_from,
            numbered_after=status.numbered_after,
            stopped=status.stopped,
            steps=[
                pb.RestoreStep(
                    step_id=step["id"],
                    table_id=step["table_id"],
                    round_id=int(step["round_id"]),
                    phase=step["phase"],
                    seq=int(step["seq"]),
                    status=step["status"],
                    requested_by=step.get("requested_by", ""),
                    approved_by=step.get("approved_by", ""),
                    applied_seq=int(step.get("applied_seq") or 0),
                    description=reconcile.describe(step),
                )
                for step in status.steps
            ],
            uncollected_tables=status.uncollected,
            finished_seq=finished_seq,
        )

    async def _restored_group(self, request: pb.RestoreStepsRequest) -> str:
        link_group_id = check_id(request.link_group_id, "link group id")
        await self._store.catalog.get_link_group(link_group_id)  # NotFound names it
        return link_group_id

    async def ListRestoreSteps(
        self, request: pb.RestoreStepsRequest, context: Context
    ) -> pb.RestoreSteps:
        return await self._restore_steps(await self._restored_group(request))

    async def RequestRestoreCorrections(
        self, request: pb.RestoreStepsRequest, context: Context
    ) -> pb.RestoreSteps:
        link_group_id = await self._restored_group(request)
        operator = caller()
        count = await reconcile.request(
            self._store, link_group_id, actor=operator.uri, actor_cert=operator.fingerprint
        )
        log.warning(
            "restore of link group %s: %d corrections requested by %s",
            link_group_id,
            count,
            operator,
        )
        return await self._restore_steps(link_group_id)

    async def ApproveRestoreCorrections(
        self, request: pb.RestoreStepsRequest, context: Context
    ) -> pb.RestoreSteps:
        link_group_id = await self._restored_group(request)
        operator = caller()
        applied = await reconcile.approve(
            self._store, link_group_id, actor=operator.uri, actor_cert=operator.fingerprint
        )
        log.warning(
            "restore of link group %s: %d corrections approved and applied by %s",
            link_group_id,
            len(applied),
            operator,
        )
        return await self._restore_steps(link_group_id)

    async def FinishRestore(
        self, request: pb.RestoreStepsRequest, context: Context
    ) -> pb.RestoreSteps:
        link_group_id = await self._restored_group(request)
        operator = caller()
        seq = await reconcile.finish(
            self._store, link_group_id, actor=operator.uri, actor_cert=operator.fingerprint
        )
        log.warning("restore of link group %s finished at #%d by %s", link_group_id, seq, operator)
        await self._check_state()  # served again by this replica now, by the others within 2 s
        return await self._restore_steps(link_group_id, seq)

    async def ListPendingJackpots(
        self, request: pb.ListPendingJackpotsRequest, context: Context
    ) -> pb.ListPendingJackpotsResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        jackpots = await self._store.jackpots.list_pending_jackpots(link_group_id)
        return pb.ListPendingJackpotsResponse(jackpots=[self._slip(j) for j in jackpots])

    async def ListJackpots(
        self, request: pb.ListJackpotsRequest, context: Context
    ) -> pb.ListJackpotsResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        filters = convert.jackpot_filters(request)
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        jackpots = await self._store.jackpots.list_jackpots(link_group_id, **filters)
        return pb.ListJackpotsResponse(jackpots=[self._slip(j) for j in jackpots])

    async def GetJackpot(self, request: pb.GetJackpotRequest, context: Context) -> pb.Jackpot:
        jackpot_id = check_jackpot_id(request.jackpot_id)
        return self._slip(await self._store.jackpots.get_jackpot(jackpot_id))

    async def ApproveJackpot(
        self, request: pb.ReviewJackpotRequest, context: Context
    ) -> pb.Jackpot:
        return await self._review(request, approve=True)

    async def RejectJackpot(self, request: pb.ReviewJackpotRequest, context: Context) -> pb.Jackpot:
        return await self._review(request, approve=False)

    async def _review(self, request: pb.ReviewJackpotRequest, *, approve: bool) -> pb.Jackpot:
        """A supervisor's validation, by the one path the floor view takes too; the amount
        the supervisor confirmed (``confirmed_amount_cents``), when given, must be the
        jackpot's."""
        expected = None
        if request.HasField("confirmed_amount_cents"):
            expected = bounds.check_range(
                request.confirmed_amount_cents, "confirmed_amount_cents", 0, MAX_METER_CENTS
            )
        record = await review_jackpot(
            self._store,
            self._metrics,
            caller(),
            request.jackpot_id,
            request.note,
            approve=approve,
            expected_cents=expected,
            amount_advice="check its hand-pay slip (jackpotctl jackpots show) and give its amount",
        )
        return self._slip(record)

    async def RecordJackpotPaid(
        self, request: pb.RecordJackpotPaidRequest, context: Context
    ) -> pb.Jackpot:
        """The cage or floor records the hand-pay of an approved jackpot; the payer is the
        caller's certificate and, with certificates, never the approver."""
        record = await pay_jackpot(
            self._store,
            caller(),
            request.jackpot_id,
            request.note,
            policy=self._payout_compliance,
            tax_form_ref=request.tax_form_ref,
            tax_form_override=request.tax_form_override,
        )
        return self._slip(record)

    async def ListIrregularities(
        self, request: pb.ListIrregularitiesRequest, context: Context
    ) -> pb.ListIrregularitiesResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        if request.status and request.status not in IRREGULARITY_STATUSES:
            raise InvalidArgument(
                f"status {bounds.excerpt(request.status)} is not one of "
                + ", ".join(IRREGULARITY_STATUSES),
                field="status",
            )
        table_id = check_id(request.table_id, "table_id") if request.table_id else ""
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        found = await self._store.irregularities.list_irregularities(
            link_group_id, status=request.status, table_id=table_id
        )
        return pb.ListIrregularitiesResponse(
            irregularities=[to_message(record, pb.Irregularity) for record in found]
        )

    async def ResolveIrregularity(
        self, request: pb.ResolveIrregularityRequest, context: Context
    ) -> pb.Irregularity:
        """A supervisor resolves a round held by a chip count that differed (§ 639a.8(b)):
        confirm (it settles with the wagers accepted at lockout) or void (as VoidRound). The
        supervisor is the caller's certificate; the note says why."""
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        note = convert.reason(request.note, "note")
        if request.decision not in (CONFIRM, VOID):
            raise InvalidArgument("decision must be confirm or void", field="decision")
        self._guard.refuse_table(table_id)
        table = await self._store.tables.get_table(table_id)
        supervisor = caller()
        resolution = Resolution(supervisor.uri, supervisor.fingerprint, note)
        if request.decision == CONFIRM:
            record = await self._store.irregularities.confirm_irregularity(
                table, round_id, resolution
            )
        else:
            # a round held by its chip count, or one whose lockout won a must-hit-by jackpot
            # (void_round.lua: only a supervisor voids it, which reverses the hits)
            kind: IrregularityKind | str = IrregularityKind.CHIP_COUNT
            try:
                await self._store.irregularities.get_irregularity(table, round_id, kind)
                cause = (
                    "chip count differed from the Progressive Payout Wagers accepted "
                    f"({CHIP_COUNT_SECTION})"
                )
            except NotFound:
                kind = MYSTERY_HIT_VOID
                cause = "the round won a must-hit-by jackpot at its lockout"
            reason = f"{cause}; voided by {supervisor.uri}: {note}"
            void = await self._store.rounds.void_round(
                table, round_id, reason, void_fingerprint(reason), resolution=resolution
            )
            self._metrics.record_void(void)
            record = await self._store.irregularities.get_irregularity(table, round_id, kind)
        log.info(
            "irregularity of table %s round %s %s by %s: %r",
            table_id,
            round_id,
            record.status,
            supervisor,
            note,
        )
        return to_message(record, pb.Irregularity)

    # ------------------------------------------------------------------ meter and table controls

    async def EnterMaintenance(
        self, request: pb.MaintenanceRequest, context: Context
    ) -> pb.LinkGroup:
        return await self._maintenance(request, enter=True)

    async def LeaveMaintenance(
        self, request: pb.MaintenanceRequest, context: Context
    ) -> pb.LinkGroup:
        return await self._maintenance(request, enter=False)

    async def _maintenance(self, request: pb.MaintenanceRequest, *, enter: bool) -> pb.LinkGroup:
        """Enter or leave a link group's maintenance (journaled with who and why)."""
        link_group_id = check_id(request.link_group_id, "link group id")
        why = convert.reason(request.reason)
        self._guard.refuse_group(link_group_id)
        operator = caller()
        controls = self._store.controls
        step = controls.enter_maintenance if enter else controls.leave_maintenance
        seq = await step(
            link_group_id, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        log.warning(
            "link group %s %s maintenance at journal #%d by %s: %s",
            link_group_id,
            "entered" if enter else "left",
            seq,
            operator,
            why,
        )
        return convert.link_group(await self._store.catalog.get_link_group(link_group_id))

    async def UpdateMeter(self, request: pb.UpdateMeterRequest, context: Context) -> pb.Meter:
        meter_id = check_id(request.meter_id, "meter id")
        why = convert.reason(request.reason)
        old = await self._store.catalog.get_meter(meter_id)
        if old.wound_down_seq:
            raise FailedPrecondition(
                f"meter {meter_id} is winding down (journal #{old.wound_down_seq}): its "
                "parameters do not change any more"
            )
        new = convert.meter_update(request, old)
        self._guard.refuse_group(old.link_group_id)
        operator = caller()
        if request.at != pb.METER_CHANGE_AT_NOW:
            return await self._stage_meter_change(request.at, old, new, why)
        changed = await self._store.controls.update_meter(
            old, new, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        state = await self._store.catalog.get_meter(meter_id)
        self._metrics.set_meter_states([state])
        if changed:
            log.warning(
                "meter %s updated by %s: reset %s, rate %s%%, reserve rate %s%%, ceiling %s (%s)",
                meter_id,
                operator,
                format_cents(new.reset_cents),
                format_percent(new.rate_ppm),
                format_percent(new.reserve_rate_ppm),
                format_cents(new.ceiling_cents) if new.ceiling_cents else "none",
                why,
            )
        return convert.meter(state)

    async def _stage_meter_change(
        self, at: pb.MeterChangeAt.ValueType, old: MeterState, new: MeterConfig, why: str
    ) -> pb.Meter:
        """UpdateMeter with ``at``: staged for the meter's next hit or reset (validated as an
        immediate change was, by the caller; docs/staged-changes.md)."""
        when = convert.change_at(at)
        operator = caller()
        staged, seq = await self._store.controls.stage_meter_change(
            old, new, at=when, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        if staged:
            log.warning(
                "meter %s: change staged for its next %s at journal #%d by %s: reset %s, rate "
                "%s%%, reserve rate %s%%, ceiling %s (%s)",
                old.meter_id,
                when,
                seq,
                operator,
                format_cents(new.reset_cents),
                format_percent(new.rate_ppm),
                format_percent(new.reserve_rate_ppm),
                format_cents(new.ceiling_cents) if new.ceiling_cents else "none",
                why,
            )
        return convert.meter(await self._store.catalog.get_meter(old.meter_id))

    async def CancelStagedMeterChange(
        self, request: pb.CancelStagedMeterChangeRequest, context: Context
    ) -> pb.Meter:
        meter_id = check_id(request.meter_id, "meter id")
        why = convert.reason(request.reason)
        seen = check_range(request.staged_seq, "staged_seq", 0, convert.MAX_ROUND_ID)
        self._guard.refuse_group(await self._store.catalog.meter_link_group(meter_id))
        operator = caller()
        cancelled, seq = await self._store.controls.cancel_meter_change(
            meter_id,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            reason=why,
            staged_seq=seen,
        )
        if cancelled:
            log.warning(
                "meter %s: staged change #%d cancelled by %s: %s", meter_id, seq, operator, why
            )
        return convert.meter(await self._store.catalog.get_meter(meter_id))

    async def WindDownMeter(self, request: pb.WindDownMeterRequest, context: Context) -> pb.Meter:
        meter_id = check_id(request.meter_id, "meter id")
        why = convert.reason(request.reason)
        self._guard.refuse_group(await self._store.catalog.meter_link_group(meter_id))
        operator = caller()
        wound, seq = await self._store.controls.wind_down_meter(
            meter_id, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        state = await self._store.catalog.get_meter(meter_id)
        self._metrics.set_meter_states([state])
        if wound:
            log.warning(
                "meter %s winding down at journal #%d by %s: no contributions from now on (%s)",
                meter_id,
                seq,
                operator,
                why,
            )
        return convert.meter(state)

    async def RetireMeter(
        self, request: pb.RetireMeterRequest, context: Context
    ) -> pb.RetiredMeter:
        meter_id = check_id(request.meter_id, "meter id")
        to_meter_id = check_id(request.to_meter_id, "to_meter_id")
        why = convert.reason(request.reason)
        approval = convert.reason(request.approval, "approval")
        self._guard.refuse_group(await self._store.catalog.meter_link_group(meter_id))
        operator = caller()
        retired = await self._store.controls.retire_meter(
            meter_id,
            to_meter_id,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            reason=why,
            approval=approval,
        )
        self._metrics.set_meter_states([await self._store.catalog.get_meter(to_meter_id)])
        log.warning(
            "meter %s retired into %s at journal #%d by %s (approval %s): %s",
            meter_id,
            to_meter_id,
            retired.retired_seq,
            operator,
            approval,
            why,
        )
        return convert.retired_meter(retired)

    async def RequestAdjustment(
        self, request: pb.RequestAdjustmentRequest, context: Context
    ) -> pb.Adjustment:
        meter_id = check_id(request.meter_id, "meter id")
        amount = request.amount_cents
        if amount == 0 or abs(amount) > MAX_METER_CENTS:
            raise InvalidArgument(
                f"amount_cents must be a signed amount of cents, not 0 and at most "
                f"{MAX_METER_CENTS:,} either way; got {amount:,}",
                field="amount_cents",
            )
        why = convert.reason(request.reason)
        reference = convert.reason(request.reference, "reference")
        request_id = check_id(request.request_id, "request_id") if request.request_id else ""
        self._guard.refuse_group((await self._store.catalog.get_meter(meter_id)).link_group_id)
        operator = caller()
        record = await self._store.controls.request_adjustment(
            meter_id,
            amount,
            reason=why,
            reference=reference,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            request_id=request_id,
        )
        log.warning(
            "adjustment %s of meter %s by %s requested by %s (%s): %s",
            record.adjustment_id,
            meter_id,
            format_cents(amount),
            operator,
            reference,
            why,
        )
        return convert.adjustment(record)

    async def ApproveAdjustment(
        self, request: pb.ReviewAdjustmentRequest, context: Context
    ) -> pb.Adjustment:
        return await self._review_adjustment(request, approve=True)

    async def RejectAdjustment(
        self, request: pb.ReviewAdjustmentRequest, context: Context
    ) -> pb.Adjustment:
        return await self._review_adjustment(request, approve=False)

    async def _review_adjustment(
        self, request: pb.ReviewAdjustmentRequest, *, approve: bool
    ) -> pb.Adjustment:
        """The second person's decision: the decider is the caller's certificate identity."""
        adjustment_id = convert.adjustment_id(request.adjustment_id)
        note = check_text(request.note, "note", bounds.NOTE_MAX_CHARS)
        if not approve and not note:
            raise InvalidArgument("a rejection needs its reason: give the note", field="note")
        self._guard.refuse_group(adjustment_id.rpartition(":")[0])
        operator = caller()
        record = await self._store.controls.review_adjustment(
            adjustment_id,
            approve=approve,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            note=note,
        )
        log.warning("adjustment %s %s by %s", record.adjustment_id, record.status, operator)
        if approve:
            self._metrics.set_meter_states([await self._store.catalog.get_meter(record.meter_id)])
        return convert.adjustment(record)

    async def ListAdjustments(
        self, request: pb.ListAdjustmentsRequest, context: Context
    ) -> pb.ListAdjustmentsResponse:
        link_group_id = convert.optional_link_group_id(request.link_group_id)
        status = request.status
        if status and status not in ADJUSTMENT_STATUSES:
            raise InvalidArgument(
                f"status {excerpt(status)} is not one of {', '.join(ADJUSTMENT_STATUSES)}",
                field="status",
            )
        if link_group_id:
            await self._store.catalog.get_link_group(link_group_id)
        found = await self._store.controls.list_adjustments(link_group_id, status)
        return pb.ListAdjustmentsResponse(adjustments=[convert.adjustment(a) for a in found])

    async def UpdateTable(self, request: pb.UpdateTableRequest, context: Context) -> pb.Table:
        if not request.HasField("table"):
            raise InvalidArgument("table is required", field="table")
        why = convert.reason(request.reason)
        new = convert.table_config(request.table)
        # read fresh: a hit may have applied a staged change since this process cached it
        self._store.tables.forget_table(new.table_id)
        old = await self._store.tables.get_table(new.table_id)
        if (new.game, new.link_group_id) != (old.game, old.link_group_id):
            raise InvalidArgument(
                f"table {old.table_id} deals {old.game} in link group {old.link_group_id}; an "
                "update keeps both (retire the table and register a new one to change them)"
            )
        self._guard.refuse_group(old.link_group_id)
        for meter_id in new.meter_ids:
            meter = await self._store.catalog.get_meter(meter_id)
            if meter.link_group_id != new.link_group_id:
                raise InvalidConfiguration(
                    f"meter {meter_id} is in link group {meter.link_group_id}, not "
                    f"{new.link_group_id}; all of a table's meters are in its link group"
                )
        # as a registration: no "P% of meter" line pays from a must-hit-by meter
        await self._store.tables.check_percent_meters(keys.LinkGroupKeys(new.link_group_id), new)
        operator = caller()
        if request.at != pb.METER_CHANGE_AT_NOW:
            return await self._stage_table_change(request, old, new, why)
        changed = await self._store.controls.update_table(
            new, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        self._metrics.initialise_tables([new])
        if changed:
            log.warning("table %s updated by %s: %s", new.table_id, operator, why)
        return convert.table(await self._store.tables.get_table(new.table_id))

    async def _table_message(self, table: TableConfig) -> pb.Table:
        """A table for the wire, with the change staged for it (docs/staged-changes.md)."""
        current, staged = await self._staged_tables.staged(table)
        message = convert.table(current)
        if staged is not None:
            message.staged_change.CopyFrom(convert.staged_table_change(staged))
        return message

    async def _stage_table_change(
        self, request: pb.UpdateTableRequest, old: TableConfig, new: TableConfig, why: str
    ) -> pb.Table:
        """UpdateTable with ``at``: staged for the next hit or reset of ``at_meter_id``
        (validated as an immediate update was, by the caller; docs/staged-changes.md)."""
        when = convert.change_at(request.at)
        meter_id = check_id(request.at_meter_id, "at_meter_id")
        if meter_id not in old.meter_ids:
            raise InvalidArgument(
                f"table {old.table_id} does not feed meter {meter_id}; a table change waits "
                f"for the next {when} of one of its meters ({', '.join(old.meter_ids) or 'none'})",
                field="at_meter_id",
            )
        operator = caller()
        staged, seq = await self._staged_tables.stage(
            old,
            new,
            meter_id=meter_id,
            at=when,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            reason=why,
        )
        if staged:
            log.warning(
                "table %s: change staged for the next %s of meter %s at journal #%d by %s: %s",
                old.table_id,
                when,
                meter_id,
                seq,
                operator,
                why,
            )
        return await self._table_message(old)

    async def CancelStagedTableChange(
        self, request: pb.CancelStagedTableChangeRequest, context: Context
    ) -> pb.Table:
        table = await self._store.tables.get_table(convert.table_id(request.table_id))
        why = convert.reason(request.reason)
        seen = check_range(request.staged_seq, "staged_seq", 0, convert.MAX_ROUND_ID)
        self._guard.refuse_group(table.link_group_id)
        operator = caller()
        cancelled, seq = await self._staged_tables.cancel(
            table,
            actor=operator.uri,
            actor_cert=operator.fingerprint,
            reason=why,
            staged_seq=seen,
        )
        if cancelled:
            log.warning(
                "table %s: staged change #%d cancelled by %s: %s",
                table.table_id,
                seq,
                operator,
                why,
            )
        return await self._table_message(table)

    async def RetireTable(
        self, request: pb.RetireTableRequest, context: Context
    ) -> pb.RetireTableResponse:
        table_id = convert.table_id(request.table_id)
        why = convert.reason(request.reason)
        operator = caller()
        try:
            table = await self._store.tables.get_table(table_id)
        except NotFound:
            # A retirement repeated: the store answers it (or says it was another's).
            table = await self._store.controls.retired_table(table_id)
        self._guard.refuse_group(table.link_group_id)
        seq = await self._store.controls.retire_table(
            table, actor=operator.uri, actor_cert=operator.fingerprint, reason=why
        )
        log.warning("table %s retired at journal #%d by %s: %s", table_id, seq, operator, why)
        return pb.RetireTableResponse(table_id=table_id, retired_seq=seq)

    # ------------------------------------------------------------ payout compliance

    def _slip(self, record: Jackpot) -> pb.Jackpot:
        """A jackpot for the wire with what its hand-pay requires (docs/payout-compliance.md)."""
        return convert.jackpot(with_requirements(self._payout_compliance, record))

    async def WitnessJackpotPayment(
        self, request: pb.WitnessJackpotPaymentRequest, context: Context
    ) -> pb.Jackpot:
        """A second person (the caller's certificate) witnesses an approved jackpot's
        hand-pay before it is recorded as paid."""
        record = await witness_jackpot(self._store, caller(), request.jackpot_id, request.note)
        return self._slip(record)
