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
from jackpot.hands.words import hand_words
from jackpot.money import format_cents
from jackpot.results import METER_AFTER
from jackpot.times import format_time
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from jackpot.web import sign as sign_module
from tests.helpers import CARIBBEAN_RULES, ROYAL_SPADES
from tests.system.browser import chromium, eventually, needs_chromium, screenshot

THB_RULES = CARIBBEAN_RULES.parent / "texas-holdem-bonus.toml"
THREE_CARD_RULES = CARIBBEAN_RULES.parent / "three-card-poker.toml"

pytestmark = [needs_chromium, pytest.mark.slow]

RESET_CENTS = 1_000_000  # cs-main's reset amount in the example Rules Submission ($10,000)
FIRST_LETTER = "e => getComputedStyle(e, '::first-letter').textTransform"


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


def post_from_page(page: Any, path: str, fields: dict[str, object]) -> tuple[int, str]:
    """A POST made by the page itself (same origin): what a button would send."""
    status, body = page.evaluate(
        """async ([path, fields]) => {
            const reply = await fetch(path, { method: "POST",
              headers: { "Content-Type": "application/json" }, body: JSON.stringify(fields) });
            return [reply.status, await reply.text()];
        }""",
        [path, fields],
    )
    return int(status), str(body)


def confirm_in_dialog(
    page: Any, amount: str | None, note: str | None, shot: str | None = None
) -> None:
    """Fill the confirmation dialog: the amount typed back (wrong first: refused by the page)
    and the note; then confirm."""
    dialog = page.locator("#confirm")
    eventually(dialog.is_visible, "the confirmation dialog opens")
    ok = page.locator("#confirm-ok")
    if amount is not None:
        page.fill("#confirm-amount", "$1.00")
        assert ok.is_disabled(), "a wrong amount cannot be confirmed"
        page.fill("#confirm-amount", amount)
    if note is not None:
        assert ok.is_disabled(), "the note is required"
        page.fill("#confirm-note", note)
    assert ok.is_enabled()
    if shot:
        screenshot(page, shot)
    ok.click()
    eventually(lambda: not dialog.is_visible(), "the dialog closes")


