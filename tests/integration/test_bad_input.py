"""Every bad request gets a precise status and message, and changes nothing."""

from __future__ import annotations

import grpc
import pytest
from redis.asyncio import Redis

from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    ROYAL_SPADES,
    Floor,
    expect_refusal,
    lockout,
    progressive_table,
    settle,
    snapshot,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND

SETTLE_CASES = [
    ({1: "AS KS QS JS XX"}, "", INVALID, "seat 1: not a card: 'XX'"),
    ({1: "AS KS QS JS 1S"}, "", INVALID, "not a card: '1S'"),
    ({1: "AS KS QS JS"}, "", INVALID, "seat 1 has 4 cards; the game deals exactly 5"),
    ({1: "AS KS QS JS TS 9S"}, "", INVALID, "seat 1 has 6 cards"),
    ({1: "AS KS QS JS AS"}, "", INVALID, "card AS is reported twice"),
    ({1: ROYAL_SPADES, 2: "AS 2H 3H 4H 5H"}, "", INVALID, "card AS is reported twice"),
    ({1: ROYAL_SPADES}, "KS 2D 3D 4D 5D", INVALID, "card KS is reported twice"),
    ({0: ROYAL_SPADES}, "", INVALID, "seat 0 does not exist at table t1"),
    ({8: ROYAL_SPADES}, "", INVALID, "seat 8 does not exist at table t1"),
]


@pytest.mark.parametrize(("hands", "dealer", "code", "text"), SETTLE_CASES)
async def test_bad_cards_and_seats_at_settlement(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    hands: dict[int, str],
    dealer: str,
    code: grpc.StatusCode,
    text: str,
) -> None:
    await tables.Lockout(lockout("t1", 1, [1]))
    before = await snapshot(redis_client)
    await expect_refusal(tables.Settle(settle("t1", 1, hands, dealer=dealer)), code, text)
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("request_", "code", "text"),
    [
        (lockout("t1", 1, [0]), INVALID, "seat 0 does not exist at table t1; its seats are 1 to 7"),
        (lockout("t1", 1, [8]), INVALID, "seat 8 does not exist"),
        (
            lockout("t1", 1, [2], amount_cents=0),
            INVALID,
            "seat 2 progressive: wager amount must be positive",
        ),
        (lockout("t1", 1, [2], amount_cents=-100), INVALID, "got -100 cents"),
        (lockout("t1", 1, [2], amount_cents=500), INVALID, "fixed at 100 cents"),
        (lockout("t1", 1, [3, 3]), INVALID, "seat 3 progressive is placed twice"),
        (lockout("t1", 0, [1]), INVALID, "round_id must be 1 to"),
        # A table's certificate speaks for its own table only: an empty id is not its own.
        (lockout("", 1, [1]), grpc.StatusCode.PERMISSION_DENIED, "for its own table only"),
        (lockout("nope", 1, [1]), NOT_FOUND, "table nope is not registered"),
        (
            pb.LockoutRequest(
                table_id="t1", round_id=1, wagers=[pb.Wager(seat=1, amount_cents=100)]
            ),
            INVALID,
            "seat 1: wager kind is missing",
        ),
    ],
)
async def test_bad_lockouts(
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    request_: pb.LockoutRequest,
    code: grpc.StatusCode,
    text: str,
) -> None:
    before = await snapshot(redis_client)
    await expect_refusal(tables.Lockout(request_), code, text)
    assert await snapshot(redis_client) == before


