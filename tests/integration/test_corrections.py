"""Corrections of a settled round over real gRPC, Redis and certificates: a supervisor
requests, a second identity approves (applied in one journaled step) or rejects; every refusal
is precise and changes nothing; the audit replays the result."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from redis.asyncio import Redis

from controller.ctl.main import main as jackpotctl
from controller.journal.audit import verify
from controller.runtime.server import ControllerServer
from controller.store import keys
from controller.testing import TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    HIGH_CARD,
    OPERATOR,
    PAIR,
    ROYAL_SPADES,
    Channels,
    Floor,
    expect_refusal,
    journal,
    lockout,
    settle,
    snapshot,
)
from tests.integration.test_mystery import _mystery_floor

FAILED = grpc.StatusCode.FAILED_PRECONDITION
INVALID = grpc.StatusCode.INVALID_ARGUMENT
DENIED = grpc.StatusCode.PERMISSION_DENIED
NOT_FOUND = grpc.StatusCode.NOT_FOUND
DEALER = "2D 3H 4S 7C 9S"
ANN = ("supervisor", "ann")
SUE = ("supervisor", "sue")
ANN_URI = "jackpot://supervisor/ann"
OPS_URI = f"jackpot://{OPERATOR[0]}/{OPERATOR[1]}"
PAIR_KEYED = "3C 5C 8C JC JD"  # the JD should have been the KC: a flush
MICRO = 1_000_000


def stub(channels: Channels, who: tuple[str, str]) -> pb_grpc.AdminServiceAsyncStub:
    return pb_grpc.AdminServiceStub(channels(*who))


def ask(
    round_id: int,
    hands: dict[int, str],
    *,
    wagers: list[int] | None = None,
    reason: str = "wrong card keyed",
    table_id: str = "t1",
    request_id: str = "",
) -> pb.RequestCorrectionRequest:
    """A correction of ``round_id`` to ``hands`` (and the progressive wagers of ``wagers``,
    else the wagers accepted)."""
    request = pb.RequestCorrectionRequest(
        table_id=table_id,
        round_id=round_id,
        seats=[pb.SeatCards(seat=s, cards=c.split()) for s, c in hands.items()],
        dealer_cards=DEALER.split(),
        reason=reason,
        request_id=request_id,
    )
    if wagers is None:
        request.same_wagers = True
    else:
        request.wagers.extend(
            pb.Wager(seat=s, kind=pb.WAGER_KIND_PROGRESSIVE, amount_cents=100) for s in wagers
        )
    return request


def review(correction_id: str, note: str = "") -> pb.ReviewCorrectionRequest:
    return pb.ReviewCorrectionRequest(correction_id=correction_id, note=note)


async def audited(controller: ControllerServer) -> None:
    report = await verify(controller.store)
    assert report.ok, report.differences


async def play(tables: pb_grpc.TableServiceAsyncStub, round_id: int, hands: dict[int, str]) -> None:
    await tables.Lockout(lockout("t1", round_id, list(hands)))
    await tables.Settle(settle("t1", round_id, hands, dealer=DEALER))


async def test_a_supervisor_requests_and_another_identity_applies_a_correction(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
    controller: ControllerServer,
) -> None:
    ann, sue, ops = stub(channels, ANN), stub(channels, SUE), stub(channels, OPERATOR)
    await play(tables, 1, {3: PAIR_KEYED, 5: HIGH_CARD})
    requested = await ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS, 5: HIGH_CARD}))
    assert requested.status == "requested" and requested.requested_by == ANN_URI
    assert requested.correction_id == f"floor:{requested.request_seq}"
    (line,) = requested.lines
    assert (line.seat, line.line, line.paid_cents, line.due_cents) == (3, "flush", 0, 5_000)
    assert [(s.seat, s.delta_cents) for s in requested.seats] == [(3, 5_000)]
    assert (requested.pay_cents, requested.recover_cents) == (5_000, 0)
    # a retry is the same correction; other content while it is pending is refused
    assert (await ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS, 5: HIGH_CARD}))) == requested
    await expect_refusal(
        sue.RequestCorrection(ask(1, {3: FLUSH_CLUBS, 5: PAIR})),
        FAILED,
        f"already has correction {requested.correction_id} pending (requested by {ANN_URI})",
    )
    before = await snapshot(redis_client)
    await expect_refusal(
        ann.ApproveCorrection(review(requested.correction_id)),
        FAILED,
        f"was requested by {ANN_URI}; a correction needs two people",
    )
    await expect_refusal(
        stub(channels, ("auditor", "audit")).ApproveCorrection(review(requested.correction_id)),
        DENIED,
        "",
    )
    assert await snapshot(redis_client) == before  # refusals change nothing

    applied = await ops.ApproveCorrection(review(requested.correction_id, "seen on camera"))
    assert applied.status == "approved" and applied.decided_by == OPS_URI
    assert applied.note == "seen on camera" and list(applied.jackpot_ids) == []
    assert (await ops.ApproveCorrection(review(requested.correction_id))) == applied  # a retry
    await expect_refusal(
        sue.RejectCorrection(review(requested.correction_id, "no")),
        FAILED,
        f"correction {requested.correction_id} was already approved by {OPS_URI}",
    )
    rows = await journal(redis_client)
    (entry,) = [f for _, f in rows if f["type"] == "round_corrected"]
    assert (entry["table"], entry["round"], entry["by"]) == ("t1", "1", OPS_URI)
    assert (entry["requested_by"], entry["pay_cents"]) == (ANN_URI, "5000")
    assert json.loads(entry["lines"])[0]["line"] == "flush"
    round_key = keys.LinkGroupKeys("floor").round("t1", 1)
    assert await redis_client.hget(round_key, "corrected_by") == OPS_URI
    assert await redis_client.hget(round_key, "correction") == requested.correction_id
    await expect_refusal(
        sue.RequestCorrection(ask(1, {3: FLUSH_CLUBS, 5: PAIR})),
        FAILED,
        f"was already corrected (correction {requested.correction_id}, approved)",
    )
    listed = await ops.ListCorrections(pb.ListCorrectionsRequest(status="approved"))
    assert [c.correction_id for c in listed.corrections] == [requested.correction_id]
    await audited(controller)


async def test_refusals_are_precise_and_change_nothing(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    ann, ops = stub(channels, ANN), stub(channels, OPERATOR)
    await play(tables, 1, {3: PAIR_KEYED})
    await tables.Lockout(lockout("t1", 2, [3]))  # locked out, not settled
    before = await snapshot(redis_client)
    await expect_refusal(
        ann.RequestCorrection(ask(9, {3: FLUSH_CLUBS})), NOT_FOUND, "round 9 of table t1 is unknown"
    )
    await expect_refusal(
        ann.RequestCorrection(ask(2, {3: FLUSH_CLUBS})), FAILED, "is locked, not settled"
    )
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: "3C 5C 8C JC 3C"})), INVALID, "card 3C is reported twice"
    )
    await expect_refusal(ann.RequestCorrection(ask(1, {3: "3C 5C 8C JC"})), INVALID, "seat 3")
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: "3C 5C 8C JC 2D"})),
        INVALID,
        "card 2D is reported twice",
    )
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: "3C 5C 8C JC QD"})), INVALID, "changes nothing"
    )
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}, reason="")), INVALID, "reason"
    )
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}, reason="x" * 201)), INVALID, "reason"
    )
    await expect_refusal(ops.RequestCorrection(ask(1, {3: FLUSH_CLUBS})), DENIED, "")
    await expect_refusal(
        ops.ApproveCorrection(review("floor:999")), NOT_FOUND, "correction floor:999 does not exist"
    )
    await expect_refusal(ops.ApproveCorrection(review("nonsense")), INVALID, "correction id")
    assert await snapshot(redis_client) == before

    requested = await ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}))
    await expect_refusal(
        ops.RejectCorrection(review(requested.correction_id)), INVALID, "needs its reason"
    )
    rejected = await ann.RejectCorrection(review(requested.correction_id, "withdrawn"))
    assert rejected.status == "rejected" and rejected.decided_by == ANN_URI
    # a rejected correction leaves the round open to a new one
    again = await ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}, request_id="second"))
    assert again.correction_id != requested.correction_id and again.status == "requested"
    await expect_refusal(
        ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}, reason="other", request_id="second")),
        FAILED,
        "request id second is correction",
    )


async def test_a_missed_wager_contributes_and_a_wrong_one_is_taken_back(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    ann, sue = stub(channels, ANN), stub(channels, SUE)
    await play(tables, 1, {2: HIGH_CARD, 4: PAIR})
    before = (await floor.meter()).amount_cents
    # seat 6 had a wager (and a flush) the sensor missed; seat 2 had none
    correction = await ann.RequestCorrection(
        ask(1, {4: PAIR, 6: FLUSH_CLUBS}, wagers=[4, 6], reason="sensor missed seat 6")
    )
    assert sorted((w.seat, w.removed) for w in correction.wagers) == [(2, True), (6, False)]
    assert [(x.seat, x.delta_cents) for x in correction.lines] == [(6, 5_000)]
    await sue.ApproveCorrection(review(correction.correction_id))
    assert (await floor.meter()).amount_cents == before  # +15 cents for seat 6, -15 for seat 2
    await audited(controller)


async def test_a_missed_royal_becomes_a_pending_jackpot_at_the_recorded_meter(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
) -> None:
    ann, sue = stub(channels, ANN), stub(channels, SUE)
    await play(tables, 1, {1: "AS KS QS JS 9D"})
    recorded = (await floor.meter()).amount_cents
    correction = await ann.RequestCorrection(ask(1, {1: ROYAL_SPADES}, reason="TS keyed as 9D"))
    (line,) = correction.lines
    assert (line.basis, line.due_cents, line.needs_validation) == (
        "meter_after_original_settlement",
        recorded,
        True,
    )
    assert correction.operator_funded_cents == recorded
    await play(tables, 2, {1: HIGH_CARD})  # the meter moves on; the correction does not
    applied = await sue.ApproveCorrection(review(correction.correction_id))
    (jackpot_id,) = applied.jackpot_ids
    jackpot = await sue.GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot_id))
    assert (jackpot.amount_cents, jackpot.meter_id, jackpot.status) == (recorded, "", "pending")
    assert (await floor.meter()).amount_cents == recorded + 15  # round 2's contribution only
    await sue.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot_id))
    cashier = stub(channels, ("cashier", "cage"))
    paid = await cashier.RecordJackpotPaid(pb.RecordJackpotPaidRequest(jackpot_id=jackpot_id))
    assert paid.status == "paid"
    await audited(controller)


async def test_the_dealer_window_closes_at_the_next_lockout(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
) -> None:
    await floor.register("t2")
    table = stub(channels, ("table", "t1"))
    await play(tables, 1, {3: PAIR_KEYED})
    from_console = await table.RequestCorrection(ask(1, {3: FLUSH_CLUBS}))
    assert from_console.from_table and from_console.requested_by == "jackpot://table/t1"
    await expect_refusal(
        stub(channels, ("table", "t2")).RequestCorrection(ask(1, {3: FLUSH_CLUBS})), DENIED, ""
    )
    await stub(channels, ANN).RejectCorrection(review(from_console.correction_id, "retry"))
    await tables.Lockout(lockout("t1", 2, [3]))
    await expect_refusal(
        table.RequestCorrection(ask(1, {3: FLUSH_CLUBS}, request_id="late")),
        FAILED,
        "the dealer's window of round 1 of table t1 is closed",
    )
    # a supervisor still may
    assert (await stub(channels, ANN).RequestCorrection(ask(1, {3: FLUSH_CLUBS}))).status == (
        "requested"
    )


async def test_corrections_on_the_command_line(
    tables: pb_grpc.TableServiceAsyncStub,
    controller: ControllerServer,
    floor: Floor,
    pki: TestPKI,
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = ["--controller", f"127.0.0.1:{controller.port}"]
    ann = [*address, *pki.client_args(*ANN)]
    ops = [*address, *pki.client_args(*OPERATOR)]

    async def ctl(*argv: str) -> tuple[int, str]:
        status = await asyncio.to_thread(jackpotctl, list(argv))
        out = capsys.readouterr()
        return status, out.out + out.err

    await play(tables, 1, {3: PAIR_KEYED, 5: HIGH_CARD})
    seats = ["--seat", f"3={FLUSH_CLUBS}", "--seat", f"5={HIGH_CARD}", "--dealer", DEALER]
    status, text = await ctl(*ann, "rounds", "correct", "t1", "1", *seats, "--reason", "KC")
    assert status == 0, text
    assert "seat 3 progressive: flush (flush), paid $0.00, due $50.00 (+$50.00; fixed)" in text
    assert "seat 3: pay $50.00" in text
    correction_id = text.split()[1]
    status, text = await ctl(*ann, "rounds", "approve-correction", correction_id)
    assert status == 1 and "FAILED_PRECONDITION" in text and "needs two people" in text
    status, text = await ctl(*ops, "rounds", "corrections", "--status", "requested")
    assert status == 0 and correction_id in text and "$50.00" in text
    status, text = await ctl(*ops, "rounds", "approve-correction", correction_id, "--note", "ok")
    assert status == 0 and f"approved by {OPS_URI}: ok" in text
    status, text = await ctl(
        *ann, "rounds", "correct", "t1", "1", *seats, "--wager", "3:roulette:1", "--reason", "x"
    )
    assert status == 1 and "no wager kind 'roulette'" in text
    status, text = await ctl(*ann, "rounds", "correct", "t1", "1", "--seat", "3", "--reason", "x")
    assert status == 1 and 'write N="CARDS"' in text
    with pytest.raises(SystemExit):  # argparse: a rejection's note is required
        await ctl(*ops, "rounds", "reject-correction", correction_id)
    assert "--note" in capsys.readouterr().err


async def test_a_round_with_a_jackpot_not_yet_paid_is_refused_until_it_is(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    ann = stub(channels, ANN)
    await tables.Lockout(lockout("t1", 1, [1]))
    answer = await tables.Settle(settle("t1", 1, {1: ROYAL_SPADES}, dealer=DEALER))
    jackpot_id = answer.results[0].jackpot_id
    fixed = ask(1, {1: "AS KS QS JS TD"}, reason="the TD was keyed as the TS")
    await expect_refusal(
        ann.RequestCorrection(fixed),
        FAILED,
        f"jackpot {jackpot_id} of round 1 of table t1 is pending",
    )
    # the normal flow first: the royal that was not is rejected, its award back in the meter
    await ann.RejectJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot_id, note="not a royal"))
    correction = await ann.RequestCorrection(fixed)
    assert [(x.line, x.paid_cents, x.due_cents) for x in correction.lines] == [
        ("straight", 0, 1_000)
    ]
    assert correction.recover_cents == 0  # the rejected award was never paid


async def test_a_record_of_a_later_schema_version_is_refused_by_name(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    floor: Floor,
    redis_client: Redis,
) -> None:
    ann = stub(channels, ANN)
    await play(tables, 1, {3: PAIR_KEYED})
    requested = await ann.RequestCorrection(ask(1, {3: FLUSH_CLUBS}))
    corrections = keys.LinkGroupKeys("floor").corrections
    record = json.loads(str(await redis_client.hget(corrections, requested.correction_id)))
    await redis_client.hset(corrections, requested.correction_id, json.dumps(record | {"v": 99}))
    await expect_refusal(
        stub(channels, SUE).ApproveCorrection(review(requested.correction_id)),
        grpc.StatusCode.UNAVAILABLE,
        f"correction {requested.correction_id} has schema version 99",
    )


async def test_a_correction_moving_a_must_hit_by_meter_is_refused_at_approval(
    tables: pb_grpc.TableServiceAsyncStub,
    channels: Channels,
    controller: ControllerServer,
    redis_client: Redis,
) -> None:
    table = await _mystery_floor(controller.store, "mg", 10**8)
    await tables.Lockout(lockout(table.table_id, 1, [1]))
    await tables.Settle(settle(table.table_id, 1, {1: HIGH_CARD}, dealer=DEALER))
    correction = await stub(channels, ANN).RequestCorrection(
        ask(1, {1: HIGH_CARD, 2: FLUSH_CLUBS}, wagers=[1, 2], table_id=table.table_id)
    )
    before = await snapshot(redis_client)
    await expect_refusal(
        stub(channels, SUE).ApproveCorrection(review(correction.correction_id)),
        FAILED,
        "meter mg-mystery is a must-hit-by meter: a correction moves no contribution of it",
    )
    assert await snapshot(redis_client) == before