def floor_page(browser: Any, pki: TestPKI, origin: str, role: str, name: str) -> Any:
    context = browser.new_context(
        client_certificates=[certificate(pki, origin, role, name)],
        ignore_https_errors=True,
        viewport={"width": 1600, "height": 1000},
    )
    page = context.new_page()
    page.goto(origin + "/floor")
    return page


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
        # The names of the Rules Submission, not the ids.
        eventually(lambda: sign.text_content("#title") == "Caribbean Stud Progressive", "title")
        assert sign.text_content("#games") == "Caribbean Stud Poker"
        meter = sign.locator('[data-meter-id="cs-main"]')
        assert meter.locator(".name").text_content() == "Progressive Jackpot"
        # The paytable line in the words of the one helper (hand_words); the page only
        # capitalizes its first letter.
        top = meter.locator(".top")
        assert top.text_content() == f"{hand_words('royal_flush')} wins 100% of the meter"
        assert top.evaluate(FIRST_LETTER) == "uppercase"
        screenshot(sign, "sign-1920x1080-at-reset")

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
        money = format_cents(jackpot.amount_cents)
        # The hit is celebrated, naming the table (COMAR 36.05.03.24) and the seat.
        celebration = sign.locator("#celebration")
        eventually(celebration.is_visible, "the sign celebrates the hit")
        assert sign.inner_text("#celebration-where") == "Table cs-2 \u00b7 Seat 2"
        assert sign.inner_text("#celebration-amount") == money
        assert sign.text_content("#celebration-what") == "royal flush"
        assert sign.inner_text("#celebration-verify").lower() == "awaiting verification"
        screenshot(sign, "sign-1920x1080-celebration")
        after = meter_cents(stub)  # the reset (and any later hit of that round's seat 1)
        eventually(lambda: sign_shows(after), "the sign shows the meter after the royal flush")
        # The hand in words, the time in UTC and labelled (jackpot.times), never local.
        hit_at = format_time(jackpot.hit_at_ms)
        expected = ["Table cs-2", "Seat 2", "royal flush", money, hit_at]
        rows = sign.locator("#winners tr.winner")

        def winner_row() -> Any:
            for i in range(rows.count()):
                if rows.nth(i).locator("td").all_text_contents()[:5] == expected:
                    return rows.nth(i)
            return None

        listed = eventually(winner_row, "the winner is listed")
        assert hit_at.endswith(" UTC") and listed.locator("td.time").inner_text() == hit_at
        assert listed.locator("td.hand").inner_text() == "Royal flush"  # capitalized, same words
        assert listed.locator("td.status").inner_text().lower() == "awaiting verification"
        eventually(lambda: not celebration.is_visible(), "the celebration ends", timeout_s=30)
        screenshot(sign, "sign-1920x1080-awaiting-verification")

        # A second royal flush, at cs-3, for the supervisor to reject.
        script.write_text(json.dumps({"hands": {"1": ROYAL_SPADES}}))
        play(controller, "cs-3", "--rounds", "0", "--script", str(script))
        pending = stub.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (second,) = [j for j in pending if (j.table_id, j.seat) == ("cs-3", 1)]

        floor = floor_page(browser, pki, origin, "supervisor", "floor-boss")
        cage = floor_page(browser, pki, origin, "cashier", "cage-1")
        audit = floor_page(browser, pki, origin, "auditor", "audit")
        row = floor.locator(f'#pending tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(row.count, "the floor view lists the pending jackpot")
        # What the hand-pay slip shows: table, round, seat, cards and hand, wager, meter, time.
        cells = row.locator("td").all_inner_texts()
        assert cells[:4] == [jackpot.jackpot_id, "cs-2", str(jackpot.round_id), "2"]
        hand_cell = row.locator("td").nth(4)  # its text, not innerText: that follows the layout
        assert (
            hand_cell.locator(".cards").text_content() == "A\u2660 K\u2660 Q\u2660 J\u2660 10\u2660"
        )
        assert hand_cell.locator(".hand").text_content() == hand_words("royal_flush")
        assert cells[5] == "Progressive Payout Wager $1.00" and cells[6] == money  # the slip's
        assert cells[7] == (
            f"cs-main: {format_cents(jackpot.meter_before_cents)} \u2192 "
            f"{format_cents(jackpot.meter_after_cents)}"
        )
        assert cells[8] == format_time(jackpot.hit_at_ms)  # the slip's time, UTC, labelled
        table_state = floor.locator('#tables tr[data-table-id="cs-2"] .state')
        assert table_state.inner_text() == "online"
        game_cell = floor.locator('#tables tr[data-table-id="cs-2"] td').nth(1)
        assert game_cell.inner_text() == "Caribbean Stud Poker"  # the game's title, not its id
        screenshot(floor, "floor-pending")

        # The wrong certificates: the cage and the auditor cannot approve.
        for page in (cage, audit):
            their_row = page.locator(f'#pending tr[data-jackpot-id="{jackpot.jackpot_id}"]')
            eventually(their_row.count, "every reader sees the pending jackpot")
            assert their_row.locator("button").count() == 0
            assert "supervisors only" in their_row.inner_text()
            fields = {
                "jackpot_id": jackpot.jackpot_id,
                "decision": "approve",
                "amount_cents": jackpot.amount_cents,
            }
            status, message = post_from_page(page, "/floor/review", fields)
            assert status == 403 and "it is for: supervisor" in message, message

        row.locator("button.approve").click()
        assert floor.inner_text("#confirm-expected") == money
        slip = floor.locator("#confirm-slip dd").all_text_contents()
        assert (  # the slip's one definition of "meter after"
            f"cs-main: {format_cents(jackpot.meter_before_cents)} \u2192 "
            f"{format_cents(jackpot.meter_after_cents)} ({METER_AFTER})"
        ) in slip
        assert format_time(jackpot.hit_at_ms) in slip
        confirm_in_dialog(floor, money, None, "floor-approve-dialog")

        def status_of(jackpot_id: str, status: str) -> Any:
            found = stub.GetJackpot(pb.GetJackpotRequest(jackpot_id=jackpot_id), timeout=10)
            return found if found.status == status else None

        approved = eventually(
            lambda: status_of(jackpot.jackpot_id, "approved"),
            "the floor view's approval reaches the store",
        )
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
        eventually(lambda: not row.count(), "the jackpot has left the pending list")

        second_row = floor.locator(f'#pending tr[data-jackpot-id="{second.jackpot_id}"]')
        eventually(second_row.count, "the second jackpot is pending")
        second_row.locator("button.reject").click()
        confirm_in_dialog(floor, None, "misdeal: the dealer exposed a card")
        rejected = eventually(
            lambda: status_of(second.jackpot_id, "rejected"), "the rejection reaches the store"
        )
        assert rejected.note == "misdeal: the dealer exposed a card"
        eventually(lambda: not celebration.is_visible(), "no celebration of a rejected hit")

        # The cage's queue: the approved jackpot, which only the cage may mark paid.
        to_pay = floor.locator(f'#to-pay tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(to_pay.count, "the approved jackpot waits in the to-pay queue")
        assert "jackpot://supervisor/floor-boss" in to_pay.inner_text()
        hit = floor.locator(f'#hits tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        assert hit.locator(".status").inner_text() == "approved, awaiting the cage"  # not paid
        queued = to_pay.locator("td").all_text_contents()
        assert queued[4].endswith(hand_words("royal_flush"))  # its cards, then the hand
        assert queued[6] == format_time(approved.reviewed_at_ms)
        assert to_pay.locator("button").count() == 0 and "the cage only" in to_pay.inner_text()
        screenshot(floor, "floor-to-pay")
        paid_fields = {
            "jackpot_id": jackpot.jackpot_id,
            "amount_cents": jackpot.amount_cents,
            "note": "receipt 1187",
        }
        for page in (floor, audit):  # a supervisor cannot pay here, an auditor neither
            status, message = post_from_page(page, "/floor/paid", paid_fields)
            assert status == 403 and "it is for: cashier" in message, message
        assert status_of(jackpot.jackpot_id, "approved")

        cage_row = cage.locator(f'#to-pay tr[data-jackpot-id="{jackpot.jackpot_id}"]')
        eventually(cage_row.count, "the cage sees the jackpot to pay")
        screenshot(cage, "floor-to-pay-cage")
        cage_row.locator("button.paid").click()
        confirm_in_dialog(cage, money, "cage receipt 1187", "floor-paid-dialog")
        paid = eventually(lambda: status_of(jackpot.jackpot_id, "paid"), "the hand-pay is stored")
        assert paid.paid_by == "jackpot://cashier/cage-1" and paid.paid_note == "cage receipt 1187"
        assert paid.paid_by_cert == fingerprint(pki, "cashier", "cage-1")
        eventually(lambda: "jackpot://cashier/cage-1" in hit.inner_text(), "paid by, on the hit")
        assert hit.locator(".status").inner_text() == "paid"
        assert "jackpot://supervisor/floor-boss" in hit.inner_text()
        listed_hit = hit.locator("td").all_text_contents()
        assert listed_hit[1] == format_time(jackpot.hit_at_ms) and listed_hit[4] == "royal flush"
        eventually(lambda: not to_pay.count(), "the paid jackpot has left the queue")
        screenshot(floor, "floor-paid")

        # The sign: the winner verified once approved; the rejected hit is not a winner.
        eventually(
            lambda: (
                winner_row()
                and winner_row().locator("td.status").inner_text().lower() == "verified"
            ),
            "the sign shows the winner verified",
        )
        assert all("cs-3" not in text for text in rows.all_inner_texts())
        screenshot(sign, "sign-1920x1080-verified")
        small = sign_context.new_page()
        small.set_viewport_size({"width": 1280, "height": 800})
        small.goto(origin + "/sign/floor")
        eventually(lambda: small.locator("#winners tr.winner").count(), "the small sign")
        assert not small.locator("#celebration").is_visible()  # an old hit is not celebrated
        screenshot(small, "sign-1280x800-verified")
        small.close()

        # A hit rejected while the sign celebrates it: the celebration ends at once.
        script.write_text(json.dumps({"hands": {"3": ROYAL_SPADES}}))
        play(controller, "cs-1", "--rounds", "0", "--script", str(script))
        eventually(
            lambda: (
                celebration.is_visible()
                and sign.inner_text("#celebration-where") == "Table cs-1 \u00b7 Seat 3"
            ),
            "the sign celebrates the third hit",
        )
        pending = stub.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (third,) = [j for j in pending if (j.table_id, j.seat) == ("cs-1", 3)]
        boss = tls.channel(controller.target, pki.client("supervisor", "floor-boss"))
        with boss:
            pb_grpc.AdminServiceStub(boss).RejectJackpot(
                pb.ReviewJackpotRequest(jackpot_id=third.jackpot_id, note="cards misread"),
                timeout=10,
            )
        eventually(
            lambda: not celebration.is_visible(),
            "the celebration of a rejected hit ends",
            timeout_s=sign_module.CELEBRATE_MS / 1000 / 2,
        )
        assert all("Seat 3" not in text for text in rows.all_inner_texts())

        os.kill(controller.pid, signal.SIGSTOP)
        try:
            eventually(offline.is_visible, "the sign says PROGRESSIVE OFFLINE")
            assert offline.inner_text() == "PROGRESSIVE OFFLINE"
            screenshot(sign, "sign-offline")
        finally:
            os.kill(controller.pid, signal.SIGCONT)
        now = meter_cents(stub)  # after the second royal flush too
        eventually(lambda: sign_shows(now), "the sign is back once it continues")


def test_signs_without_a_meter_and_with_several(tmp_path: Path, pki: TestPKI) -> None:
    """Texas Hold 'Em Bonus links no meter: its sign shows the game's fixed top awards and
    "no progressive", not a black page; Three Card Poker's shows both its meters by name."""
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=[THB_RULES, THREE_CARD_RULES],
            extra_args=("--web-port", str(web_port)),
        )
        with controller, chromium() as browser:
            origin = f"https://127.0.0.1:{web_port}"
            context = browser.new_context(
                client_certificates=[certificate(pki, origin, "display", "pit-sign")],
                ignore_https_errors=True,
            )
            for width, height in ((1920, 1080), (1280, 800)):
                page = context.new_page()
                page.set_viewport_size({"width": width, "height": height})
                _fixed_and_several(page, origin, f"{width}x{height}")
                page.close()


def _fixed_and_several(page: Any, origin: str, size: str) -> None:
    page.goto(origin + "/sign/poker-pit")
    fixed = page.locator("#fixed")
    eventually(fixed.is_visible, "the fixed awards are shown")
    assert page.text_content("#title") == "Texas Hold 'Em Bonus"
    assert page.inner_text("#fixed .label").lower() == "no progressive"
    assert page.text_content("#fixed .award caption") == "Bonus"
    top = page.locator("#fixed .award tr").first.locator("td").all_text_contents()
    assert top == [hand_words("ace_ace_dealer_and_player"), "1,000 to 1"]  # § 647a.12(b)
    assert page.locator("#fixed .award td.hand").first.inner_text() == "Ace-ace (dealer and player)"
    assert not page.locator("#offline").is_visible()
    screenshot(page, f"sign-{size}-no-meter")
    page.goto(origin + "/sign/carnival")
    names = page.locator(".meter .name")
    eventually(lambda: names.count() == 2, "both meters are shown")
    assert page.text_content("#title") == "Three Card Poker Progressive"
    assert names.all_text_contents() == ["Mini Royal Jackpot", "Five Card Jackpot"]
    amounts = page.locator(".meter .amount")
    eventually(
        lambda: (
            [a.get_attribute("aria-label") for a in amounts.all()] == ["$10,000.00", "$25,000.00"]
        ),
        "the meters' amounts",
    )
    assert not fixed.is_visible()
    screenshot(page, f"sign-{size}-two-meters")
