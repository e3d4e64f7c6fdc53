"""The agent's connection to the controller: the only agent module that sees protobuf.

It reads the table's registration (game, seats, offered wagers) from AdminService.ListTables
and sends the round reports of TableService (lockout, chip count, settlement, void,
irregularity).

Every call carries the last journal position the controller acknowledged to this table
(:attr:`ControllerClient.known`, kept by the table's outbox across restarts): a controller
whose Redis lacks it stops the link group rather than serve lost state (design.md, "Epochs").

Every report is sent with its idempotency key (table, round, phase) and, on a transient
failure (UNAVAILABLE, DEADLINE_EXCEEDED, ...), sent again unchanged - the controller answers a
repeat with the original answer - until it is acknowledged or ``retry_for_s`` has passed.
A refusal (INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND, ...) is final and raised as
:class:`ControllerRefused` with the controller's message, for the dealer to act on.

Every answer of the controller (a reply, or a refusal of a call's content) is noted on the
client's :class:`~table_agent.link.Link`, which says when the table is PROGRESSIVE OFFLINE;
:meth:`ControllerClient.probe` asks the controller when the table has nothing to report.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc
from grpc import aio

from jackpot import tls
from jackpot.epochs import NO_POSITION, JournalPosition
from jackpot.errors import InvalidArgument
from jackpot.kinds import IrregularityKind, WagerKind
from jackpot.results import (
    ChipCountResult,
    IrregularityResult,
    LockoutResult,
    SettleResult,
    VoidResult,
)
from jackpot.rich_status import details_of
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.wire import compile_decoders, enum_member, enum_number, from_message
from table_agent.deck import card_texts
from table_agent.link import Link
from table_agent.reports import SettleReport
from table_agent.wagers import PlacedWager, TableLayout, WagerOffer

log = logging.getLogger("table_agent.client")

compile_decoders(  # the answers this module decodes, compiled now (jackpot.codegen)
    (pb.LockoutResponse, LockoutResult),
    (pb.SettleResponse, SettleResult),
    (pb.VoidRoundResponse, VoidResult),
    (pb.ReportChipCountResponse, ChipCountResult),
    (pb.ReportIrregularityResponse, IrregularityResult),
)

# Every report is idempotent, so anything that is not a refusal of its content is retried:
# transient states, errors the controller did not expect (INTERNAL, UNKNOWN), and a record
# of the controller's that is corrupt (DATA_LOSS): the report stays in the outbox, the table
# is PROGRESSIVE OFFLINE, and the report goes through once an engineer mends the record.
RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)

# Refusals of a call's content: the controller read the call to refuse it, so the link works.
# A refusal of the caller (PERMISSION_DENIED, UNAUTHENTICATED) is no answer for the table.
CONTENT_REFUSALS = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
    }
)

Response = TypeVar("Response")
MAX_RETRY_DELAY_S = 1.0
MAX_ADVISED_DELAY_S = 5.0
"""The longest a retry waits when the controller's RetryInfo asks for longer."""
PROBE_TIMEOUT_S = 2.0