async def test_unknown_table_at_settle_and_void_and_missing_reason(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(settle("ghost", 1, {1: ROYAL_SPADES})),
        NOT_FOUND,
        "table ghost is not registered",
    )
    await expect_refusal(
        tables.VoidRound(pb.VoidRoundRequest(table_id="ghost", round_id=1, reason="misdeal")),
        NOT_FOUND,
        "table ghost is not registered",
    )
    await expect_refusal(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1)),
        INVALID,
        "reason is required",
    )
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("meter", "code", "text"),
    [
        (
            {"reset_cents": 999_999},
            INVALID,
            "below the $10,000.00 minimum for Caribbean Stud Poker (§ 639a.12(d)(3))",
        ),
        ({"rate_of_progression_percent": "1.23456"}, INVALID, "at most 4 decimal places"),
        ({"rate_of_progression_percent": "0"}, INVALID, "must be above 0%"),
        (
            {"meter_id": "cs-other", "link_group_id": "nowhere"},
            NOT_FOUND,
            "link group nowhere does not exist",
        ),
        ({"game": "roulette"}, INVALID, "unknown game 'roulette'"),
        (
            {"reset_cents": 1_000_001},
            grpc.StatusCode.ALREADY_EXISTS,
            "meter cs-main exists with another reset_cents",
        ),
    ],
)
async def test_bad_meters(
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    meter: dict[str, object],
    code: grpc.StatusCode,
    text: str,
) -> None:
    fields: dict[str, object] = dict(
        meter_id="cs-main",
        link_group_id="floor",
        game="caribbean-stud",
        reset_cents=1_000_000,
        rate_of_progression_percent="15",
    )
    fields.update(meter)
    before = await snapshot(redis_client)
    await expect_refusal(admin.CreateMeter(pb.CreateMeterRequest(**fields)), code, text)  # type: ignore[arg-type]
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize(
    ("table", "code", "text"),
    [
        (
            progressive_table("t1", "floor", "cs-main", seats=8),
            INVALID,
            "8 seats; Caribbean Stud Poker allows 1 to 7 (§ 639a.2(a))",
        ),
        (progressive_table("t1", "floor", "cs-main", "D"), INVALID, "has no paytable 'D'"),
        (progressive_table("t1", "floor", "ghost"), NOT_FOUND, "meter ghost does not exist"),
        (
            progressive_table("t1", "floor", "cs-main", "A"),
            grpc.StatusCode.ALREADY_EXISTS,
            "table t1 is registered with another definition",
        ),
        (
            pb.Table(table_id="t9", game="caribbean-stud", seats=7, link_group_id="floor"),
            INVALID,
            "table t9: offers no wager",
        ),
    ],
)
async def test_bad_tables(
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    table: pb.Table,
    code: grpc.StatusCode,
    text: str,
) -> None:
    before = await snapshot(redis_client)
    await expect_refusal(admin.RegisterTable(pb.RegisterTableRequest(table=table)), code, text)
    assert await snapshot(redis_client) == before


async def test_creating_the_same_configuration_twice_is_idempotent(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    before = await snapshot(redis_client)
    await floor.create()
    assert await snapshot(redis_client) == before


async def test_unknown_meter_and_link_group(admin: pb_grpc.AdminServiceAsyncStub) -> None:
    await expect_refusal(
        admin.GetMeter(pb.GetMeterRequest(meter_id="ghost")),
        NOT_FOUND,
        "meter ghost does not exist",
    )
    await expect_refusal(
        admin.GetLinkGroup(pb.GetLinkGroupRequest(link_group_id="ghost")),
        NOT_FOUND,
        "link group ghost does not exist",
    )
    await expect_refusal(
        admin.ListMeters(pb.ListMetersRequest(link_group_id="ghost")),
        NOT_FOUND,
        "link group ghost does not exist",
    )
    await expect_refusal(
        admin.GetMeter(pb.GetMeterRequest(meter_id="a b")),
        INVALID,
        "meter id 'a b' must be 1-64 characters",
    )


async def test_a_settlement_missing_a_wagering_seat_changes_nothing(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(settle("t1", 1, {2: FLUSH_CLUBS})),
        grpc.StatusCode.INVALID_ARGUMENT,
        "seat 1 progressive was accepted at lockout but the seat was not reported",
    )
    assert await snapshot(redis_client) == before
