"""The web port's refusals: who may see which page, and a review that is not the floor
view's own. Every refusal is a precise 4xx and changes nothing (the jackpot stays pending,
the journal does not grow); then a proper review is taken, with the caller's identity."""

from __future__ import annotations

import hashlib
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from controller.store import keys
from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port
from controller.web.floor import OFFLINE_AFTER_S
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import CARIBBEAN_RULES, ROYAL_SPADES
from tests.system.test_web_browser import play


@pytest.fixture
def web(tmp_path: Path, pki: TestPKI) -> Iterator[tuple[RedisServer, ControllerProcess, int]]:
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--table-calls-per-second", "0", "--web-port", str(web_port)),
        )
        with controller:
            yield server, controller, web_port


class Web:
    """HTTPS calls to the web port as one certificate's identity."""

    def __init__(self, pki: TestPKI, port: int) -> None:
        self.pki = pki
        self.port = port

    def context(self, role: str, name: str) -> ssl.SSLContext:
        files = self.pki.client(role, name)
        context = ssl.create_default_context(cafile=str(files.ca))
        context.check_hostname = False  # the controller's certificate names no IP address
        context.load_cert_chain(files.cert, files.key)
        return context

    def __call__(
        self,
        who: tuple[str, str],
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, str]:
        origin = f"https://127.0.0.1:{self.port}"
        request = urllib.request.Request(origin + path, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(request, context=self.context(*who), timeout=10) as reply:
                return reply.status, reply.read(20_000).decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def review(
        self, who: tuple[str, str], fields: Mapping[str, object], **headers: str
    ) -> tuple[int, str]:
        sent = {
            "Origin": f"https://127.0.0.1:{self.port}",
            "Content-Type": "application/json",
            "Sec-Fetch-Site": "same-origin",
        }
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        sent = {name: value for name, value in sent.items() if value}
        return self(who, "/floor/review", json.dumps(fields).encode(), sent)

    def paid(self, who: tuple[str, str], fields: Mapping[str, object]) -> tuple[int, str]:
        sent = {"Origin": f"https://127.0.0.1:{self.port}", "Content-Type": "application/json"}
        return self(who, "/floor/paid", json.dumps(fields).encode(), sent)


def good_paid(jackpot: pb.Jackpot) -> dict[str, object]:
    """A hand-pay as the floor view sends it: the amount confirmed and the cage's receipt."""
    return {"jackpot_id": jackpot.jackpot_id, "amount_cents": jackpot.amount_cents, "note": "r-1"}


CASHIER = ("cashier", "cage-1")
DISPLAY = ("display", "pit-sign")
SUPERVISOR = ("supervisor", "floor-boss")
AUDITOR = ("auditor", "audit")
TABLE = ("table", "cs-1")
OPERATOR = ("operator", "ops")


def test_pages_admit_their_roles_only(web, pki: TestPKI) -> None:
    _, _, port = web
    call = Web(pki, port)
    assert call(DISPLAY, "/sign/floor")[0] == 200
    for who in (TABLE, OPERATOR, SUPERVISOR):
        status, message = call(who, "/sign/floor")
        assert status == 403 and "it is for: display" in message, (who, message)
    assert call(TABLE, "/sign/floor/events")[0] == 403
    for path in ("/floor", "/floor/state"):
        status, message = call(DISPLAY, path)
        assert status == 403 and "auditor, cashier, operator, supervisor" in message
        assert call(TABLE, path)[0] == 403
    status, body = call(AUDITOR, "/floor/state")
    assert status == 200
    state = json.loads(body)
    assert state["caller"] == "jackpot://auditor/audit" and state["can_review"] is False
    assert [m["cents"] for m in state["meters"]] == [1_000_000]
    assert json.loads(call(SUPERVISOR, "/floor/state")[1])["can_review"] is True
    assert call(DISPLAY, "/sign/no-such-group") == (
        404,
        "link group no-such-group does not exist\n",
    )
    assert call(DISPLAY, "/sign/bad%20id")[0] == 400
    assert call(DISPLAY, "/nothing-here")[0] == 404
    assert call(DISPLAY, "/sign/floor", b"{}", {"Content-Type": "application/json"})[0] == 405
    assert call(SUPERVISOR, "/floor/review")[0] == 405
    files = pki.client(*DISPLAY)
    anonymous = ssl.create_default_context(cafile=str(files.ca))
    anonymous.check_hostname = False
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(
            f"https://127.0.0.1:{port}/sign/floor", context=anonymous, timeout=10
        )
    # The refusals are counted beside the RPCs', for the access-denied alert.
    url = f"http://127.0.0.1:{web[1].metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as reply:
        exposition = reply.read().decode()
    counted = {
        line.split("{", 1)[1].split("}", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in exposition.splitlines()
        if line.startswith("jackpot_access_denied_total{")
    }
    assert counted['grpc_method="/sign",reason="role",role="table"'] == 2  # page and events
    assert counted['grpc_method="/sign",reason="role",role="supervisor"'] == 1
    assert counted['grpc_method="/floor",reason="role",role="display"'] == 2


def test_the_sign_streams_integer_cents(web, pki: TestPKI) -> None:
    _, _, port = web
    call = Web(pki, port)
    request = urllib.request.Request(f"https://127.0.0.1:{port}/sign/floor/events")
    with urllib.request.urlopen(request, context=call.context(*DISPLAY), timeout=10) as stream:
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        lines = [stream.readline() for _ in range(4)]
    assert lines[:3] == [b"retry: 1000\n", b"\n", b"event: meters\n"]
    data = json.loads(lines[3].removeprefix(b"data: "))
    assert data["meters"] == [{"meter_id": "cs-main", "cents": 1_000_000}]
    assert data["title"] == "floor" and data["stale"] is False and data["winners"] == []
    # The names players read, from the Rules Submission, not the ids.
    assert data["display"] == {
        "title": "Caribbean Stud Progressive",
        "games": ["Caribbean Stud Poker"],
        "meters": {
            "cs-main": {
                "title": "Progressive Jackpot",
                "top_award": "royal flush wins 100% of the meter",
            }
        },
        "fixed_awards": [],
        "progressive": True,
    }


def test_a_review_not_from_the_floor_view_changes_nothing(
    web, pki: TestPKI, tmp_path: Path
) -> None:
    server, controller, port = web
    call = Web(pki, port)
    script = tmp_path / "royal.json"
    script.write_text(json.dumps({"hands": {"2": ROYAL_SPADES}}))
    play(controller, "cs-2", "--rounds", "0", "--script", str(script))
    # The floor view: the table that played shows its round, the others none (offline).
    state = json.loads(call(AUDITOR, "/floor/state")[1])
    tables = {table["table_id"]: table for table in state["tables"]}
    played = tables["cs-2"]
    assert played["state"] == "online" and played["last_round_id"] >= 1
    assert 0 <= state["now_ms"] - played["last_round_ms"] < 3_600_000
    assert (tables["cs-1"]["state"], tables["cs-1"]["last_round_id"]) == ("offline", 0)
    journal = keys.LinkGroupKeys("floor").journal
    client = redis.Redis.from_url(server.url, decode_responses=True)
    with client, tls.channel(controller.target, pki.client(*AUDITOR)) as channel:
        stub = pb_grpc.AdminServiceStub(channel)
        listed = stub.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (pending,) = [j for j in listed if (j.table_id, j.seat) == ("cs-2", 2)]
        good = {
            "jackpot_id": pending.jackpot_id,
            "decision": "approve",
            "note": "",
            "amount_cents": pending.amount_cents,
        }
        other = pending.amount_cents + 100
        before = client.xlen(journal)
        refusals = [
            (call.review(SUPERVISOR, good, Origin="https://evil.example"), 403, "Origin"),
            (call.review(SUPERVISOR, good, Origin=""), 403, "Origin"),
            (call.review(SUPERVISOR, good, Sec_Fetch_Site="cross-site"), 403, "cross-site"),
            (call.review(SUPERVISOR, good, Content_Type="text/plain"), 415, "application/json"),
            (call.review(AUDITOR, good), 403, "it is for: supervisor"),
            (call.review(DISPLAY, good), 403, "it is for: supervisor"),
            (call.review(SUPERVISOR, {**good, "note": "x" * 5000}), 413, "at most 4096"),
            (call.review(SUPERVISOR, {**good, "note": "x" * 501}), 400, "at most 500"),
            (call.review(SUPERVISOR, {**good, "decision": "pay"}), 400, "decision"),
            (call.review(SUPERVISOR, {**good, "extra": "1"}), 400, "unknown fields extra"),
            (call.review(SUPERVISOR, {**good, "note": 5}), 400, "note must be a string"),
            (call.review(SUPERVISOR, {"decision": "approve"}), 400, "jackpot_id is required"),
            (call.review(SUPERVISOR, {**good, "decision": "reject"}), 400, "needs its reason"),
            (call.review(SUPERVISOR, {**good, "jackpot_id": "floor:99999"}), 404, "floor:99999"),
            (call.review(SUPERVISOR, {**good, "jackpot_id": "nope"}), 400, "not a jackpot id"),
            # The amount the supervisor confirmed is required, and must be the jackpot's.
            (call.review(SUPERVISOR, {**good, "amount_cents": None}), 400, "amount_cents is"),
            (call.review(SUPERVISOR, {**good, "amount_cents": "1"}), 400, "whole number"),
            (call.review(SUPERVISOR, {**good, "amount_cents": 1.5}), 400, "whole number"),
            (call.review(SUPERVISOR, {**good, "amount_cents": -1}), 400, "whole number"),
            (call.review(SUPERVISOR, {**good, "amount_cents": True}), 400, "whole number"),
            (call.review(SUPERVISOR, {**good, "amount_cents": other}), 409, "reload the page"),
            # Nobody pays a jackpot not approved; only the cage pays from the floor view.
            (call.paid(CASHIER, good_paid(pending)), 409, ""),
            (call.paid(SUPERVISOR, good_paid(pending)), 403, "it is for: cashier"),
            (call.paid(AUDITOR, good_paid(pending)), 403, "it is for: cashier"),
            (call.review(CASHIER, good), 403, "it is for: supervisor"),
        ]
        for (status, message), expected, says in refusals:
            assert status == expected and says in message, (status, message, says)
        bad_json = call(
            SUPERVISOR,
            "/floor/review",
            b"{not json",
            {"Origin": f"https://127.0.0.1:{port}", "Content-Type": "application/json"},
        )
        assert bad_json == (400, "the body is not JSON\n")
        assert client.xlen(journal) == before, "no refusal wrote to the journal"
        assert tables["cs-2"]["heard_ms"] >= played["last_round_ms"] > 0
        still = stub.GetJackpot(pb.GetJackpotRequest(jackpot_id=pending.jackpot_id), timeout=10)
        assert still.status == "pending" and not still.reviewed_by

        status, body = call.review(SUPERVISOR, {**good, "decision": "reject", "note": "misdeal"})
        assert status == 200, body
        assert json.loads(body) == {
            "jackpot_id": pending.jackpot_id,
            "status": "rejected",
            "reviewed_by": "jackpot://supervisor/floor-boss",
            "note": "misdeal",
        }
        again = call.review(SUPERVISOR, good)  # decided: the store refuses another decision
        assert again[0] == 409, again


def _state(call: Web, who: tuple[str, str] = AUDITOR) -> dict[str, Any]:
    status, body = call(who, "/floor/state")
    assert status == 200, body
    return cast(dict[str, Any], json.loads(body))


def _eventually(check: Callable[[], Any], what: str, timeout_s: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout_s
    value: Any = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout_s}s (last seen: {value!r})")


def test_the_cage_pays_an_approved_jackpot_from_the_floor_view(
    web, pki: TestPKI, tmp_path: Path
) -> None:
    server, controller, port = web
    call = Web(pki, port)
    script = tmp_path / "royal.json"
    script.write_text(json.dumps({"hands": {"2": ROYAL_SPADES}}))
    play(controller, "cs-2", "--rounds", "0", "--script", str(script))
    (pending,) = [j for j in _state(call)["pending"] if (j["table_id"], j["seat"]) == ("cs-2", 2)]
    jackpot_id, cents = pending["jackpot_id"], pending["amount_cents"]
    # The floor view has what the hand-pay slip has.
    assert pending["cards"] == ROYAL_SPADES and pending["hand"] == "royal_flush"
    assert pending["hand_words"] == "royal flush"  # the machine label stays; words beside it
    assert pending["round_id"] >= 1 and pending["wager"] == "progressive"
    assert pending["wager_cents"] == 100 and pending["meter_id"] == "cs-main"
    assert pending["meter_before_cents"] > pending["meter_after_cents"] > 0
    assert pending["hit_at_ms"] > 0 and pending["award_text"] == "100% of meter"
    approve = {"jackpot_id": jackpot_id, "decision": "approve", "amount_cents": cents}
    status, body = call.review(SUPERVISOR, approve)
    assert status == 200 and json.loads(body)["status"] == "approved", body
    state = _state(call, CASHIER)
    assert state["can_pay"] is True and state["can_review"] is False
    assert [j["jackpot_id"] for j in state["to_pay"]] == [jackpot_id]
    assert state["to_pay"][0]["reviewed_by"] == "jackpot://supervisor/floor-boss"

    journal = keys.LinkGroupKeys("floor").journal
    client = redis.Redis.from_url(server.url, decode_responses=True)
    with client:
        before = client.xlen(journal)
        paid = {"jackpot_id": jackpot_id, "amount_cents": cents, "note": "cage receipt 1187"}
        cross = {"Origin": "https://evil.example", "Content-Type": "application/json"}
        refusals = [
            (call.paid(CASHIER, {**paid, "note": ""}), 400, "receipt"),
            (call.paid(CASHIER, {**paid, "note": "   "}), 400, "receipt"),
            (call.paid(CASHIER, {**paid, "note": "x" * 501}), 400, "at most 500"),
            (call.paid(CASHIER, {**paid, "amount_cents": cents - 1}), 409, "reload the page"),
            (call.paid(CASHIER, {k: v for k, v in paid.items() if k != "amount_cents"}), 400, ""),
            (call.paid(CASHIER, {**paid, "decision": "approve"}), 400, "unknown fields"),
            (call.paid(CASHIER, {**paid, "jackpot_id": "floor:99999"}), 404, "floor:99999"),
            (call.paid(SUPERVISOR, paid), 403, "it is for: cashier"),
            (call.paid(AUDITOR, paid), 403, "it is for: cashier"),
            (call.paid(DISPLAY, paid), 403, "it is for: cashier"),
            (call(CASHIER, "/floor/paid", json.dumps(paid).encode(), cross), 403, "Origin"),
            (call(CASHIER, "/floor/paid"), 405, "POST only"),
        ]
        for (status, message), expected, says in refusals:
            assert status == expected and says in message, (status, message, says)
        assert client.xlen(journal) == before, "no refusal wrote to the journal"
        status, body = call.paid(CASHIER, paid)
        assert status == 200, body
        assert json.loads(body) == {
            "jackpot_id": jackpot_id,
            "status": "paid",
            "paid_by": "jackpot://cashier/cage-1",
            "paid_note": "cage receipt 1187",
        }
        paid_at = client.xlen(journal)
        assert call.paid(CASHIER, paid)[0] == 200  # a retry by the same cage changes nothing
        assert call.paid(("cashier", "cage-2"), paid)[0] == 409  # paid once
        assert client.xlen(journal) == paid_at
    state = _state(call)
    assert state["to_pay"] == []
    (hit,) = [j for j in state["hits"] if j["jackpot_id"] == jackpot_id]
    assert (hit["status"], hit["reviewed_by"], hit["paid_by"]) == (
        "paid",
        "jackpot://supervisor/floor-boss",
        "jackpot://cashier/cage-1",
    )


def test_a_table_is_online_while_its_agent_calls(web, pki: TestPKI) -> None:
    server, controller, port = web
    call = Web(pki, port)
    play(controller, "cs-1", "--rounds", "0")  # its agent starts, probes, plays no round

    def table(table_id: str) -> dict[str, Any]:
        tables: list[dict[str, Any]] = _state(call)["tables"]
        return next(t for t in tables if t["table_id"] == table_id)

    probed = _eventually(lambda: table("cs-1")["state"] == "online" and table("cs-1"), "online")
    assert probed["last_round_id"] == 0 and probed["heard_ms"] > 0
    assert table("cs-3")["state"] == "offline"  # never heard from
    # Offline after OFFLINE_AFTER_S of silence, whatever the last lockout.
    client = redis.Redis.from_url(server.url, decode_responses=True)
    with client:
        now_ms = int(time.time() * 1000)
        client.hset(keys.TABLE_SEEN, "cs-3", now_ms)
        _eventually(lambda: table("cs-3")["state"] == "online", "cs-3 heard just now")
        client.hset(keys.TABLE_SEEN, "cs-3", now_ms - (OFFLINE_AFTER_S + 1) * 1000)
        _eventually(lambda: table("cs-3")["state"] == "offline", "cs-3 silent too long")


def test_insecure_development_pages_are_plain_http_on_loopback(tmp_path: Path) -> None:
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=None,
            rules=CARIBBEAN_RULES,
            extra_args=("--web-port", str(web_port)),
        )
        with controller:
            base = f"http://127.0.0.1:{web_port}"
            with urllib.request.urlopen(base + "/floor/state", timeout=10) as reply:
                state = json.loads(reply.read())
            assert state["caller"] == "jackpot://insecure/development"
            with urllib.request.urlopen(base + "/sign/floor", timeout=10) as reply:
                assert reply.headers["Content-Security-Policy"].startswith("default-src 'none'")
                assert b"PROGRESSIVE OFFLINE" in reply.read()


def test_a_revoked_display_loses_its_open_sign(tmp_path: Path, pki: TestPKI) -> None:
    deny_list = tmp_path / "deny-list.txt"
    deny_list.write_text("# none revoked yet\n")
    web_port = free_port()
    with RedisServer(tmp_path / "redis") as server:
        controller = ControllerProcess(
            server.url,
            tmp_path / "controller.log",
            pki=pki,
            rules=CARIBBEAN_RULES,
            extra_args=("--web-port", str(web_port), "--deny-list", str(deny_list)),
        )
        with controller:
            call = Web(pki, web_port)
            url = f"https://127.0.0.1:{web_port}/sign/floor/events"
            who = ("display", "revoked-sign")
            with urllib.request.urlopen(url, context=call.context(*who), timeout=10) as stream:
                assert stream.readline() == b"retry: 1000\n"
                pem = pki.client(*who).cert.read_text()
                revoked = hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()
                deny_list.write_text(deny_list.read_text() + revoked + "\n")
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and stream.readline():
                    pass  # events until the controller re-reads the list and ends the stream
                assert time.monotonic() < deadline, "the revoked display's sign did not end"
            status, message = call(who, "/sign/floor")
            assert status == 401 and "revoked" in message