class ControllerRefused(Exception):
    """The controller refused a report; ``code`` is the gRPC status, the message its words.
    ``reason`` is the machine-readable reason of the refusal (``ROUND_STATE``,
    ``INVALID_CARDS``; docs/reference/errors.md) and ``field`` the request field at fault,
    both "" when the controller sent none."""

    def __init__(
        self, code: grpc.StatusCode, message: str, reason: str = "", field: str = ""
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.field = field


class ControllerUnreachable(Exception):
    """The report could not be delivered within the retry window; it must be sent again."""


class ControllerMisconfigured(ControllerUnreachable):
    """The controller cannot be reached because of the TLS configuration, the table's or
    the controller's (:func:`jackpot.tls.diagnose`, in one sentence): retrying cannot mend
    it, so the report is left in the outbox at once."""


DIAGNOSE_EVERY_S = 5.0
"""How often a client that is not answered looks for why (a TLS handshake of its own)."""


_WAGER_KINDS = pb.WagerKind.DESCRIPTOR
_IRREGULARITY_KINDS = pb.IrregularityKind.DESCRIPTOR


def _wire_wager(wager: PlacedWager) -> pb.Wager:
    return pb.Wager(
        seat=wager.seat,
        kind=pb.WagerKind.ValueType(enum_number(wager.kind, _WAGER_KINDS)),
        amount_cents=wager.amount_cents,
        on_dealer_hand=wager.on_dealer_hand,
        envy=wager.envy,
    )


def _settle_request(table_id: str, round_id: int, report: SettleReport) -> pb.SettleRequest:
    seats = [
        pb.SeatCards(
            seat=seat,
            cards=card_texts(cards),
            base_game_win_cents=report.base_game_win_cents.get(seat, 0),
        )
        for seat, cards in sorted(report.hands.items())
    ]
    seats += [pb.SeatCards(seat=seat, folded=True) for seat in sorted(report.folded)]
    return pb.SettleRequest(
        table_id=table_id,
        round_id=round_id,
        seats=seats,
        dealer_cards=card_texts(report.dealer),
        community_cards=card_texts(report.community),
        rest_of_round_void=report.rest_of_round_void,
    )


def table_layout(table: pb.Table) -> TableLayout:
    """The agent's view of a registration: the wagers it offers. Kinds this agent does not
    know are left out (logged); raise ValueError for limits that are not a positive range."""
    offers = []
    for offer in table.wagers:
        kind: WagerKind | None = enum_member(offer.kind, WagerKind, _WAGER_KINDS)
        if kind is None:
            log.warning("table %s offers wager kind %d, unknown here", table.table_id, offer.kind)
            continue
        offers.append(
            WagerOffer(
                kind, offer.min_cents, offer.max_cents, offer.paytable, bool(offer.envy_lines)
            )
        )
    return TableLayout(
        table.table_id, table.game, table.seats, tuple(offers), table.payout_limit_cents
    )


def _meters(values: Sequence[pb.MeterValue]) -> dict[str, int]:
    return {value.meter_id: value.amount_cents for value in values}


@dataclass(frozen=True, slots=True)
class TableInfo:
    """The table as the controller has it: its layout and its last locked-out round."""

    layout: TableLayout
    last_round_id: int
    max_round_step: int


@dataclass(frozen=True, slots=True)
class CorrectionAnswer:
    """The controller's answer to a correction request from the dealer console: its id and
    status, and per seat the difference in cents (positive: pay; negative: recover)."""

    correction_id: str
    status: str
    seats: tuple[tuple[int, int], ...]
    pay_cents: int
    recover_cents: int


class ControllerClient:
    """TableService over one gRPC channel to ``target`` (HOST:PORT), with the table's
    certificate (``tls``; None only for a development controller started ``--insecure``).
    ``link`` notes every answer (a new one, PROGRESSIVE OFFLINE after 30 s, by default)."""

    known: JournalPosition = NO_POSITION
    """The last journal position the controller answered this table (see the module)."""

    def __init__(
        self,
        target: str,
        *,
        tls_files: tls.ClientTLS | None = None,
        call_timeout_s: float = 5.0,
        retry_for_s: float = 300.0,
        channel: aio.Channel | None = None,
        link: Link | None = None,
    ) -> None:
        self._target = None if channel else target
        self._tls_files = tls_files
        self._diagnosed_at = -DIAGNOSE_EVERY_S
        self._why: tls.Unreachable | None = None
        """The last diagnosis while the controller does not answer."""
        self._channel = channel or tls.aio_channel(target, tls_files)
        self._stub = pb_grpc.TableServiceStub(self._channel)
        self._call_timeout_s = call_timeout_s
        self._retry_for_s = retry_for_s
        self.link = link or Link()

    @property
    def retry_for_s(self) -> float:
        """How long a report is retried before :class:`ControllerUnreachable`."""
        return self._retry_for_s

    def _answered(self, wire: pb.JournalPosition) -> None:
        try:
            self.known = self.known.later(JournalPosition(wire.epoch, wire.seq, wire.mac))
        except InvalidArgument as error:  # a controller of another make: keep what we know
            log.warning("the controller answered an unusable journal position: %s", error)

    def _known(self) -> pb.JournalPosition:
        return pb.JournalPosition(epoch=self.known.epoch, seq=self.known.seq, mac=self.known.mac)

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close(None)

    async def _call(self, what: str, send: Callable[[], Awaitable[Response]]) -> Response:
        """Send until answered or refused: retries back off from 50 ms to at most 1 s, with
        jitter (many tables never retry in step), so a report goes through within about a
        second of the controller's return."""
        deadline = time.monotonic() + self._retry_for_s
        delay_s = 0.05
        while True:
            try:
                answer = await send()
            except aio.AioRpcError as error:
                code = error.code()
                if code in CONTENT_REFUSALS:
                    self.link.answered()
                said_details = details_of(error.trailing_metadata())
                if code not in RETRYABLE:
                    raise ControllerRefused(
                        code, error.details() or "", said_details.reason, said_details.field
                    ) from None
                pause_s = delay_s * random.uniform(0.5, 1.0)
                if code is grpc.StatusCode.RESOURCE_EXHAUSTED and said_details.retry_after_s:
                    # The rate limit says when the next call is admitted; a refused call takes
                    # from the rate too, so a sooner one is refused again.
                    pause_s = max(pause_s, min(said_details.retry_after_s, MAX_ADVISED_DELAY_S))
                why = await self._diagnose() if code is grpc.StatusCode.UNAVAILABLE else None
                if time.monotonic() + pause_s > deadline:
                    said = why.sentence if why else f"{code.name}: {error.details()}"
                    raise ControllerUnreachable(
                        f"{what}: controller unreachable for {self._retry_for_s:.0f}s ({said})"
                    ) from None
                log.warning(
                    "%s: %s (%s); retrying the same report in %.2fs",
                    what,
                    code.name,
                    error.details(),
                    pause_s,
                )
                await asyncio.sleep(pause_s)
                delay_s = min(delay_s * 2, MAX_RETRY_DELAY_S)
            else:
                self._why = None
                self.link.answered()
                return answer

    async def _diagnose(self) -> tls.Unreachable | None:
        """Why the controller does not answer (at most every :data:`DIAGNOSE_EVERY_S`);
        :class:`ControllerMisconfigured` when two diagnoses in a row find the TLS
        configuration wrong (one could be a controller stopping mid-handshake)."""
        now = time.monotonic()
        if self._target is None or now - self._diagnosed_at < DIAGNOSE_EVERY_S:
            return self._why
        self._diagnosed_at = now
        why = await asyncio.to_thread(tls.diagnose, self._target, self._tls_files)
        if why is not None and why.lasting and self._why is not None and self._why.lasting:
            raise ControllerMisconfigured(why.sentence)
        self._why = why
        log.warning("the controller does not answer: %s", why or "no reason found")
        return why

    async def get_table(self, table_id: str) -> TableInfo:
        """The table's registration and last round (TableService.GetTable); a table the
        controller does not know is :class:`ControllerRefused` (NOT_FOUND)."""
        request = pb.GetTableRequest(table_id=table_id, known=self._known())
        reply = await self._call(
            f"get table {table_id}",
            lambda: self._stub.GetTable(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return TableInfo(table_layout(reply.table), reply.last_round_id, reply.max_round_step)

    async def probe(self, table_id: str) -> bool:
        """Ask the controller once (TableService.GetTable, no retry, a short deadline)
        whether it answers; True if it did. For a table with nothing to report."""
        request = pb.GetTableRequest(table_id=table_id, known=self._known())
        try:
            reply = await self._stub.GetTable(
                request, timeout=min(PROBE_TIMEOUT_S, self._call_timeout_s)
            )
        except aio.AioRpcError as error:
            if error.code() in CONTENT_REFUSALS:
                self.link.answered()
                return True
            log.debug("probe of the controller: %s (%s)", error.code().name, error.details())
            return False
        self.link.answered()
        self._answered(reply.journal)
        return True

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[PlacedWager]
    ) -> LockoutResult:
        """Send "no more bets" with the accepted wagers."""
        request = pb.LockoutRequest(
            table_id=table_id,
            round_id=round_id,
            wagers=[_wire_wager(w) for w in wagers],
            known=self._known(),
        )
        reply = await self._call(
            f"lockout {table_id}/{round_id}",
            lambda: self._stub.Lockout(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return from_message(reply, LockoutResult)

    async def settle(self, table_id: str, round_id: int, report: SettleReport) -> SettleResult:
        """Send the round's cards; answer every result in settlement order."""
        request = _settle_request(table_id, round_id, report)
        request.known.CopyFrom(self._known())
        reply = await self._call(
            f"settle {table_id}/{round_id}",
            lambda: self._stub.Settle(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return from_message(reply, SettleResult)

    async def void_round(self, table_id: str, round_id: int, reason: str) -> VoidResult:
        """VoidResult a locked round for ``reason``; answer the reversal and the meters after it."""
        request = pb.VoidRoundRequest(
            table_id=table_id, round_id=round_id, reason=reason, known=self._known()
        )
        reply = await self._call(
            f"void {table_id}/{round_id}",
            lambda: self._stub.VoidRound(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return from_message(reply, VoidResult)

    async def report_chip_count(self, table_id: str, round_id: int, chips: int) -> ChipCountResult:
        """Send the dealer's count of the value chips collected for Progressive Payout Wagers
        after the lockout (§ 639a.8(b)); answer the count beside the wagers accepted. Not
        ``matched``: the round is held until a supervisor confirms or voids it (its settlement
        is refused meanwhile)."""
        request = pb.ReportChipCountRequest(
            table_id=table_id, round_id=round_id, chips=chips, known=self._known()
        )
        reply = await self._call(
            f"chip count {table_id}/{round_id}",
            lambda: self._stub.ReportChipCount(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return from_message(reply, ChipCountResult)

    async def report_irregularity(
        self,
        table_id: str,
        round_id: int,
        kind: IrregularityKind,
        *,
        after_initial_cards: bool = False,
    ) -> IrregularityResult:
        """Report a seeded irregularity of a locked-out round; answer its effect and section
        (:mod:`jackpot.irregularities`): the round voided (the reversal and the meters after
        it), or ``bonus_settles``: settle with ``rest_of_round_void`` = the answer's reason.
        ``after_initial_cards``: cards found face up after every player and the dealer had
        their first two cards (Texas Hold 'Em Bonus, § 647a.13(a))."""
        request = pb.ReportIrregularityRequest(
            table_id=table_id,
            round_id=round_id,
            kind=pb.IrregularityKind.ValueType(enum_number(kind, _IRREGULARITY_KINDS)),
            after_initial_cards=after_initial_cards,
            known=self._known(),
        )
        reply = await self._call(
            f"irregularity {table_id}/{round_id}",
            lambda: self._stub.ReportIrregularity(request, timeout=self._call_timeout_s),
        )
        self._answered(reply.journal)
        return from_message(reply, IrregularityResult)

    async def watch_meters(
        self, table_id: str, min_interval_ms: int = 250
    ) -> AsyncGenerator[dict[str, int], None]:
        """Meter values for the table's display: now, then at every change (each one an
        answer of the controller)."""
        request = pb.WatchMetersRequest(table_id=table_id, min_interval_ms=min_interval_ms)
        async for snapshot in self._stub.WatchMeters(request):
            self.link.answered()
            yield _meters(snapshot.meters)

    async def request_correction(
        self, table_id: str, round_id: int, report: SettleReport, reason: str
    ) -> CorrectionAnswer:
        """Ask for the correction of ``round_id`` (just settled, before the table's next
        lockout: the dealer's window) to the cards of ``report``, the wagers as accepted, for
        ``reason``; a supervisor approves it at the controller (docs/corrections.md). Not an
        outbox report: idempotent by its content, the dealer asks again if it went unanswered."""
        settle = _settle_request(table_id, round_id, report)
        request = pb.RequestCorrectionRequest(
            table_id=table_id,
            round_id=round_id,
            same_wagers=True,
            seats=settle.seats,
            dealer_cards=settle.dealer_cards,
            community_cards=settle.community_cards,
            reason=reason,
        )
        admin = pb_grpc.AdminServiceStub(self._channel)
        reply: pb.Correction = await self._call(
            f"correction {table_id}/{round_id}",
            lambda: admin.RequestCorrection(request, timeout=self._call_timeout_s),
        )
        return CorrectionAnswer(
            reply.correction_id,
            reply.status,
            tuple((s.seat, s.delta_cents) for s in reply.seats),
            reply.pay_cents,
            reply.recover_cents,
        )
