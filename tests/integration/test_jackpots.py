"""Pending jackpots: a supervisor approves or rejects each one (§ 639a.11(c)(5)(iii))."""

from __future__ import annotations

import grpc
import pytest
from grpc import aio
from redis.asyncio import Redis

from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    settle,
    snapshot,
)


async def two_hits(tables: pb_grpc.TableServiceAsyncStub) -> pb.SettleResponse:
    await tables.Lockout(lockout("t1", 1, [2, 6]))
    return await tables.Settle(settle("t1", 1, {2: ROYAL_SPADES, 6: STRAIGHT_FLUSH_HEARTS}))


async def test_approve_and_reject(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    settled = await two_hits(tables)
    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    assert [(j.seat, j.hand, j.status) for j in pending.jackpots] == [
        (6, "straight_flush", "pending"),
        (2, "royal_flush", "pending"),
    ]
    assert (await floor.meter()).pending_jackpots == 2

    sf_id, royal_id = (r.jackpot_id for r in settled.results)
    approved = await admin.ApproveJackpot(
        pb.ReviewJackpotRequest(jackpot_id=royal_id, note="hand verified")
    )
    # The reviewer is the certificate's identity, never a name typed into the request.
    assert approved.status == "approved"
    assert approved.reviewed_by == f"jackpot://{SUPERVISOR[0]}/{SUPERVISOR[1]}"
    before = await snapshot(redis_client)
    again = await admin.ApproveJackpot(
        pb.ReviewJackpotRequest(jackpot_id=royal_id, note="hand verified")
    )
    assert again == approved and await snapshot(redis_client) == before

    # The straight flush was paid before the royal flush, whose amount came from the meter
    # the straight flush had reduced: rejecting it now would misstate the royal flush.
    await expect_refusal(
        admin.RejectJackpot(pb.ReviewJackpotRequest(jackpot_id=sf_id, note="misread")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "a later hit on meter cs-main",
    )
    await admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=sf_id))
    assert (await floor.meter()).pending_jackpots == 0
    assert not (await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots
    assert (await verify(controller.store)).ok
    entries = [fields for _, fields in await journal(redis_client)]
    approvals = [e for e in entries if e["type"] == "jackpot_approved"]
    assert {e["reviewer"] for e in approvals} == {approved.reviewed_by}
    assert all(len(e["reviewer_cert"]) == 64 for e in approvals)  # the certificate's SHA-256


async def test_a_jackpot_reviewed_by_one_supervisor_cannot_be_reviewed_by_another(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    settled = await two_hits(tables)
    royal_id = settled.results[1].jackpot_id
    approved = await admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=royal_id))
    other = pb_grpc.AdminServiceStub(channels("supervisor", "night-shift"))
    before = await snapshot(redis_client)
    for review in (other.ApproveJackpot, other.RejectJackpot):
        await expect_refusal(
            review(pb.ReviewJackpotRequest(jackpot_id=royal_id, note="checked again")),
            grpc.StatusCode.FAILED_PRECONDITION,
            f"was already approved by {approved.reviewed_by}",
        )
    assert await snapshot(redis_client) == before


async def test_rejecting_the_latest_hit_returns_its_amount_to_the_meter(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    await tables.Lockout(lockout("t1", 1, [6]))
    settled = await tables.Settle(settle("t1", 1, {6: STRAIGHT_FLUSH_HEARTS}))
    hit = settled.results[0]
    rejected = await admin.RejectJackpot(
        pb.ReviewJackpotRequest(jackpot_id=hit.jackpot_id, note="cards misread")
    )
    assert rejected.status == "rejected"
    meter = await floor.meter()
    assert meter.amount_cents == hit.meter_before_cents  # the amount is back on the meter
    assert meter.pending_jackpots == 0 and meter.hits_total == 0
    assert (await verify(controller.store)).ok
    await expect_refusal(
        admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        f"already rejected by {rejected.reviewed_by}",
    )


@pytest.mark.parametrize(
    ("jackpot_id", "note", "code", "text"),
    [
        ("floor:999", "", grpc.StatusCode.NOT_FOUND, "jackpot floor:999 does not exist"),
        ("garbage", "", grpc.StatusCode.INVALID_ARGUMENT, "is not a jackpot id"),
        ("", "", grpc.StatusCode.INVALID_ARGUMENT, "is not a jackpot id"),
        ("floor:5\n", "", grpc.StatusCode.INVALID_ARGUMENT, "is not a jackpot id"),
        ("floor:5", "x" * 501, grpc.StatusCode.INVALID_ARGUMENT, "at most 500 are accepted"),
        ("floor:5", "ok\x1b[2J", grpc.StatusCode.INVALID_ARGUMENT, "control characters"),
    ],
)
async def test_bad_reviews(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
    jackpot_id: str,
    note: str,
    code: grpc.StatusCode,
    text: str,
) -> None:
    await two_hits(tables)
    before = await snapshot(redis_client)
    with pytest.raises(aio.AioRpcError) as caught:
        await admin.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note=note))
    assert caught.value.code() == code and text in (caught.value.details() or "")
    assert await snapshot(redis_client) == before


async def test_rejecting_a_royal_flush_undoes_its_reset_exactly(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    controller: ControllerServer,
) -> None:
    floor = Floor(admin)
    await floor.create(reserve_rate="5")
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    before = await floor.meter()
    settled = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES, 2: FLUSH_CLUBS}))
    royal = next(r for r in settled.results if r.seat == 1)
    await admin.RejectJackpot(pb.ReviewJackpotRequest(jackpot_id=royal.jackpot_id, note="misdeal"))
    after = await floor.meter()
    assert after.amount_microcents == before.amount_microcents
    assert after.reserve_microcents == before.reserve_microcents
    assert after.operator_seed_microcents_total == before.operator_seed_microcents_total
    assert after.hits_total == 0 and after.awards_cents_total == 0
    assert (await verify(controller.store)).ok
