"""The floor view's cage queue under a payout compliance policy, in headless Chromium,
against a real controller process (no ``--payout-compliance``: the default, us-default) and
real agents.

A scripted royal flush is approved; the cage's queue states what its hand-pay needs (a W-2G
and a witness, with the reasons); the cage's Paid dialog asks for the tax-form reference (a
reference of another form cannot be confirmed) and is refused while no witness is recorded;
a supervisor's Witness button records the witness (an auditor's is refused); then the cage's
Paid goes through with the reference, both stored with their certificates
(docs/payout-compliance.md). Values are asserted, never times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port
from jackpot import tls
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, ROYAL_SPADES
from tests.system.browser import chromium, eventually, needs_chromium, screenshot
from tests.system.test_web_browser import fingerprint, floor_page, play, post_from_page

pytestmark = [needs_chromium, pytest.mark.slow]


@pytest.fixture
def compliance_system(tmp_path: Path, pki: TestPKI) -> Iterator[ControllerProcess]:
    """redis-server and a controller under the default payout policy (us-default), web port
    on."""
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=(
                "--table-calls-per-second",
                "0",
                "--web-port",
                str(web_port),
            ),
            payout_compliance=None,  # the controller's default
        )
        controller.web_port = web_port  # type: ignore[attr-defined]
        with controller:
            yield controller


def stub(controller: ControllerProcess, pki: TestPKI, role: str, name: str) -> tuple[Any, Any]:
    channel = tls.channel(controller.target, pki.client(role, name))
    return channel, pb_grpc.AdminServiceStub(channel)


def test_the_cage_pays_with_the_reference_after_the_witness(
    compliance_system: ControllerProcess, pki: TestPKI, tmp_path: Path
) -> None:
    controller = compliance_system
    origin = f"https://127.0.0.1:{controller.web_port}"  # type: ignore[attr-defined]
    script = tmp_path / "royal.json"
    script.write_text(json.dumps({"hands": {"2": ROYAL_SPADES}}))
    play(controller, "cs-2", "--rounds", "0", "--script", str(script))
    channel, boss = stub(controller, pki, "supervisor", "floor-boss")
    with channel, chromium() as browser:
        pending = boss.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (jackpot,) = [j for j in pending if (j.table_id, j.seat) == ("cs-2", 2)]
        boss.ApproveJackpot(pb.ReviewJackpotRequest(jackpot_id=jackpot.jackpot_id), timeout=10)
        money = format_cents(jackpot.amount_cents)

        def record() -> pb.Jackpot:
            request = pb.GetJackpotRequest(jackpot_id=jackpot.jackpot_id)
            found: pb.Jackpot = boss.GetJackpot(request, timeout=10)
            return found

        cage = floor_page(browser, pki, origin, "cashier", "cage-1")
        row = cage.locator(f'#to-pay tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(row.count, "the cage sees the approved jackpot")
        w2g = row.locator(".needs-w2g").text_content() or ""
        assert w2g.startswith(f"W-2G required: yes ({money} >= $600.00 and >= 300x"), w2g
        assert row.locator(".needs-witness").text_content() == "witness required: yes"
        screenshot(cage, "floor-compliance-to-pay")

        # Paid without a witness: the dialog asks for the reference; the controller refuses.
        row.locator("button.paid").click()
        dialog, ok = cage.locator("#confirm"), cage.locator("#confirm-ok")
        eventually(dialog.is_visible, "the hand-pay dialog opens")
        assert cage.locator("#confirm-taxref").is_visible()
        slip = cage.locator("#confirm-slip").inner_text()
        assert "W-2G required" in slip and "Witness required" in slip
        cage.fill("#confirm-amount", money)
        cage.fill("#confirm-note", "cage receipt 1190")
        assert ok.is_disabled(), "the reference is required"
        cage.fill("#confirm-taxref", "John Smith")
        assert ok.is_disabled(), "a name is not a reference"
        cage.fill("#confirm-taxref", "W2G-2025-0042")
        assert ok.is_enabled()
        screenshot(cage, "floor-compliance-paid-dialog")
        ok.click()
        eventually(
            lambda: "missing a witness" in cage.inner_text("#message"),
            "the refusal names the missing witness",
        )
        assert record().status == "approved"

        # The witness: an auditor may not; another supervisor does, from its own page.
        audit = floor_page(browser, pki, origin, "auditor", "audit")
        fields = {"jackpot_id": jackpot.jackpot_id, "amount_cents": jackpot.amount_cents}
        status, message = post_from_page(audit, "/floor/witness", fields)
        assert status == 403 and "it is for: cashier, supervisor" in message, message
        night = floor_page(browser, pki, origin, "supervisor", "night-shift")
        night_row = night.locator(f'#to-pay tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(night_row.count, "the supervisor sees the jackpot to pay")
        assert night_row.locator("button.paid").count() == 0
        night_row.locator("button.witness").click()
        eventually(night.locator("#confirm").is_visible, "the witness dialog opens")
        assert not night.locator("#confirm-taxref").is_visible()
        night.fill("#confirm-amount", money)
        night.locator("#confirm-ok").click()
        witnessed = eventually(lambda: record().witnessed_by or None, "the witness is stored")
        assert witnessed == "jackpot://supervisor/night-shift"
        assert record().witnessed_by_cert == fingerprint(pki, "supervisor", "night-shift")
        eventually(
            lambda: (
                "witnessed by jackpot://supervisor/night-shift"
                in (row.locator(".needs-witness").text_content() or "")
            ),
            "the cage's queue shows the witness",
        )

        # Now the cage's Paid goes through, with the reference.
        row.locator("button.paid").click()
        eventually(dialog.is_visible, "the hand-pay dialog opens again")
        cage.fill("#confirm-amount", money)
        cage.fill("#confirm-note", "cage receipt 1190")
        cage.fill("#confirm-taxref", "W2G-2025-0042")
        ok.click()
        paid = eventually(
            lambda: record() if record().status == "paid" else None, "the hand-pay is stored"
        )
        assert (paid.paid_by, paid.tax_form_ref, paid.witnessed_by) == (
            "jackpot://cashier/cage-1",
            "W2G-2025-0042",
            "jackpot://supervisor/night-shift",
        )
        assert paid.paid_by_cert == fingerprint(pki, "cashier", "cage-1")
        eventually(lambda: not row.count(), "the paid jackpot has left the queue")
        screenshot(cage, "floor-compliance-paid")
