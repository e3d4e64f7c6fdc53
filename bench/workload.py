"""What the benchmark sends: the floor's configuration, health checks and Caribbean Stud rounds.

A round is a Lockout of progressive wagers of ``WAGER_CENTS`` cents at every seat (1..7),
then a Settle with those seats' cards and the dealer's, dealt by § 639a.8(d) from a deck
shuffled with a seeded PRNG (reproducible, and cheaper for the client than the CSPRNG).
Latencies are recorded in seconds.

The load generator's rounds (:meth:`Floor.play`) send their requests as wire bytes and take the
replies as bytes, as the echo baseline does (:mod:`bench.echo`): the generator then spends
about what it spends on an echo call, and the ratio compares the servers. The bytes are the
same messages :func:`round_requests` builds (a test holds them equal); the deals come from a
pool of ``DEAL_POOL`` seeded shuffles made before the first round, each round taking the next.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpc import aio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from bench.loadgen import Recorder
from controller.store import keys
from jackpot.cards import FULL_DECK
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.games.caribbean_stud import PROCEDURE

LINK_GROUP = "bench"
METER = "cs-bench"
GAME = "caribbean-stud"
PAYTABLE = "B"
SEATS = (1, 2, 3, 4, 5, 6, 7)
WAGER_CENTS = 100
RESET_CENTS = 1_000_000
RATE_PERCENT = "15"
CALL_TIMEOUT_S = 10.0
DEAL_POOL = 1024
"""Distinct seeded deals a :class:`Floor` cycles through (made once, about 0.1 s)."""
JOURNAL_KEY = keys.LinkGroupKeys(LINK_GROUP).journal


class Health:
    """The standard ``grpc.health.v1.Health/Check`` RPC: the baseline, an echo-like call."""

    def __init__(self, channel: aio.Channel) -> None:
        self._stub: Any = health_pb2_grpc.HealthStub(channel)
        self._request: Any = health_pb2.HealthCheckRequest()

    async def check(self, timeout_s: float = CALL_TIMEOUT_S) -> bool:
        """One Check of the whole server; whether it answered SERVING."""
        reply = await self._stub.Check(self._request, timeout=timeout_s)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def timed(self, recorder: Recorder, kind: str = "Check") -> None:
        """One Check, its latency recorded as ``kind``; raises if not SERVING."""
        begin = time.perf_counter()
        serving = await self.check()
        recorder.add(kind, time.perf_counter() - begin)
        if not serving:
            raise RuntimeError("the controller is not SERVING")


@dataclass(frozen=True, slots=True)
class Round:
    """The two requests of one round."""

    table_id: str
    round_id: int
    lockout: pb.LockoutRequest
    settle: pb.SettleRequest


def table_ids(tables: int) -> tuple[str, ...]:
    """The ids of ``tables`` tables: t1..tN."""
    return tuple(f"t{n}" for n in range(1, tables + 1))


class Floor:
    """Caribbean Stud tables on one meter (``table_ids``), and their rounds.

    Each table plays one round at a time (a lock per table) with increasing round ids, after
    ``last_rounds`` (0: none played yet). ``rounds_locked`` counts the rounds whose Lockout
    was applied (the round records in Redis).
    """

    def __init__(
        self,
        connect: Callable[[str, str], aio.Channel],
        tables: Sequence[str],
        seed: int,
        last_rounds: Mapping[str, int] | None = None,
    ) -> None:
        self.admin: pb_grpc.AdminServiceAsyncStub = pb_grpc.AdminServiceStub(
            connect("operator", "bench")
        )
        self.table_ids = tuple(tables)
        # Each table speaks with its own certificate, as a real table agent does.
        channels = {table_id: connect("table", table_id) for table_id in self.table_ids}
        self._stubs: dict[str, pb_grpc.TableServiceAsyncStub] = {
            table_id: pb_grpc.TableServiceStub(channel) for table_id, channel in channels.items()
        }
        self._raw = {  # bytes in, bytes out: no serializer on either side, as the echo's
            table_id: tuple(
                channel.unary_unary(method, request_serializer=None, response_deserializer=None)
                for method in (LOCKOUT_METHOD, SETTLE_METHOD)
            )
            for table_id, channel in channels.items()
        }
        self._encoded: EncodedRounds | None = None
        self._seed = seed
        self._last_round = {table: (last_rounds or {}).get(table, 0) for table in self.table_ids}
        self._locks = {table_id: asyncio.Lock() for table_id in self.table_ids}
        self._rng = random.Random(seed)
        self.rounds_locked = 0

    async def configure(self) -> None:
        """Create the link group, the meter and the tables through AdminService."""
        await self.admin.CreateLinkGroup(
            pb.CreateLinkGroupRequest(link_group_id=LINK_GROUP, description="benchmark floor"),
            timeout=CALL_TIMEOUT_S,
        )
        await self.admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id=METER,
                link_group_id=LINK_GROUP,
                game=GAME,
                reset_cents=RESET_CENTS,
                rate_of_progression_percent=RATE_PERCENT,
                reserve_rate_percent="0",
                ceiling_cents=0,
            ),
            timeout=CALL_TIMEOUT_S,
        )
        for table_id in self.table_ids:
            await self.admin.RegisterTable(
                pb.RegisterTableRequest(
                    table=pb.Table(
                        table_id=table_id,
                        game=GAME,
                        seats=7,
                        link_group_id=LINK_GROUP,
                        wagers=[
                            pb.TableWager(
                                kind=pb.WAGER_KIND_PROGRESSIVE,
                                paytable=PAYTABLE,
                                min_cents=WAGER_CENTS,
                                max_cents=WAGER_CENTS,
                                meter_ids=[METER],
                            )
                        ],
                    )
                ),
                timeout=CALL_TIMEOUT_S,
            )

    @property
    def last_rounds(self) -> dict[str, int]:
        """Each table's last round id."""
        return dict(self._last_round)

    def new_round(self, table_id: str) -> Round:
        """The next round of ``table_id``: its round id and both requests."""
        round_id = self._last_round[table_id] + 1
        self._last_round[table_id] = round_id
        lockout, settle = round_requests(table_id, round_id, self._rng)
        return Round(table_id, round_id, lockout, settle)

    async def lockout(self, request: pb.LockoutRequest) -> pb.LockoutResponse:
        """Send one Lockout."""
        return await self._stubs[request.table_id].Lockout(request, timeout=CALL_TIMEOUT_S)

    async def settle(self, request: pb.SettleRequest) -> pb.SettleResponse:
        """Send one Settle."""
        return await self._stubs[request.table_id].Settle(request, timeout=CALL_TIMEOUT_S)

    async def play(self, table_id: str, recorder: Recorder) -> None:
        """Play one round at ``table_id`` once its previous round is over, its requests and
        replies as wire bytes (see the module).

        Records the latency of each RPC ("Lockout", "Settle") and of the round ("Round").
        """
        encoded = self._encoded
        if encoded is None:
            encoded = self._encoded = EncodedRounds(random.Random(self._seed))
        lockout, settle = self._raw[table_id]
        async with self._locks[table_id]:
            round_id = self._last_round[table_id] + 1
            self._last_round[table_id] = round_id
            begin = time.perf_counter()
            await lockout(encoded.lockout(table_id, round_id), timeout=CALL_TIMEOUT_S)
            locked = time.perf_counter()
            self.rounds_locked += 1
            await settle(encoded.settle(table_id, round_id), timeout=CALL_TIMEOUT_S)
            end = time.perf_counter()
        recorder.add("Lockout", locked - begin)
        recorder.add("Settle", end - locked)
        recorder.add("Round", end - begin)

    async def play_with_replays(self, table_id: str, recorder: Recorder) -> None:
        """One round, each RPC sent twice with the same key and content, one call at a time.

        Records "Lockout first", "Lockout replay", "Settle first" and "Settle replay"; raises
        if a replay's answer differs from the original.
        """
        async with self._locks[table_id]:
            game = self.new_round(table_id)
            begin = time.perf_counter()
            first_lockout = await self.lockout(game.lockout)
            middle = time.perf_counter()
            self.rounds_locked += 1
            replay_lockout = await self.lockout(game.lockout)
            end = time.perf_counter()
            recorder.add("Lockout first", middle - begin)
            recorder.add("Lockout replay", end - middle)
            begin = time.perf_counter()
            first_settle = await self.settle(game.settle)
            middle = time.perf_counter()
            replay_settle = await self.settle(game.settle)
            end = time.perf_counter()
            recorder.add("Settle first", middle - begin)
            recorder.add("Settle replay", end - middle)
        if replay_lockout != first_lockout or replay_settle != first_settle:
            raise RuntimeError(
                f"round {game.round_id} of {table_id}: a replay answered differently"
            )


