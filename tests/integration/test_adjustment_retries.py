"""An adjustment request is idempotent by its request id for ever, approved or not: a retry
after its approval used to make a second adjustment (the retry was matched only against the
waiting ones)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.runtime.server import ControllerServer
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import OPERATOR, Channels, Floor, expect_refusal, journal, snapshot
from tests.integration.test_controls import entries

FAILED = grpc.StatusCode.FAILED_PRECONDITION
RESET_CENTS = 1_000_000
BOB = ("operator", "bob")


def _ask(
    amount: int = -2_500, request_id: str = "", reference: str = "incident 77"
) -> pb.RequestAdjustmentRequest:
    return pb.RequestAdjustmentRequest(
        meter_id="cs-main",
        amount_cents=amount,
        reason="double seed",
        reference=reference,
        request_id=request_id,
    )


async def _refused_unchanged(redis_client: Redis, call: object, text: str) -> None:
    before = await snapshot(redis_client)
    await expect_refusal(call, FAILED, text)  # type: ignore[arg-type]
    assert await snapshot(redis_client) == before


@pytest.mark.parametrize("request_id", ["", "ticket-77.1"])
async def test_a_retry_after_the_approval_is_the_same_adjustment(
    admin: pb_grpc.AdminServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    request_id: str,
) -> None:
    bob = pb_grpc.AdminServiceStub(channels(*BOB))
    requested = await admin.RequestAdjustment(_ask(request_id=request_id))
    assert requested.request_id == request_id or requested.request_id.startswith("content:")
    review = pb.ReviewAdjustmentRequest(adjustment_id=requested.adjustment_id, note="checked")
    approved = await bob.ApproveAdjustment(review)
    assert (await floor.meter()).amount_cents == RESET_CENTS - 2_500

    # The answer was lost; the same request again, after the approval: the same adjustment.
    before = await snapshot(redis_client)
    again = await admin.RequestAdjustment(_ask(request_id=request_id))
    assert again == approved
    assert await snapshot(redis_client) == before
    assert (await floor.meter()).amount_cents == RESET_CENTS - 2_500
    assert len(entries(await journal(redis_client), "adjustment_requested")) == 1

    if request_id:
        # The same request id for another request: refused, naming what differs.
        await _refused_unchanged(
            redis_client,
            admin.RequestAdjustment(_ask(-9_900, request_id)),
            f"request id {request_id} is adjustment {requested.adjustment_id} (approved), "
            "whose amount_cents is -2500, not -9900; a new adjustment needs a new request id",
        )
        await _refused_unchanged(
            redis_client,
            bob.RequestAdjustment(_ask(request_id=request_id)),
            "whose requested_by is jackpot://operator/ops, not jackpot://operator/bob",
        )
        # A new request id is a new adjustment, even with the same content.
        other = await admin.RequestAdjustment(_ask(request_id="ticket-77.2"))
        assert other.adjustment_id != requested.adjustment_id
        assert other.status == "requested"


async def test_a_retry_after_the_rejection_is_the_rejected_adjustment(
    admin: pb_grpc.AdminServiceAsyncStub, floor: Floor, redis_client: Redis
) -> None:
    requested = await admin.RequestAdjustment(_ask(100, "r-1"))
    rejected = await admin.RejectAdjustment(
        pb.ReviewAdjustmentRequest(adjustment_id=requested.adjustment_id, note="wrong amount")
    )
    before = await snapshot(redis_client)
    assert await admin.RequestAdjustment(_ask(100, "r-1")) == rejected
    assert await snapshot(redis_client) == before
    await expect_refusal(
        admin.RequestAdjustment(_ask(100, "r/1")), grpc.StatusCode.INVALID_ARGUMENT, "request_id"
    )


async def test_the_command_line_retry_says_it_was_made_before(
    controller: ControllerServer,
    channels: Channels,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    alice = ["--controller", f"127.0.0.1:{controller.port}", *pki.client_args(*OPERATOR)]
    adjust = [*alice, "meters", "adjust", "cs-main", "--amount", "-12.50", "--reason", "seed"]
    adjust += ["--reference", "incident 78"]

    async def ctl(*argv: str) -> tuple[int, str]:
        status = await asyncio.to_thread(jackpotctl, list(argv))
        out = capsys.readouterr()
        return status, out.out + out.err

    status, text = await ctl(*adjust)
    assert status == 0 and "nothing moves until another operator approves" in text
    adjustment_id = text.split(":", 2)[0] + ":" + text.split(":", 2)[1]
    bob = pb_grpc.AdminServiceStub(channels(*BOB))
    await bob.ApproveAdjustment(pb.ReviewAdjustmentRequest(adjustment_id=adjustment_id))
    status, text = await ctl(*adjust)
    assert status == 0 and text.startswith(f"{adjustment_id}: approved by jackpot://operator/bob")
    assert "this request was made before" in text and "is approved" in text
    assert (await floor.meter()).amount_cents == RESET_CENTS - 1_250
