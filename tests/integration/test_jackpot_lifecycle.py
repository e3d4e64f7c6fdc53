"""The jackpot lifecycle and its hand-pay slip: pending -> approved -> paid, or pending ->
rejected with a reason; each transition one journaled step, repeated by the same identity
without effect, any other transition of a decided jackpot refused by name."""

from __future__ import annotations

import grpc
import pytest
from redis.asyncio import Redis

from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FOUR_TWOS,
    FULL_HOUSE,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    SUPERVISOR,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    progressive_table,
    settle,
    snapshot,
)

DAY_SHIFT = f"jackpot://{SUPERVISOR[0]}/{SUPERVISOR[1]}"
CAGE = ("cashier", "cage-1")


def cashier(channels: Channels, name: str = CAGE[1]) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channels("cashier", name))


def paid(jackpot_id: str, note: str = "cage receipt 1187") -> pb.RecordJackpotPaidRequest:
    return pb.RecordJackpotPaidRequest(jackpot_id=jackpot_id, note=note)


def review(jackpot_id: str, note: str = "") -> pb.ReviewJackpotRequest:
    return pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note=note)


async def royal_hit(tables: pb_grpc.TableServiceAsyncStub, round_id: int = 1) -> pb.SeatResult:
    await tables.Lockout(lockout("t1", round_id, [2, 6]))
    settled = await tables.Settle(settle("t1", round_id, {2: ROYAL_SPADES, 6: FULL_HOUSE}))
    return next(r for r in settled.results if r.seat == 2)


async def test_the_slip_holds_the_hit(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub, floor: Floor
) -> None:
    hit = await royal_hit(tables)
    slip = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=hit.jackpot_id))
    assert (slip.table_id, slip.seat, slip.round_id) == ("t1", 2, 1)
    assert (slip.wager, slip.wager_cents, slip.on_dealer_hand) == ("progressive", 100, False)
    assert (slip.hand, slip.cards, slip.line) == ("royal_flush", ROYAL_SPADES, "royal_flush")
    assert (slip.award_kind, slip.award_text) == ("percent_of_meter", "100% of meter")
    assert slip.amount_cents == hit.amount_cents == hit.meter_before_cents
    assert (slip.meter_id, slip.meter_before_cents, slip.meter_after_cents) == (
        "cs-main",
        hit.meter_before_cents,
        hit.meter_after_cents,
    )
    assert slip.journal_seq == hit.journal_seq and slip.status == "pending"
    assert slip.hit_at_ms > 0  # Redis's clock in the settle step
    assert (slip.reviewed_at_ms, slip.paid_at_ms, slip.reviewed_by, slip.paid_by) == (0, 0, "", "")


