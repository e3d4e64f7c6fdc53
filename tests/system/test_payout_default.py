"""A controller started with no ``--payout-compliance`` holds a hand-pay to issue 23's
defaults (us-default): a royal flush's jackpot of $1,200 or more at 300x its wager or more is
recorded paid only with a W-2G tax-form reference and a witness (docs/payout-compliance.md)."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, ROYAL_SPADES
from tests.system.test_web_browser import play


def test_no_option_requires_the_tax_form_and_the_witness(tmp_path: Path, pki: TestPKI) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        controller = ControllerProcess(
            redis.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--table-calls-per-second", "0"),
            payout_compliance=None,  # no option on the command line
        )
        with controller:
            script = tmp_path / "royal.json"
            script.write_text(json.dumps({"hands": {"3": ROYAL_SPADES}}))
            play(controller, "cs-1", "--rounds", "0", "--script", str(script))
            channels = [
                tls.channel(controller.target, pki.client(role, name))
                for role, name in (
                    ("supervisor", "floor-boss"),
                    ("cashier", "cage-1"),
                    ("supervisor", "night-shift"),
                )
            ]
            boss, cage, night = (pb_grpc.AdminServiceStub(channel) for channel in channels)
            try:
                pending = boss.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10)
                (jackpot,) = [j for j in pending.jackpots if (j.table_id, j.seat) == ("cs-1", 3)]
                assert jackpot.amount_cents >= 120_000
                assert jackpot.amount_cents >= 300 * jackpot.wager_cents
                boss.ApproveJackpot(
                    pb.ReviewJackpotRequest(jackpot_id=jackpot.jackpot_id), timeout=10
                )
                slip = boss.GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot.jackpot_id))
                assert (slip.payout_compliance, slip.tax_form_required) == ("us-default", True)
                assert slip.witness_required and slip.tax_form_overridable

                paid = pb.RecordJackpotPaidRequest(jackpot_id=jackpot.jackpot_id, note="r 1")
                with pytest.raises(grpc.RpcError) as refused:
                    cage.RecordJackpotPaid(paid, timeout=10)
                assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
                details = refused.value.details() or ""
                assert "missing the W-2G tax-form reference" in details, details
                assert "and a witness" in details, details

                paid.tax_form_ref = "W2G-2026-0007"
                with pytest.raises(grpc.RpcError) as refused:
                    cage.RecordJackpotPaid(paid, timeout=10)
                details = refused.value.details() or ""
                assert "missing a witness" in details and "W-2G" not in details, details

                witness = pb.WitnessJackpotPaymentRequest(jackpot_id=jackpot.jackpot_id)
                night.WitnessJackpotPayment(witness, timeout=10)
                done = cage.RecordJackpotPaid(paid, timeout=10)
                assert (done.status, done.tax_form_ref, done.witnessed_by) == (
                    "paid",
                    "W2G-2026-0007",
                    "jackpot://supervisor/night-shift",
                )
            finally:
                for channel in channels:
                    channel.close()
