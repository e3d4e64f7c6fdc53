"""Every request is bounded: each refusal is INVALID_ARGUMENT naming the field and its bound
(or RESOURCE_EXHAUSTED for a body over the size limit), quotes at most a short prefix of the
input, and changes nothing in Redis."""

from __future__ import annotations

import grpc
import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.api.convert import MAX_ROUND_ID
from controller.runtime.server import ControllerServer
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    progressive_table,
    settle,
    snapshot,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


async def refused_unchanged(
    redis_client: Redis, call: object, code: grpc.StatusCode, text: str
) -> str:
    """Await ``call``, expect ``code`` with ``text``; Redis is unchanged. Returns the message."""
    before = await snapshot(redis_client)
    with pytest.raises(aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    details = caught.value.details() or ""
    assert caught.value.code() == code, details
    assert text in details, details
    assert await snapshot(redis_client) == before
    return details


async def test_an_oversized_void_reason_is_refused_with_its_bound(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [1]))
    for size, code, text in (
        (201, INVALID, "reason is 201 characters long; at most 200 are accepted"),
        (100_000, INVALID, "reason is 100,000 characters long; at most 200 are accepted"),
        # Beyond the largest request body the controller reads at all (256 KiB).
        (4_000_000, grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
    ):
        request = pb.VoidRoundRequest(table_id="t1", round_id=1, reason="x" * size)
        details = await refused_unchanged(redis_client, tables.VoidRound(request), code, text)
        assert len(details) < 300  # the input is never echoed back
    for reason, text in (
        ("misdeal\n[fake] settled", "holds control characters"),
        ("   ", "reason is required"),
    ):
        request = pb.VoidRoundRequest(table_id="t1", round_id=1, reason=reason)
        await refused_unchanged(redis_client, tables.VoidRound(request), INVALID, text)


async def test_a_round_id_cannot_jump_and_an_operator_rebases_a_table(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    await tables.Lockout(lockout("t1", 5, [1]))
    # The attack of the issue: one lockout at 2**53 - 1 used to make t1 refuse every later
    # round for good. Now no round may be more than max_round_step (1000) above the last.
    for round_id in (MAX_ROUND_ID, 1006):
        await refused_unchanged(
            redis_client,
            tables.Lockout(lockout("t1", round_id, [1])),
            INVALID,
            f"round_id {round_id} is more than 1000 above the last locked-out round 5 of "
            "table t1; the next round is 6",
        )
    await refused_unchanged(
        redis_client,
        tables.Lockout(lockout("t1", MAX_ROUND_ID + 1, [1])),
        INVALID,
        f"round_id must be 1 to {MAX_ROUND_ID:,}",
    )
    assert (await tables.Lockout(lockout("t1", 1005, [1]))).accepted

    # An operator moves the table forward (an agent replaced, its ids far ahead), journaled.
    request = pb.RebaseTableRoundsRequest(
        table_id="t1", last_round_id=50_000, reason="agent PC replaced; ids from its clock"
    )
    for role, name in (("table", "t1"), ("supervisor", "floor-supervisor")):
        stub = pb_grpc.AdminServiceStub(channels(role, name))
        await refused_unchanged(
            redis_client, stub.RebaseTableRounds(request), grpc.StatusCode.PERMISSION_DENIED, ""
        )
    rebased = await admin.RebaseTableRounds(request)
    assert (rebased.previous_last_round_id, rebased.last_round_id) == (1005, 50_000)
    assert await admin.RebaseTableRounds(request) == pb.RebaseTableRoundsResponse(
        table_id="t1", previous_last_round_id=50_000, last_round_id=50_000
    )
    entry = [
        fields for _, fields in await journal(redis_client) if fields["type"] == "table_rebased"
    ]
    assert len(entry) == 1
    assert entry[0]["previous_last_round"] == "1005" and entry[0]["last_round"] == "50000"
    assert entry[0]["reason"] == request.reason and entry[0]["by"].startswith(
        "jackpot://operator/ops sha256:"
    )
    await refused_unchanged(
        redis_client,
        tables.Lockout(lockout("t1", 50_000, [1])),
        grpc.StatusCode.FAILED_PRECONDITION,
        "is not after the table's last locked-out round 50000",
    )
    assert (await tables.Lockout(lockout("t1", 50_001, [1]))).accepted
    # Never back (a late retry of an old round must stay refused), never to the edge.
    back = pb.RebaseTableRoundsRequest(table_id="t1", last_round_id=10, reason="undo")
    await refused_unchanged(
        redis_client,
        admin.RebaseTableRounds(back),
        grpc.StatusCode.FAILED_PRECONDITION,
        "can only move forward",
    )
    edge = pb.RebaseTableRoundsRequest(table_id="t1", last_round_id=2**53 - 1, reason="edge")
    await refused_unchanged(
        redis_client, admin.RebaseTableRounds(edge), INVALID, "last_round_id must be 0 to"
    )
    no_reason = pb.RebaseTableRoundsRequest(table_id="t1", last_round_id=60_000)
    await refused_unchanged(
        redis_client, admin.RebaseTableRounds(no_reason), INVALID, "reason is required"
    )


def _written_table(award: str, hand: str = "royal_flush") -> pb.RegisterTableRequest:
    return pb.RegisterTableRequest(
        table=pb.Table(
            table_id="tcp-9",
            game="three-card-poker",
            seats=7,
            link_group_id="floor",
            wagers=[
                pb.TableWager(
                    kind=pb.WAGER_KIND_FIVE_CARD_BONUS,
                    paytable="house",
                    lines=[pb.PaytableLine(hand=hand, award=award)],
                    min_cents=100,
                    max_cents=500,
                )
            ],
        )
    )


@pytest.mark.parametrize(
    ("request_", "text"),
    [
        (_written_table("9" * 5000 + " for 1"), "award[0] '99999999999999999999999999999999'..."),
        (_written_table("$" + "9" * 5000), "is longer than 64 characters"),
        (_written_table("10 for 1", "x" * 65), "hand[0]"),
        (
            pb.RegisterTableRequest(table=progressive_table("t9\n", "floor", "cs-main")),
            "table id 't9\\n' must be 1-64 characters",
        ),
        (
            pb.RegisterTableRequest(
                table=pb.Table(
                    table_id="t9",
                    game="caribbean-stud",
                    seats=7,
                    link_group_id="floor",
                    wagers=[pb.TableWager(kind=pb.WAGER_KIND_BONUS)] * 9,
                )
            ),
            "wagers has 9 items; at most 8 are accepted",
        ),
    ],
)
async def test_registrations_are_bounded_before_any_number_is_read(
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    request_: pb.RegisterTableRequest,
    text: str,
) -> None:
    """A 5,000-digit award used to reach Python's integer digit limit: INTERNAL."""
    details = await refused_unchanged(redis_client, admin.RegisterTable(request_), INVALID, text)
    assert len(details) < 400


@pytest.mark.parametrize(
    ("request_", "text"),
    [
        (
            pb.LockoutRequest(
                table_id="t1",
                round_id=1,
                wagers=[pb.Wager(seat=1, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=100)] * 65,
            ),
            "wagers has 65 items; at most 64 are accepted",
        ),
        (
            pb.SettleRequest(table_id="t1", round_id=1, seats=[pb.SeatCards(seat=1)] * 17),
            "seats has 17 items; at most 16 are accepted",
        ),
        (
            pb.SettleRequest(
                table_id="t1", round_id=1, seats=[pb.SeatCards(seat=1, cards=["AS"] * 9)]
            ),
            "the cards of seat 1 has 9 items; at most 8 are accepted",
        ),
        (
            pb.SettleRequest(
                table_id="t1", round_id=1, seats=[pb.SeatCards(seat=1, cards=["A" * 10_000])]
            ),
            "is longer than 3 characters",
        ),
        (
            pb.SettleRequest(
                table_id="t1",
                round_id=1,
                seats=[pb.SeatCards(seat=1, cards="AS KS QS JS TS".split())],
                rest_of_round_void="x" * 201,
            ),
            "rest_of_round_void is 201 characters long",
        ),
        (
            pb.SettleRequest(
                table_id="t1",
                round_id=1,
                seats=[
                    pb.SeatCards(seat=1, cards="AS KS QS JS TS".split(), base_game_win_cents=2**62)
                ],
            ),
            "seat 1 base_game_win_cents must be 0 to",
        ),
        (pb.WatchMetersRequest(table_id="t1", min_interval_ms=60_001), "min_interval_ms"),
    ],
)
async def test_table_reports_are_bounded(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    request_: object,
    text: str,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1]))
    if isinstance(request_, pb.WatchMetersRequest):
        call: object = _first(tables.WatchMeters(request_))
    elif isinstance(request_, pb.LockoutRequest):
        call = tables.Lockout(request_)
    else:
        assert isinstance(request_, pb.SettleRequest)
        call = tables.Settle(request_)
    details = await refused_unchanged(redis_client, call, INVALID, text)
    assert len(details) < 400


async def _first(stream: object) -> object:
    async for item in stream:  # type: ignore[attr-defined]
        return item
    return None


async def test_a_malformed_body_is_invalid_argument_and_counted(
    channels: Channels, floor: Floor, controller: ControllerServer, redis_client: Redis
) -> None:
    raw = channels("table", "t1").unary_unary(
        "/jackpot.v1.TableService/Lockout", request_serializer=None, response_deserializer=None
    )
    details = await refused_unchanged(
        redis_client, raw(b"\x0a\xff\xff\xff\xff\x0f garbage"), INVALID, "is not a valid request"
    )
    assert "Lockout" in details
    handled = controller.metrics.registry.get_sample_value(
        "grpc_server_handled_total",
        {
            "grpc_type": "unary",
            "grpc_service": "jackpot.v1.TableService",
            "grpc_method": "Lockout",
            "grpc_code": "InvalidArgument",
        },
    )
    assert handled == 1


async def test_a_settlement_with_a_huge_card_quotes_only_a_prefix(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1]))
    await expect_refusal(
        tables.Settle(settle("t1", 1, {1: "AS KS QS JS ZZ"})),
        INVALID,
        "not a card: 'ZZ'",
    )
