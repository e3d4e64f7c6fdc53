"""TableService: what a table agent calls at lockout, chip count, settlement, void and
irregularity, and meter displays.

Each method checks its request, evaluates what the domain decides (hands, awards), runs one
atomic store step and translates the answer; who may call (a table for its own table only)
is checked, and errors are mapped to status codes, by the interceptor.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeAlias, TypeVar, cast

from grpc import aio

from controller.api import convert
from controller.api.meter_watch import MeterWatcher
from controller.domain.bounds import MAX_WATCH_INTERVAL_MS, check_range
from controller.domain.config import TableConfig
from controller.domain.digests import lockout_fingerprint, settle_fingerprint, void_fingerprint
from controller.domain.lockout import check_lockout
from controller.domain.players import seat_players
from controller.domain.rounds import RoundCards
from controller.domain.settlement import plan_settlement
from controller.observability.metrics import Metrics
from controller.store.locked_rounds import LockedRound
from controller.store.redis_store import RedisStore
from controller.store.state_guard import StateGuard
from jackpot.epochs import NO_POSITION, JournalPosition, PositionMacs
from jackpot.errors import (
    IdempotencyConflict,
    InvalidArgument,
    LinkGroupStopped,
    NotConfirmed,
    NotFound,
    PositionUnverified,
    RoundStateError,
)
from jackpot.irregularities import irregularity_rule
from jackpot.kinds import IrregularityKind
from jackpot.money import format_cents
from jackpot.results import SeatOutcome, SettleResult
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.wire import compile_encoders, enum_member, to_message

log = logging.getLogger("controller.rounds")

compile_encoders(  # the answers this module encodes, compiled now (jackpot.codegen)
    pb.LockoutResponse,
    pb.SettleResponse,
    pb.VoidRoundResponse,
    pb.MeterValue,
    pb.JournalPosition,
    pb.ReportChipCountResponse,
    pb.ReportIrregularityResponse,
)

_KINDS = pb.IrregularityKind.DESCRIPTOR
MAX_CHIPS = 10_000
"""The most value chips a dealer's count may report (a table holds at most a few dozen)."""

DEFAULT_WATCH_INTERVAL_MS = 250
MIN_WATCH_INTERVAL_MS = 50

Result = TypeVar("Result")
Answer = TypeVar(
    "Answer",
    pb.LockoutResponse,
    pb.SettleResponse,
    pb.VoidRoundResponse,
    pb.ReportChipCountResponse,
    pb.ReportIrregularityResponse,
    pb.GetTableResponse,
)
Context: TypeAlias = "aio.ServicerContext[object, object]"


