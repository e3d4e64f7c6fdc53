"""The agent's connection to the controller: the only agent module that sees protobuf.

Every report is sent with its idempotency key (table, round, phase) and, on a transient
failure (UNAVAILABLE, DEADLINE_EXCEEDED, ...), sent again unchanged - the controller answers a
repeat with the original answer - until it is acknowledged or ``retry_for_s`` has passed.
A refusal (INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND, ...) is final and raised as
:class:`ControllerRefused` with the controller's message, for the dealer to act on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import grpc
from grpc import aio

from controller.domain.cards import Card
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc

log = logging.getLogger("table_agent.client")

# Every report is idempotent, so anything that is not a refusal of its content is retried:
# transient states, and errors the controller did not expect (INTERNAL, UNKNOWN).
RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)

Response = TypeVar("Response")


class ControllerRefused(Exception):
    """The controller refused a report; ``code`` is the gRPC status, the message its reason."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class ControllerUnreachable(Exception):
    """The report could not be delivered within the retry window; it must be sent again."""


@dataclass(frozen=True, slots=True)
class SeatAward:
    """One paid seat, as the controller computed it (cents)."""

    seat: int
    hand: str
    award_text: str
    amount_cents: int
    pending_validation: bool
    jackpot_id: str
    meter_before_cents: int
    meter_after_cents: int


@dataclass(frozen=True, slots=True)
class Settlement:
    """The controller's answer to a settlement."""

    awards: tuple[SeatAward, ...]
    hands: dict[int, str]
    meter_cents: dict[str, int]


@dataclass(frozen=True, slots=True)
class Lockout:
    """The controller's answer to a lockout."""

    accepted_seats: tuple[int, ...]
    meter_cents: dict[str, int]


def _meters(values: Sequence[pb.MeterValue]) -> dict[str, int]:
    return {value.meter_id: value.amount_cents for value in values}


class ControllerClient:
    """TableService over one gRPC channel to ``target`` (HOST:PORT)."""

    def __init__(
        self,
        target: str,
        *,
        call_timeout_s: float = 5.0,
        retry_for_s: float = 300.0,
        channel: aio.Channel | None = None,
    ) -> None:
        self._channel = channel or aio.insecure_channel(target)
        self._stub = pb_grpc.TableServiceStub(self._channel)
        self._call_timeout_s = call_timeout_s
        self._retry_for_s = retry_for_s

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close(None)

    async def _call(self, what: str, send: Callable[[], Awaitable[Response]]) -> Response:
        deadline = time.monotonic() + self._retry_for_s
        delay_s = 0.05
        while True:
            try:
                return await send()
            except aio.AioRpcError as error:
                code = error.code()
                if code not in RETRYABLE:
                    raise ControllerRefused(code, error.details() or "") from None
                if time.monotonic() + delay_s > deadline:
                    raise ControllerUnreachable(
                        f"{what}: controller unreachable for {self._retry_for_s:.0f}s "
                        f"({code.name}: {error.details()})"
                    ) from None
                log.warning(
                    "%s: %s (%s); retrying the same report in %.2fs",
                    what,
                    code.name,
                    error.details(),
                    delay_s,
                )
                await asyncio.sleep(delay_s)
                delay_s = min(delay_s * 2, 2.0)

    async def lockout(
        self, table_id: str, round_id: int, wagers: Sequence[tuple[int, int]]
    ) -> Lockout:
        """Send "no more bets" with the accepted wagers as (seat, amount_cents)."""
        request = pb.LockoutRequest(
            table_id=table_id,
            round_id=round_id,
            wagers=[
                pb.Wager(seat=seat, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=amount)
                for seat, amount in wagers
            ],
        )
        reply = await self._call(
            f"lockout {table_id}/{round_id}",
            lambda: self._stub.Lockout(request, timeout=self._call_timeout_s),
        )
        return Lockout(tuple(w.seat for w in reply.accepted), _meters(reply.meters))

    async def settle(
        self,
        table_id: str,
        round_id: int,
        hands: Mapping[int, Sequence[Card]],
        folded: Sequence[int],
        dealer: Sequence[Card],
    ) -> Settlement:
        """Send the cards of every seat still in the round, the folded seats and the dealer's."""
        seats = [
            pb.SeatCards(seat=seat, cards=[str(c) for c in cards])
            for seat, cards in sorted(hands.items())
        ]
        seats += [pb.SeatCards(seat=seat, folded=True) for seat in sorted(folded)]
        request = pb.SettleRequest(
            table_id=table_id, round_id=round_id, seats=seats, dealer_cards=[str(c) for c in dealer]
        )
        reply = await self._call(
            f"settle {table_id}/{round_id}",
            lambda: self._stub.Settle(request, timeout=self._call_timeout_s),
        )
        awards = tuple(
            SeatAward(
                r.seat,
                r.hand,
                r.award_text,
                r.amount_cents,
                r.pending_validation,
                r.jackpot_id,
                r.meter_before_cents,
                r.meter_after_cents,
            )
            for r in reply.results
            if r.outcome == pb.SEAT_OUTCOME_PAID
        )
        return Settlement(awards, {r.seat: r.hand for r in reply.results}, _meters(reply.meters))

    async def void_round(self, table_id: str, round_id: int, reason: str) -> dict[str, int]:
        """Void a locked round for ``reason``; answer the meters after the reversal."""
        request = pb.VoidRoundRequest(table_id=table_id, round_id=round_id, reason=reason)
        reply = await self._call(
            f"void {table_id}/{round_id}",
            lambda: self._stub.VoidRound(request, timeout=self._call_timeout_s),
        )
        return _meters(reply.meters)

    async def watch_meters(
        self, table_id: str, min_interval_ms: int = 250
    ) -> AsyncIterator[dict[str, int]]:
        """Meter values for the table's display: now, then at every change."""
        request = pb.WatchMetersRequest(table_id=table_id, min_interval_ms=min_interval_ms)
        async for snapshot in self._stub.WatchMeters(request):
            yield _meters(snapshot.meters)