async def test_pending_approved_paid(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    hit = await royal_hit(tables)
    cage = cashier(channels)
    approved = await admin.ApproveJackpot(review(hit.jackpot_id, "hand verified"))
    assert (approved.status, approved.reviewed_by, approved.note) == (
        "approved",
        DAY_SHIFT,
        "hand verified",
    )
    assert approved.reviewed_at_ms >= approved.hit_at_ms and len(approved.reviewed_by_cert) == 64

    done = await cage.RecordJackpotPaid(paid(hit.jackpot_id))
    assert (done.status, done.paid_by, done.paid_note) == (
        "paid",
        f"jackpot://{CAGE[0]}/{CAGE[1]}",
        "cage receipt 1187",
    )
    assert done.paid_at_ms >= done.reviewed_at_ms and len(done.paid_by_cert) == 64
    assert (done.reviewed_by, done.note, done.amount_cents) == (
        DAY_SHIFT,
        "hand verified",
        hit.amount_cents,
    )
    entries = [fields for _, fields in await journal(redis_client)]
    payment = [e for e in entries if e["type"] == "jackpot_paid"]
    assert len(payment) == 1 and payment[0]["payer"] == done.paid_by
    assert (payment[0]["d_meter"], payment[0]["d_reserve"], payment[0]["jackpot"]) == (
        "0",
        "0",
        hit.jackpot_id,
    )

    # The same identity repeating its own transition changes nothing, even after the next.
    before = await snapshot(redis_client)
    assert await cage.RecordJackpotPaid(paid(hit.jackpot_id)) == done
    assert await admin.ApproveJackpot(review(hit.jackpot_id, "hand verified")) == done
    assert await snapshot(redis_client) == before
    # Any other transition of the paid jackpot is refused by name.
    await expect_refusal(
        cashier(channels, "cage-2").RecordJackpotPaid(paid(hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        f"was already paid by {done.paid_by}; a jackpot is paid once",
    )
    await expect_refusal(
        admin.RejectJackpot(review(hit.jackpot_id, "too late")),
        grpc.StatusCode.FAILED_PRECONDITION,
        f"was already approved by {DAY_SHIFT} and paid by {done.paid_by}",
    )
    assert await snapshot(redis_client) == before
    assert (await verify(controller.store)).ok


async def test_only_an_approved_jackpot_is_paid(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    hit = await royal_hit(tables)
    cage = cashier(channels)
    before = await snapshot(redis_client)
    await expect_refusal(
        cage.RecordJackpotPaid(paid(hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "awaits a supervisor's validation; it is paid only once approved",
    )
    assert await snapshot(redis_client) == before
    rejected = await admin.RejectJackpot(review(hit.jackpot_id, "two cards exposed"))
    assert (rejected.status, rejected.note) == ("rejected", "two cards exposed")
    assert rejected.reviewed_at_ms >= rejected.hit_at_ms
    before = await snapshot(redis_client)
    await expect_refusal(
        cage.RecordJackpotPaid(paid(hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        f"was rejected by {DAY_SHIFT} (two cards exposed); a rejected jackpot is not paid",
    )
    await expect_refusal(
        admin.ApproveJackpot(review(hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        f"was already rejected by {DAY_SHIFT}",
    )
    assert await admin.RejectJackpot(review(hit.jackpot_id, "two cards exposed")) == rejected
    assert await snapshot(redis_client) == before


async def test_a_rejection_states_its_reason(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
    redis_client: Redis,
) -> None:
    hit = await royal_hit(tables)
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.RejectJackpot(review(hit.jackpot_id)),
        grpc.StatusCode.INVALID_ARGUMENT,
        "a rejection needs its reason",
    )
    assert await snapshot(redis_client) == before


async def test_the_approver_does_not_record_the_payment(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    hit = await royal_hit(tables)
    await admin.ApproveJackpot(review(hit.jackpot_id))
    before = await snapshot(redis_client)
    await expect_refusal(
        admin.RecordJackpotPaid(paid(hit.jackpot_id)),  # routed as the operator: not a payer
        grpc.StatusCode.PERMISSION_DENIED,
        "it is for: cashier, supervisor",
    )
    approver = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
    await expect_refusal(
        approver.RecordJackpotPaid(paid(hit.jackpot_id)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "its payment is recorded by another identity (one validates, another pays)",
    )
    assert await snapshot(redis_client) == before
    other = pb_grpc.AdminServiceStub(channels("supervisor", "pit-boss"))
    done = await other.RecordJackpotPaid(paid(hit.jackpot_id, ""))
    assert (done.status, done.paid_by) == ("paid", "jackpot://supervisor/pit-boss")


@pytest.mark.parametrize(
    ("role", "method", "allowed"),
    [
        ("cashier", "ListJackpots", True),
        ("cashier", "ListPendingJackpots", True),
        ("cashier", "ApproveJackpot", False),
        ("cashier", "RejectJackpot", False),
        ("auditor", "ListJackpots", True),
        ("auditor", "RecordJackpotPaid", False),
        ("operator", "RecordJackpotPaid", False),
        ("table", "GetJackpot", False),
    ],
)
async def test_who_may_do_what(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    role: str,
    method: str,
    allowed: bool,
) -> None:
    hit = await royal_hit(tables)
    requests = {
        "ListJackpots": pb.ListJackpotsRequest(),
        "ListPendingJackpots": pb.ListPendingJackpotsRequest(),
        "GetJackpot": pb.GetJackpotRequest(jackpot_id=hit.jackpot_id),
        "ApproveJackpot": review(hit.jackpot_id),
        "RejectJackpot": review(hit.jackpot_id, "no"),
        "RecordJackpotPaid": paid(hit.jackpot_id),
    }
    stub = pb_grpc.AdminServiceStub(channels(role, "t1" if role == "table" else "someone"))
    call = getattr(stub, method)(requests[method])
    if allowed:
        await call
    else:
        await expect_refusal(call, grpc.StatusCode.PERMISSION_DENIED, f"may not call {method}")


async def test_listing_filters_by_status_table_and_time(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    floor: Floor,
) -> None:
    await floor.register("t2")
    first = await royal_hit(tables)
    await tables.Lockout(lockout("t2", 1, [4]))
    second = (await tables.Settle(settle("t2", 1, {4: STRAIGHT_FLUSH_HEARTS}))).results[0]
    await admin.ApproveJackpot(review(first.jackpot_id))

    async def ids(**filters: object) -> list[str]:
        reply = await admin.ListJackpots(pb.ListJackpotsRequest(**filters))  # type: ignore[arg-type]
        return [j.jackpot_id for j in reply.jackpots]

    assert await ids() == [first.jackpot_id, second.jackpot_id]  # journal order
    assert await ids(status="approved") == [first.jackpot_id]
    assert await ids(status="pending") == [second.jackpot_id]
    assert await ids(status="paid") == []
    assert await ids(table_id="t2") == [second.jackpot_id]
    assert await ids(link_group_id="floor", table_id="t1") == [first.jackpot_id]
    hits = {
        j.jackpot_id: j.hit_at_ms
        for j in (await admin.ListJackpots(pb.ListJackpotsRequest())).jackpots
    }
    at = hits[second.jackpot_id]
    assert second.jackpot_id in await ids(from_ms=at, to_ms=at + 1)
    assert second.jackpot_id not in await ids(from_ms=at + 1)
    assert second.jackpot_id not in await ids(to_ms=at)


@pytest.mark.parametrize(
    ("request_", "text"),
    [
        (pb.ListJackpotsRequest(status="cashed"), "status 'cashed' is not one of pending"),
        (pb.ListJackpotsRequest(from_ms=5, to_ms=5), "is not before to_ms 5"),
        (pb.ListJackpotsRequest(from_ms=-1), "never negative"),
        (pb.ListJackpotsRequest(table_id="no such\n"), "table_id"),
    ],
)
async def test_bad_listings_are_refused(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor, request_: pb.ListJackpotsRequest, text: str
) -> None:
    await expect_refusal(admin.ListJackpots(request_), grpc.StatusCode.INVALID_ARGUMENT, text)


@pytest.mark.parametrize(
    ("jackpot_id", "code"),
    [("floor:999", grpc.StatusCode.NOT_FOUND), ("garbage", grpc.StatusCode.INVALID_ARGUMENT)],
)
async def test_paying_an_unknown_jackpot_is_refused(
    channels: Channels, floor: Floor, jackpot_id: str, code: grpc.StatusCode
) -> None:
    await expect_refusal(cashier(channels).RecordJackpotPaid(paid(jackpot_id)), code, jackpot_id)


async def threshold_floor(admin: pb_grpc.AdminServiceAsyncStub, threshold_cents: int) -> Floor:
    """The standard floor with table t1 holding fixed awards above ``threshold_cents``."""
    floor = Floor(admin)
    await floor.create(tables=())
    table = progressive_table("t1", "floor", "cs-main")
    table.validation_threshold_cents = threshold_cents
    await admin.RegisterTable(pb.RegisterTableRequest(table=table))
    return floor


async def test_a_fixed_award_above_the_threshold_awaits_validation_and_moves_no_meter(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    controller: ControllerServer,
) -> None:
    floor = await threshold_floor(admin, 49_999)  # four of a kind: 500 for 1 = $500.00
    await tables.Lockout(lockout("t1", 1, [3, 5]))
    locked = await floor.meter()
    settled = await tables.Settle(settle("t1", 1, {3: FOUR_TWOS, 5: FULL_HOUSE}))
    four, full_house = (next(r for r in settled.results if r.seat == s) for s in (3, 5))
    assert (four.amount_cents, four.pending_validation) == (50_000, True)
    assert four.jackpot_id == f"floor:{four.journal_seq}"
    assert (full_house.amount_cents, full_house.pending_validation) == (10_000, False)
    assert not full_house.jackpot_id
    meter = await floor.meter()
    assert meter.amount_microcents == locked.amount_microcents  # a fixed award: no meter
    assert meter.pending_jackpots == 0 and meter.hits_total == 0
    slip = await admin.GetJackpot(pb.GetJackpotRequest(jackpot_id=four.jackpot_id))
    assert (slip.meter_id, slip.award_kind, slip.award_text, slip.cards) == (
        "",
        "for_one",
        "500 for 1",
        FOUR_TWOS,
    )
    pending = await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())
    assert [j.jackpot_id for j in pending.jackpots] == [four.jackpot_id]
    await admin.ApproveJackpot(review(four.jackpot_id))
    done = await cashier(channels).RecordJackpotPaid(paid(four.jackpot_id))
    assert done.status == "paid"
    assert (await floor.meter()).amount_microcents == locked.amount_microcents
    assert (await verify(controller.store)).ok


async def test_rejecting_a_fixed_award_moves_no_money(
    tables: pb_grpc.TableServiceAsyncStub,
    admin: pb_grpc.AdminServiceAsyncStub,
    controller: ControllerServer,
) -> None:
    floor = await threshold_floor(admin, 0)  # every fixed award waits
    await tables.Lockout(lockout("t1", 1, [5]))
    locked = await floor.meter()
    held = (await tables.Settle(settle("t1", 1, {5: FULL_HOUSE}))).results[0]
    assert held.pending_validation
    rejected = await admin.RejectJackpot(review(held.jackpot_id, "cards misread"))
    assert rejected.status == "rejected"
    meter = await floor.meter()
    assert (meter.amount_microcents, meter.reserve_microcents, meter.pending_jackpots) == (
        locked.amount_microcents,
        locked.reserve_microcents,
        0,
    )
    assert not (await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest())).jackpots
    assert (await verify(controller.store)).ok


async def test_at_the_threshold_a_fixed_award_is_paid_at_the_table(
    tables: pb_grpc.TableServiceAsyncStub, admin: pb_grpc.AdminServiceAsyncStub
) -> None:
    await threshold_floor(admin, 50_000)  # "above" the threshold: $500.00 is not
    await tables.Lockout(lockout("t1", 1, [3]))
    four = (await tables.Settle(settle("t1", 1, {3: FOUR_TWOS}))).results[0]
    assert (four.amount_cents, four.pending_validation, four.jackpot_id) == (50_000, False, "")
    assert not (await admin.ListJackpots(pb.ListJackpotsRequest())).jackpots