class TableService(pb_grpc.TableServiceServicer):
    """The agent-facing service."""

    def __init__(
        self,
        store: RedisStore,
        metrics: Metrics,
        watcher: MeterWatcher,
        guard: StateGuard,
        position_key: bytes | None = None,
    ) -> None:
        self._store = store
        self._rounds = store.rounds  # the hot path's aggregates, bound once
        self._tables = store.tables
        self._metrics = metrics
        self._watcher = watcher
        self._guard = guard
        self._macs = PositionMacs(position_key) if position_key is not None else None
        self._staged_tables = store.staged_tables  # GetTable shows a staged table change

    def _known(self, table_id: str, wire: pb.JournalPosition) -> JournalPosition:
        """The position the table sends (checked), verified when its mac is this
        controller's for this table (docs/journal.md, "Verified positions")."""
        known = convert.known_position(wire)
        return known if self._macs is None else self._macs.verify(table_id, known)

    def _answer(self, table_id: str, answer: Answer) -> Answer:
        """``answer`` with its journal position's mac for ``table_id`` (none without a key)."""
        if self._macs is not None and answer.journal.epoch:
            journal = answer.journal
            journal.mac = self._macs.sign(table_id, journal.epoch, journal.seq)
        return answer

    async def _step(
        self, table_id: str, step: Awaitable[Result], record: Callable[[Result], None]
    ) -> Result:
        """:func:`_recorded`, counting a refused unverifiable position of the table."""
        try:
            return await _recorded(step, record)
        except PositionUnverified as error:
            self._refused_position(table_id, error)
            raise

    def _refused_position(self, table_id: str, error: PositionUnverified) -> None:
        self._metrics.position_ahead.labels(table=table_id).inc()
        log.warning("position table=%s refused, its link group serves on: %s", table_id, error)

    async def _table(self, table_id: str, known: JournalPosition = NO_POSITION) -> TableConfig:
        """The registered table; UNAVAILABLE while its link group is not served, when the
        table was acknowledged journal positions (``known``: it cannot be unknown, its link
        group's state is missing), and when Redis holds no state at all though this
        controller saw some: lost, not unknown."""
        self._guard.refuse_table(table_id)
        try:
            table = await self._tables.get_table(table_id)
        except NotFound:
            if known.epoch:
                raise LinkGroupStopped(
                    f"table {table_id} was acknowledged journal #{known.seq} of epoch "
                    f"{known.epoch} but Redis does not know it: its link group's state is "
                    'missing; an operator must restore it (RUNBOOK: "Redis lost its data")'
                ) from None
            saw_state = self._guard.installed or bool(self._guard.known())
            if saw_state and await self._store.catalog.installation() is None:
                raise LinkGroupStopped(
                    f"table {table_id} cannot be served: Redis holds no jackpot state (no "
                    'installation record); an operator must restore it (RUNBOOK: "Redis lost '
                    'its data")'
                ) from None
            raise
        self._guard.tables.setdefault(table_id, table.link_group_id)
        return table

    async def Lockout(self, request: pb.LockoutRequest, context: Context) -> pb.LockoutResponse:
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        wagers = check_lockout(table, convert.wagers(request.wagers))
        if request.players:  # docs/staged-changes.md: only then
            pairs = [(item.seat, item.player_token) for item in request.players]
            wagers = tuple(seat_players(wagers, pairs))
        result = await self._step(
            table_id,
            self._rounds.lockout(table, round_id, wagers, lockout_fingerprint(wagers), known),
            self._metrics.record_lockout,
        )
        log.debug(
            "lockout table=%s round=%s wagers=%d replay=%s",
            table_id,
            round_id,
            len(result.accepted),
            result.replayed,
        )
        return self._answer(table_id, to_message(result, pb.LockoutResponse))

    async def Settle(self, request: pb.SettleRequest, context: Context) -> pb.SettleResponse:
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        cards = convert.round_cards(request, table.game_rules.facts.joker)
        fingerprint = settle_fingerprint(cards)
        locked = await self._locked_round(table, round_id, known)
        try:
            result = await self._settle(table, round_id, locked, cards, fingerprint, known)
        except (IdempotencyConflict, InvalidArgument):
            if not locked.remembered:
                raise
            # Perhaps what this process remembered of the lockout is not the round's (locked
            # out again after a rebase or a restore): the plan or the script refused it,
            # changing nothing. Plan once more against the round as Redis has it.
            locked = await self._locked_round(table, round_id, known, fresh=True)
            result = await self._settle(table, round_id, locked, cards, fingerprint, known)
        self._metrics.record_wager_lines(table, result)
        for seat in result.results:
            if seat.outcome is SeatOutcome.PAID and not result.replayed:
                log.info(
                    "award table=%s round=%s seat=%d wager=%s hand=%s award=%r amount=%s "
                    "pending=%s seq=%d",
                    table_id,
                    round_id,
                    seat.seat,
                    seat.kind,
                    seat.hand,
                    seat.award_text,
                    format_cents(seat.amount_cents),
                    seat.pending_validation,
                    seat.journal_seq,
                )
        return self._answer(table_id, to_message(result, pb.SettleResponse))

    async def _locked_round(
        self, table: TableConfig, round_id: int, known: JournalPosition, *, fresh: bool = False
    ) -> LockedRound:
        """The round's lockout (remembered, else read; ``fresh``: read); refused if it was
        never locked out."""
        locked = await self._rounds.locked_round(table, round_id, fresh=fresh)
        if locked is None:
            # Missing: never locked out - or lost with Redis's data, which the epoch tells
            # (UNAVAILABLE, the report is kept) before a refusal the table would drop.
            await self._check_position(table, known)
            raise RoundStateError(
                f"round {round_id} of table {table.table_id} was never locked out (or its "
                "record has expired); a round is settled only after its lockout"
            )
        return locked

    async def _settle(
        self,
        table: TableConfig,
        round_id: int,
        locked: LockedRound,
        cards: RoundCards,
        fingerprint: str,
        known: JournalPosition,
    ) -> SettleResult:
        """Plan the settlement against ``locked`` and apply it (one atomic step)."""
        plan = plan_settlement(table, locked.wagers, cards)
        return await self._step(
            table.table_id,
            self._rounds.settle(
                table,
                round_id,
                plan,
                locked.lockout_fingerprint,
                fingerprint,
                known,
                rest_of_round_void=bool(cards.rest_of_round_void),
            ),
            self._metrics.record_settle,
        )

    async def VoidRound(
        self, request: pb.VoidRoundRequest, context: Context
    ) -> pb.VoidRoundResponse:
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        reason = convert.reason(request.reason)
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        result = await self._step(
            table_id,
            self._rounds.void_round(table, round_id, reason, void_fingerprint(reason), known),
            self._metrics.record_void,
        )
        log.info(
            "void table=%s round=%s reason=%r wagers=%d replay=%s",
            table_id,
            round_id,
            reason,
            len(result.reversed),
            result.replayed,
        )
        return self._answer(table_id, to_message(result, pb.VoidRoundResponse))

    async def WatchMeters(
        self, request: pb.WatchMetersRequest, context: Context
    ) -> AsyncIterator[pb.MeterSnapshot]:
        table = await self._table(convert.table_id(request.table_id))
        interval_ms = check_range(
            request.min_interval_ms, "min_interval_ms", 0, MAX_WATCH_INTERVAL_MS
        )
        interval_s = max(interval_ms or DEFAULT_WATCH_INTERVAL_MS, MIN_WATCH_INTERVAL_MS) / 1000
        self._metrics.meter_streams.inc()
        try:
            async for values in self._watcher.watch(table.link_group_id, interval_s):
                yield pb.MeterSnapshot(meters=[to_message(m, pb.MeterValue) for m in values])
        finally:
            self._metrics.meter_streams.dec()

    async def GetTable(self, request: pb.GetTableRequest, context: Context) -> pb.GetTableResponse:
        table_id = convert.table_id(request.table_id)
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        journal = await self._check_position(table, known)
        current, staged = await self._staged_tables.staged(table)  # not on a round's path
        if current != table:  # a hit applied a staged change since this process cached it
            self._tables.forget_table(table_id)
        answer = pb.GetTableResponse(
            table=convert.table(current),
            last_round_id=await self._tables.last_round(current),
            max_round_step=self._rounds.max_round_step,
            journal=to_message(journal, pb.JournalPosition),
        )
        if staged is not None:
            answer.table.staged_change.CopyFrom(convert.staged_table_change(staged))
        return self._answer(table_id, answer)

    async def _check_position(self, table: TableConfig, known: JournalPosition) -> JournalPosition:
        """Judge the table's position (``check_position.lua``); answer the journal's."""
        try:
            return await self._store.epochs.check_position(
                table.link_group_id, f"table {table.table_id}", known
            )
        except PositionUnverified as error:
            self._refused_position(table.table_id, error)
            raise

    async def ReportChipCount(
        self, request: pb.ReportChipCountRequest, context: Context
    ) -> pb.ReportChipCountResponse:
        """The dealer's chip count after the lockout (§ 639a.8(b)); a count that differs from
        the accepted Progressive Payout Wagers holds the round for a supervisor."""
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        chips = check_range(request.chips, "chips", 0, MAX_CHIPS)
        result = await self._step(
            table_id,
            self._rounds.report_chip_count(table, round_id, chips, known),
            self._metrics.record_chip_count,
        )
        if not result.matched and not result.replayed:
            log.warning(
                "irregularity table=%s round=%s chip_count=%d accepted=%d: held for a supervisor",
                table_id,
                round_id,
                result.chips,
                result.accepted,
            )
        return self._answer(table_id, to_message(result, pb.ReportChipCountResponse))

    async def ReportIrregularity(
        self, request: pb.ReportIrregularityRequest, context: Context
    ) -> pb.ReportIrregularityResponse:
        """A seeded irregularity: its effect at the table's game (void, or the bonus wagers
        still settle), journaled with its section."""
        table_id, round_id = convert.round_key(request.table_id, request.round_id)
        kind: IrregularityKind | None = enum_member(request.kind, IrregularityKind, _KINDS)
        if kind is None:
            raise InvalidArgument(f"kind {request.kind} is not an irregularity kind", field="kind")
        known = self._known(table_id, request.known)
        table = await self._table(table_id, known)
        rule = irregularity_rule(table.game, kind, after_initial_cards=request.after_initial_cards)
        result = await self._step(
            table_id,
            self._rounds.report_irregularity(table, round_id, kind, rule, known),
            self._metrics.record_irregularity,
        )
        log.info(
            "irregularity table=%s round=%s kind=%s effect=%s section=%r replay=%s",
            table_id,
            round_id,
            kind,
            result.effect,
            result.section,
            result.replayed,
        )
        return self._answer(table_id, to_message(result, pb.ReportIrregularityResponse))


async def _recorded(step: Awaitable[Result], record: Callable[[Result], None]) -> Result:
    """Await a store step and count it in the metrics, also when it was applied but too few
    Redis replicas confirmed it (the caller gets UNAVAILABLE and its retry is a replay)."""
    try:
        result = await step
    except NotConfirmed as error:
        record(cast(Result, error.reply))
        raise
    record(result)
    return result
