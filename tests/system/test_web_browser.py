"""The meter sign and the floor view in headless Chromium, against real processes.

A controller process with ``--web-port`` over a real redis-server; simulated table agents
play real rounds, one of them a scripted royal flush. The sign (a ``display`` certificate)
must show the meter rising, then the winner and the meter back at its reset; the floor view
(a ``supervisor`` certificate) must list the pending jackpot and approve it, journaled with
that supervisor's identity and certificate; and with the controller stopped (SIGSTOP) the
sign must say PROGRESSIVE OFFLINE, then recover when it continues. Values are asserted, never
times: every wait is a poll bounded by a deadline. Screenshots: ``test-artifacts/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from controller.store import keys
from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port
from jackpot import tls
from jackpot.money import format_cents
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, ROYAL_SPADES
from tests.system.browser import chromium, eventually, needs_chromium, screenshot

pytestmark = [needs_chromium, pytest.mark.slow]

RESET_CENTS = 1_000_000  # cs-main's reset amount in the example Rules Submission ($10,000)


@pytest.fixture
def web_system(tmp_path: Path, pki: TestPKI) -> Iterator[tuple[RedisServer, ControllerProcess]]:
    """redis-server and a controller serving its web pages on a free port (its number is
    the controller's ``web_port`` attribute)."""
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--table-calls-per-second", "0", "--web-port", str(web_port)),
        )
        controller.web_port = web_port  # type: ignore[attr-defined]
        with controller:
            yield server, controller


def play(controller: ControllerProcess, table_id: str, *args: str) -> None:
    """Run a simulated table agent to its end (bounded)."""
    command = [sys.executable, "-m", "table_agent.cli", "--table-id", table_id, "--sim"]
    command += ["--controller", controller.target, "--quiet"]
    command += [*controller.client_args("table", table_id), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def certificate(pki: TestPKI, origin: str, role: str, name: str) -> dict[str, str]:
    """Playwright's client certificate option for ``role``/``name`` at ``origin``."""
    files = pki.client(role, name)
    return {"origin": origin, "certPath": str(files.cert), "keyPath": str(files.key)}


def fingerprint(pki: TestPKI, role: str, name: str) -> str:
    """The SHA-256 (hex) of a certificate, as the journal records it."""
    pem = pki.client(role, name).cert.read_text()
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()


def admin(controller: ControllerProcess, pki: TestPKI) -> Any:
    files = pki.client("auditor", "web-test")
    channel = tls.channel(controller.target, files)
    return channel, pb_grpc.AdminServiceStub(channel)


def meter_cents(stub: Any) -> int:
    return int(stub.GetMeter(pb.GetMeterRequest(meter_id="cs-main"), timeout=10).amount_cents)


def test_sign_and_floor_view_in_chromium(
    web_system: tuple[RedisServer, ControllerProcess], pki: TestPKI, tmp_path: Path
) -> None:
    server, controller = web_system
    origin = f"https://127.0.0.1:{controller.web_port}"  # type: ignore[attr-defined]
    channel, stub = admin(controller, pki)
    with channel, chromium() as browser:
        sign_context = browser.new_context(
            client_certificates=[certificate(pki, origin, "display", "pit-sign")],
            ignore_https_errors=True,  # the casino CA is not Chromium's; the client cert is
            viewport={"width": 1920, "height": 1080},
        )
        sign = sign_context.new_page()
        sign.goto(origin + "/sign/floor")
        amount = sign.locator('[data-meter-id="cs-main"] .amount')
        offline = sign.locator("#offline")

        def sign_shows(cents: int) -> bool:
            return amount.get_attribute("data-cents") == str(cents) and not offline.is_visible()

        eventually(lambda: sign_shows(RESET_CENTS), "the sign shows the reset amount")
        assert amount.get_attribute("aria-label") == "$10,000.00"
        screenshot(sign, "sign-at-reset")

        play(controller, "cs-1", "--rounds", "3", "--occupancy-percent", "100")
        risen = meter_cents(stub)
        assert risen > RESET_CENTS, "three rounds of progressive wagers raise the meter"
        eventually(lambda: sign_shows(risen), f"the sign follows the meter to {risen}")
        assert amount.get_attribute("aria-label") == format_cents(risen)

        script = tmp_path / "royal.json"
        script.write_text(json.dumps({"hands": {"2": ROYAL_SPADES}}))
        play(controller, "cs-2", "--rounds", "0", "--script", str(script))
        pending = stub.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (jackpot,) = [
            j for j in pending if (j.table_id, j.seat, j.meter_id) == ("cs-2", 2, "cs-main")
        ]
        assert jackpot.meter_after_cents < jackpot.meter_before_cents
        after = meter_cents(stub)  # the reset (and any later hit of that round's seat 1)
        eventually(lambda: sign_shows(after), "the sign shows the meter after the royal flush")
        expected = [
            "Table cs-2",
            "Seat 2",
            jackpot.hand.replace("_", " "),
            format_cents(jackpot.amount_cents),
        ]
        rows = sign.locator("#winners tr.winner")

        def winner_listed() -> bool:
            return any(
                rows.nth(i).locator("td").all_inner_texts()[:4] == expected
                for i in range(rows.count())
            )

        eventually(winner_listed, "the winner is listed")
        screenshot(sign, "sign-winner")

        floor_context = browser.new_context(
            client_certificates=[certificate(pki, origin, "supervisor", "floor-boss")],
            ignore_https_errors=True,
            viewport={"width": 1600, "height": 1000},
        )
        floor = floor_context.new_page()
        floor.goto(origin + "/floor")
        row = floor.locator(f'#pending tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(row.count, "the floor view lists the pending jackpot")
        assert format_cents(jackpot.amount_cents) in row.inner_text()
        table_state = floor.locator('#tables tr[data-table-id="cs-2"] .state')
        assert table_state.inner_text() == "playing"
        screenshot(floor, "floor-pending")
        row.locator("button.approve").click()

        def reviewed() -> Any:
            found = stub.GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot.jackpot_id), timeout=10)
            return found if found.status == "approved" else None

        approved = eventually(reviewed, "the floor view's approval reaches the store")
        assert approved.reviewed_by == "jackpot://supervisor/floor-boss"
        assert approved.reviewed_by_cert == fingerprint(pki, "supervisor", "floor-boss")
        client = redis.Redis.from_url(server.url, decode_responses=True)
        try:
            stream = keys.LinkGroupKeys("floor").journal
            entries = cast(list[tuple[str, dict[str, str]]], client.xrevrange(stream, count=5))
        finally:
            client.close()
        (entry,) = [f for _, f in entries if f.get("type") == "jackpot_approved"]
        assert entry["jackpot"] == jackpot.jackpot_id
        assert entry["reviewer"] == "jackpot://supervisor/floor-boss"
        assert entry["reviewer_cert"] == approved.reviewed_by_cert
        hit = floor.locator(f'#hits tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(lambda: "approved" in hit.inner_text(), "the floor view shows the approval")
        eventually(lambda: not row.count(), "the jackpot has left the pending list")
        screenshot(floor, "floor-approved")

        os.kill(controller.pid, signal.SIGSTOP)
        try:
            eventually(offline.is_visible, "the sign says PROGRESSIVE OFFLINE")
            assert offline.inner_text() == "PROGRESSIVE OFFLINE"
            screenshot(sign, "sign-offline")
        finally:
            os.kill(controller.pid, signal.SIGCONT)
        eventually(lambda: sign_shows(after), "the sign is back once it continues")
