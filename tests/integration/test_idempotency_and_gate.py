"""Exactly once and the lockout gate (design.md invariants 4 and 9)."""

from __future__ import annotations

import grpc
from redis.asyncio import Redis

from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    PAIR,
    RESET_CENTS,
    ROYAL_SPADES,
    Floor,
    expect_refusal,
    lockout,
    settle,
    snapshot,
)


async def test_lockout_and_settle_twice_answer_the_same_and_change_nothing(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    first = await tables.Lockout(lockout("t1", 1, [2, 6]))
    before = await snapshot(redis_client)
    again = await tables.Lockout(lockout("t1", 1, [6, 2]))  # same wagers, other order
    assert again == first
    assert await snapshot(redis_client) == before

    hands = {2: ROYAL_SPADES, 6: FLUSH_CLUBS}
    settled = await tables.Settle(settle("t1", 1, hands))
    before = await snapshot(redis_client)
    assert await tables.Settle(settle("t1", 1, hands)) == settled
    assert await snapshot(redis_client) == before


async def test_the_same_key_with_other_content_is_refused(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Lockout(lockout("t1", 1, [2])),
        grpc.StatusCode.FAILED_PRECONDITION,
        "round 1 of table t1 is already locked out with other wagers",
    )
    await tables.Settle(settle("t1", 1, {2: PAIR, 6: FLUSH_CLUBS}))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: FLUSH_CLUBS})),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already settled with other cards",
    )
    assert await snapshot(redis_client) == before


async def test_settle_before_lockout_is_refused(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Settle(settle("t1", 7, {2: ROYAL_SPADES})),
        grpc.StatusCode.FAILED_PRECONDITION,
        "round 7 of table t1 was never locked out",
    )
    assert await snapshot(redis_client) == before


async def test_round_ids_must_increase(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 5, [1]))
    before = await snapshot(redis_client)
    await expect_refusal(
        tables.Lockout(lockout("t1", 4, [1])),
        grpc.StatusCode.FAILED_PRECONDITION,
        "round ids must increase",
    )
    assert await snapshot(redis_client) == before


async def test_void_returns_the_contributions_and_closes_the_round(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2, 3]))
    assert (await floor.meter()).amount_cents == RESET_CENTS + 45
    reply = await tables.VoidRound(
        pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal § 639a.13(c)")
    )
    assert [w.seat for w in reply.reversed] == [1, 2, 3]
    assert reply.meters[0].amount_cents == RESET_CENTS
    meter = await floor.meter()
    assert meter.amount_microcents == RESET_CENTS * 1_000_000 and meter.wagers_total == 0
    before = await snapshot(redis_client)
    again = await tables.VoidRound(
        pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal § 639a.13(c)")
    )
    assert again == reply and await snapshot(redis_client) == before
    await expect_refusal(
        tables.Settle(settle("t1", 1, {1: ROYAL_SPADES, 2: PAIR, 3: FLUSH_CLUBS})),
        grpc.StatusCode.FAILED_PRECONDITION,
        "was voided",
    )
    await expect_refusal(
        tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="shoe jam")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already voided",
    )


async def test_a_settled_round_cannot_be_voided(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1]))
    await tables.Settle(settle("t1", 1, {1: PAIR}))
    await expect_refusal(
        tables.VoidRound(
            pb.VoidRoundRequest(table_id="t1", round_id=1, reason="late irregularity")
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "already settled",
    )


async def test_void_after_a_hit_paid_the_contribution_out_keeps_the_meter_at_its_reset(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    controller: ControllerServer,
) -> None:
    floor = Floor(admin)
    await floor.create(reserve_rate="5", tables=("t1", "t2"))
    await tables.Lockout(lockout("t1", 1, [1]))  # meter +15c, reserve +5c
    await tables.Lockout(lockout("t2", 1, [1]))  # meter +15c, reserve +5c
    await tables.Settle(settle("t2", 1, {1: ROYAL_SPADES}))  # pays 30c out, drains the reserve
    seeded_before = (await floor.meter()).operator_seed_microcents_total
    reply = await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal"))
    # The 20c this wager contributed were paid to the winner: the meter stays at its reset
    # amount (§ 639a.12(d)(3)) and the operator funds the returned contribution.
    assert [
        (w.contributions[0].to_meter_microcents, w.contributions[0].to_reserve_microcents)
        for w in reply.reversed
    ] == [(0, 0)]
    meter = await floor.meter()
    assert meter.amount_microcents == RESET_CENTS * 1_000_000
    assert meter.reserve_microcents == 0
    assert meter.operator_seed_microcents_total == seeded_before + 20_000_000
    assert (await verify(controller.store)).ok


async def test_a_round_without_wagers_is_locked_out_settled_or_voided(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    # A lockout may carry no wager at all (nobody bet the progressive this round).
    assert not (await tables.Lockout(lockout("t1", 1, []))).accepted
    reply = await tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal"))
    assert not reply.reversed and reply.meters[0].amount_cents == RESET_CENTS
    await tables.Lockout(lockout("t1", 2, []))
    settled = await tables.Settle(settle("t1", 2, {3: ROYAL_SPADES}))
    assert [r.outcome for r in settled.results] == [pb.SEAT_OUTCOME_NO_WAGER]
    assert (await floor.meter()).wagers_total == 0
