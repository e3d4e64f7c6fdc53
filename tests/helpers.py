"""Helpers for building requests and reading state in tests."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.domain.payout_compliance import NONE, PRESETS
from controller.runtime.server import ServerConfig
from controller.store import keys
from controller.testing import TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerClient

CARIBBEAN_RULES = Path(__file__).resolve().parents[1] / "deploy" / "rules" / "caribbean-stud.toml"
"""The example Caribbean Stud Rules Submission: link group floor, meter cs-main, tables cs-1..3."""

OPERATOR = ("operator", "ops")
SUPERVISOR = ("supervisor", "floor-supervisor")
AUDITOR = ("auditor", "audit")
_TABLE_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


class Channels:
    """Channels to one controller over mutual TLS, one per identity, opened on first use."""

    def __init__(self, target: str, pki: TestPKI) -> None:
        self.target = target
        self.pki = pki
        self._open: dict[tuple[str, str], aio.Channel] = {}

    def __call__(self, role: str, name: str) -> aio.Channel:
        channel = self._open.get((role, name))
        if channel is None:
            channel = tls.aio_channel(self.target, self.pki.client(role, name))
            self._open[(role, name)] = channel
        return channel

    async def close(self) -> None:
        for channel in self._open.values():
            await channel.close(None)
        self._open.clear()


class _Routed:
    """A stub whose every call goes over the channel ``route(method, request)`` picks."""

    def __init__(
        self, make_stub: Callable[[aio.Channel], Any], route: Callable[[str, Any], aio.Channel]
    ) -> None:
        self._make_stub = make_stub
        self._route = route

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def call(request: Any, **kwargs: Any) -> Any:
            stub = self._make_stub(self._route(method, request))
            return getattr(stub, method)(request, **kwargs)

        return call


def table_stubs(channels: Channels) -> pb_grpc.TableServiceAsyncStub:
    """TableService as each table itself: a call is made with the certificate of the table
    its request names (table t1's when the id could not be a certificate's name)."""

    def route(method: str, request: Any) -> aio.Channel:
        table_id = request.table_id if _TABLE_NAME.fullmatch(request.table_id) else "t1"
        return channels("table", table_id)

    return _Routed(pb_grpc.TableServiceStub, route)  # type: ignore[return-value]


def admin_stubs(channels: Channels) -> pb_grpc.AdminServiceAsyncStub:
    """AdminService as the role each method is for: a supervisor reviews jackpots, an
    operator does everything else."""

    def route(method: str, request: Any) -> aio.Channel:
        return channels(*(SUPERVISOR if method.endswith("Jackpot") else OPERATOR))

    return _Routed(pb_grpc.AdminServiceStub, route)  # type: ignore[return-value]


@contextlib.asynccontextmanager
async def connect(
    target: str, pki: TestPKI
) -> AsyncIterator[tuple[pb_grpc.TableServiceAsyncStub, pb_grpc.AdminServiceAsyncStub]]:
    """TableService (as each table) and AdminService (as an operator or supervisor) of the
    controller at ``target``."""
    channels = Channels(target, pki)
    try:
        yield table_stubs(channels), admin_stubs(channels)
    finally:
        await channels.close()


def table_client(port: int, pki: TestPKI, table_id: str = "t1", **options: Any) -> ControllerClient:
    """A table agent's client with the table's certificate, to the controller on ``port``."""
    return ControllerClient(f"127.0.0.1:{port}", tls_files=pki.client("table", table_id), **options)


def controller_config(redis_url: str, pki: TestPKI, **options: Any) -> ServerConfig:
    """An in-process controller on a free loopback port with mutual TLS, no metrics, no
    call rate limit and no payout compliance policy (``payout_compliance=...`` to test one)."""
    defaults: dict[str, Any] = {
        "listen": "127.0.0.1:0",
        "redis_url": redis_url,
        "tls": pki.server(),
        "position_key": pki.position_key(),
        "metrics_port": None,
        "table_calls_per_s": 0,  # simulated tables play far faster than real ones
        "client_calls_per_s": 0,
        "payout_compliance": PRESETS[NONE],
    }
    return ServerConfig(**{**defaults, **options})


RESET_CENTS = 1_000_000  # $10,000
RATE_PERCENT = "15"  # 15 cents of a $1 wager: the meter stays in whole cents


@dataclass
class Floor:
    """The standard test configuration, created through AdminService."""

    admin: pb_grpc.AdminServiceAsyncStub
    link_group_id: str = "floor"
    meter_id: str = "cs-main"

    async def create(
        self,
        *,
        reserve_rate: str = "0",
        ceiling_cents: int = 0,
        paytable: str = "B",
        tables: Sequence[str] = ("t1",),
    ) -> None:
        await self.admin.CreateLinkGroup(
            pb.CreateLinkGroupRequest(link_group_id=self.link_group_id, description="test floor")
        )
        await self.admin.CreateMeter(
            pb.CreateMeterRequest(
                meter_id=self.meter_id,
                link_group_id=self.link_group_id,
                game="caribbean-stud",
                reset_cents=RESET_CENTS,
                rate_of_progression_percent=RATE_PERCENT,
                reserve_rate_percent=reserve_rate,
                ceiling_cents=ceiling_cents,
            )
        )
        for table_id in tables:
            await self.register(table_id, paytable)

    async def register(self, table_id: str, paytable: str = "B") -> None:
        table = progressive_table(table_id, self.link_group_id, self.meter_id, paytable)
        await self.admin.RegisterTable(pb.RegisterTableRequest(table=table))

    async def meter(self) -> pb.Meter:
        return await self.admin.GetMeter(pb.GetMeterRequest(meter_id=self.meter_id))


def progressive_table(
    table_id: str,
    link_group_id: str,
    meter_id: str,
    paytable: str = "B",
    *,
    wager_cents: int = 100,
    seats: int = 7,
) -> pb.Table:
    """A Caribbean Stud table offering only the progressive wager, fixed at ``wager_cents``,
    on the regulation paytable ``paytable``, feeding ``meter_id``."""
    progressive = pb.TableWager(
        kind=pb.WAGER_KIND_PROGRESSIVE,
        paytable=paytable,
        min_cents=wager_cents,
        max_cents=wager_cents,
        meter_ids=[meter_id],
    )
    return pb.Table(
        table_id=table_id,
        game="caribbean-stud",
        seats=seats,
        link_group_id=link_group_id,
        wagers=[progressive],
    )


def lockout(
    table_id: str, round_id: int, seats: Sequence[int], amount_cents: int = 100
) -> pb.LockoutRequest:
    return pb.LockoutRequest(
        table_id=table_id,
        round_id=round_id,
        wagers=[
            pb.Wager(seat=seat, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=amount_cents)
            for seat in seats
        ],
    )


def settle(
    table_id: str,
    round_id: int,
    hands: dict[int, str],
    folded: Sequence[int] = (),
    dealer: str = "",
) -> pb.SettleRequest:
    seats = [pb.SeatCards(seat=seat, cards=cards.split()) for seat, cards in hands.items()]
    seats += [pb.SeatCards(seat=seat, folded=True) for seat in folded]
    return pb.SettleRequest(
        table_id=table_id, round_id=round_id, seats=seats, dealer_cards=dealer.split()
    )


async def expect_refusal(call: Awaitable[object], code: grpc.StatusCode, text: str) -> None:
    """Await ``call`` and check it fails with ``code`` and a message containing ``text``."""
    with pytest.raises(aio.AioRpcError) as caught:
        await call
    assert caught.value.code() == code, caught.value.details()
    assert text in (caught.value.details() or ""), caught.value.details()


async def snapshot(client: Redis) -> dict[str, Any]:
    """Every key's type and content: two equal snapshots mean nothing changed. The floor
    view's liveness hash (``keys.TABLE_SEEN``: when each table's agent last called, refused
    calls included, written every 2 s) is no jackpot state and is left out."""
    state: dict[str, Any] = {}
    for key in sorted(str(key) for key in await client.keys("*")):
        if key == keys.TABLE_SEEN:
            continue
        kind = await client.type(key)
        if kind == "hash":
            state[key] = await client.hgetall(key)
        elif kind == "set":
            state[key] = sorted(await client.smembers(key))
        elif kind == "stream":
            state[key] = await client.xrange(key)
        else:
            state[key] = await client.get(key)
    return state


async def journal(client: Redis, link_group_id: str = "floor") -> list[tuple[str, dict[str, str]]]:
    """The journal of a link group as (entry id, fields) pairs, oldest first."""
    rows = await client.xrange(keys.LinkGroupKeys(link_group_id).journal) or []
    return [
        (str(entry_id), {str(k): str(v) for k, v in (fields or {}).items()})
        for entry_id, fields in rows
    ]


# Hands used across tests (five cards each, no card shared between different names).
ROYAL_SPADES = "AS KS QS JS TS"
STRAIGHT_FLUSH_HEARTS = "9H TH JH QH KH"
FOUR_TWOS = "2S 2H 2D 2C 3S"
FULL_HOUSE = "4S 4H 4D 5S 5H"
FLUSH_CLUBS = "3C 5C 8C JC KC"
STRAIGHT = "6D 7C 8S 9D TC"
THREE_SEVENS = "7S 7H 7D 9S JD"
TWO_PAIR = "3H 3D 6S 6H QD"
PAIR = "8H 8D 4C TD QC"
HIGH_CARD = "5D 6C 9C KD AH"
