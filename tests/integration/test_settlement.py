"""Settlement order and percentage-of-meter awards (sub-cent meters rounded down) on a real
Redis over real gRPC."""

from __future__ import annotations

import grpc
from redis.asyncio import Redis

from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    PAIR,
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    THREE_SEVENS,
    Floor,
    journal,
    lockout,
    settle,
)

MICRO = 1_000_000


async def test_straight_flush_then_royal_flush_in_settlement_order(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    # Paytable B, meter M: seat 6 (a straight flush) is paid first, 10% of M; seat 2 (a royal
    # flush) then gets 100% of what is left; the meter resets (§ 639a.12(d)(4)).
    locked = await tables.Lockout(lockout("t1", 1, [2, 4, 6]))
    meter_m = locked.meters[0].amount_cents
    assert meter_m == RESET_CENTS + 3 * 15
    reply = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 4: PAIR, 6: STRAIGHT_FLUSH_HEARTS})
    )
    by_seat = {r.seat: r for r in reply.results}
    assert [r.seat for r in reply.results] == [6, 4, 2]
    sf, royal = by_seat[6], by_seat[2]
    assert sf.amount_cents == meter_m // 10 and sf.meter_before_cents == meter_m
    assert royal.meter_before_cents == meter_m - meter_m // 10
    assert royal.amount_cents == meter_m - meter_m // 10
    assert royal.meter_after_cents == RESET_CENTS
    assert reply.meters[0].amount_cents == RESET_CENTS
    assert sf.pending_validation and royal.pending_validation
    assert sf.journal_seq < royal.journal_seq
    assert by_seat[4].outcome == pb.SEAT_OUTCOME_NO_AWARD

    entries = await journal(redis_client)
    awards = [fields for _, fields in entries if fields["type"] == "award"]
    assert [(a["seat"], a["hand"], int(a["amount_cents"])) for a in awards] == [
        ("6", "straight_flush", sf.amount_cents),
        ("2", "royal_flush", royal.amount_cents),
    ]
    assert entries[-1][1]["type"] == "reset"  # the reset follows the royal flush's award


async def test_fixed_awards_are_n_for_1_and_need_no_validation(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 3]))
    reply = await tables.Settle(settle("t1", 1, {1: FLUSH_CLUBS, 3: THREE_SEVENS}))
    paid = {r.seat: (r.award_text, r.amount_cents, r.pending_validation) for r in reply.results}
    assert paid == {3: ("3 for 1", 300, False), 1: ("50 for 1", 5_000, False)}
    meter = await floor.meter()
    assert meter.amount_cents == RESET_CENTS + 30 and meter.pending_jackpots == 0


async def test_ten_percent_rounds_down_and_the_remainder_stays_on_the_meter(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    floor = Floor(admin)
    await floor.create()
    for round_id in range(1, 4):  # 3 x 15 cents: the meter is $10,000.45
        await tables.Lockout(lockout("t1", round_id, [1]))
        await tables.Settle(settle("t1", round_id, {1: PAIR}))
    await tables.Lockout(lockout("t1", 4, [5]))
    reply = await tables.Settle(settle("t1", 4, {5: STRAIGHT_FLUSH_HEARTS}))
    assert reply.results[0].meter_before_cents == 1_000_060
    assert reply.results[0].amount_cents == 100_006  # floor(10% of $10,000.60)
    assert reply.meters[0].amount_cents == 1_000_060 - 100_006


async def test_folded_seat_forfeits_and_seat_without_wager_is_paid_nothing(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    reply = await tables.Settle(settle("t1", 1, {2: FLUSH_CLUBS, 3: ROYAL_SPADES}, folded=[1]))
    outcomes = {r.seat: (r.outcome, r.amount_cents) for r in reply.results}
    assert outcomes == {
        3: (pb.SEAT_OUTCOME_NO_WAGER, 0),
        2: (pb.SEAT_OUTCOME_PAID, 5_000),
        1: (pb.SEAT_OUTCOME_FORFEITED, 0),
    }
    assert (await floor.meter()).amount_cents == RESET_CENTS + 30


async def test_a_seat_with_a_wager_must_be_reported(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    try:
        await tables.Settle(settle("t1", 1, {2: FLUSH_CLUBS}))
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "seat 1 progressive was accepted at lockout but the seat was not reported" in (
            error.details() or ""
        )
    else:
        raise AssertionError("settle without seat 1 was accepted")


async def test_reserve_funds_the_reset_first_and_the_shortfall_is_operator_seed(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    floor = Floor(admin)
    await floor.create(reserve_rate="5")  # 15c to the meter and 5c to the reserve per $1
    await tables.Lockout(lockout("t1", 1, [1, 2, 3, 4]))
    reply = await tables.Settle(
        settle("t1", 1, {4: ROYAL_SPADES, 1: PAIR, 2: THREE_SEVENS, 3: FLUSH_CLUBS})
    )
    assert reply.results[0].amount_cents == RESET_CENTS + 60
    meter = await floor.meter()
    assert meter.amount_cents == RESET_CENTS
    assert meter.reserve_microcents == 0  # the 20c of reserve went into the reset
    assert meter.operator_seed_microcents_total == (2 * RESET_CENTS - 20) * 1_000_000
    assert meter.hits_total == 1 and meter.awards_cents_total == RESET_CENTS + 60


async def test_ceiling_sends_contributions_to_the_reserve(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    floor = Floor(admin)
    await floor.create(ceiling_cents=RESET_CENTS + 20)
    reply = await tables.Lockout(lockout("t1", 1, [1, 2]))
    assert [
        (w.contributions[0].to_meter_microcents, w.contributions[0].to_reserve_microcents)
        for w in reply.accepted
    ] == [
        (15_000_000, 0),
        (5_000_000, 10_000_000),
    ]
    meter = await floor.meter()
    assert meter.amount_cents == RESET_CENTS + 20 and meter.reserve_cents == 10


async def test_sub_cent_meter_awards_round_down_and_the_remainder_funds_the_reset(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    await admin.CreateLinkGroup(pb.CreateLinkGroupRequest(link_group_id="floor"))
    await admin.CreateMeter(
        pb.CreateMeterRequest(
            meter_id="cs-main",
            link_group_id="floor",
            game="caribbean-stud",
            reset_cents=RESET_CENTS,
            rate_of_progression_percent="12.3456",
        )
    )
    await Floor(admin).register("t1")
    locked = await tables.Lockout(lockout("t1", 1, [2, 4, 6]))
    assert [w.contributions[0].to_meter_microcents for w in locked.accepted] == [12_345_600] * 3
    assert locked.meters[0].amount_microcents == RESET_CENTS * MICRO + 37_036_800
    reply = await tables.Settle(
        settle("t1", 1, {2: ROYAL_SPADES, 4: FLUSH_CLUBS, 6: STRAIGHT_FLUSH_HEARTS})
    )
    straight_flush, _, royal = reply.results
    assert straight_flush.meter_before_cents == 1_000_037
    assert straight_flush.amount_cents == 100_003  # 10% of $10,000.37 is $1,000.037: floor
    assert royal.meter_before_cents == 900_034
    assert royal.amount_cents == 900_034
    meter = await Floor(admin).meter()
    assert meter.amount_microcents == RESET_CENTS * MICRO
    # the 36,800 microcents left after the royal flush's whole cents stay in the pool
    assert meter.operator_seed_microcents_total == 2 * RESET_CENTS * MICRO - 36_800