def round_requests(
    table_id: str, round_id: int, rng: random.Random
) -> tuple[pb.LockoutRequest, pb.SettleRequest]:
    """The Lockout (every seat wagering ``WAGER_CENTS`` on the progressive) and the Settle
    (a Caribbean Stud deal shuffled by ``rng``) of one round."""
    lockout = pb.LockoutRequest(table_id=table_id, round_id=round_id, wagers=_wagers())
    settle = _deal(rng)
    settle.table_id, settle.round_id = table_id, round_id
    return lockout, settle


class EncodedRounds:
    """A round's requests as wire bytes: each the key fields (table id, round id) followed by
    the rest, serialized once (a message's fields may come in any order on the wire; a
    parser merges them). The Settles cycle through ``deals`` deals shuffled by ``rng``."""

    def __init__(self, rng: random.Random, deals: int = DEAL_POOL) -> None:
        self._wagers = pb.LockoutRequest(wagers=_wagers()).SerializeToString()
        self._deals = [_deal(rng).SerializeToString() for _ in range(deals)]
        self._next = 0

    def lockout(self, table_id: str, round_id: int) -> bytes:
        """The Lockout of round ``round_id`` at ``table_id``: every seat's wager."""
        return _key(pb.LockoutRequest, table_id, round_id) + self._wagers

    def settle(self, table_id: str, round_id: int) -> bytes:
        """The Settle of round ``round_id`` at ``table_id``: the next deal of the pool."""
        deal = self._deals[self._next]
        self._next = (self._next + 1) % len(self._deals)
        return _key(pb.SettleRequest, table_id, round_id) + deal


LOCKOUT_METHOD = "/jackpot.v1.TableService/Lockout"
SETTLE_METHOD = "/jackpot.v1.TableService/Settle"
"""The full method names the load generator calls with bytes (a test holds them to the
service's descriptor)."""


def _key(message_type: Any, table_id: str, round_id: int) -> bytes:
    return bytes(message_type(table_id=table_id, round_id=round_id).SerializeToString())


def _wagers() -> list[pb.Wager]:
    return [
        pb.Wager(seat=seat, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=WAGER_CENTS)
        for seat in SEATS
    ]


def _deal(rng: random.Random) -> pb.SettleRequest:
    """A Settle holding only a Caribbean Stud deal (§ 639a.8(d)) from a deck shuffled by
    ``rng``."""
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    cards = PROCEDURE.deal(deck, SEATS)
    return pb.SettleRequest(
        seats=[
            pb.SeatCards(seat=seat, cards=[str(card) for card in hand])
            for seat, hand in sorted(cards.hands.items())
        ],
        dealer_cards=[str(card) for card in cards.dealer],
    )
