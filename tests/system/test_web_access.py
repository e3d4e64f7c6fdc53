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
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import redis

from controller.store import keys
from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port
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
    assert played["state"] == "playing" and played["last_round_id"] >= 1
    assert 0 <= state["now_ms"] - played["last_round_ms"] < 3_600_000
    assert (tables["cs-1"]["state"], tables["cs-1"]["last_round_id"]) == ("offline", 0)
    journal = keys.LinkGroupKeys("floor").journal
    client = redis.Redis.from_url(server.url, decode_responses=True)
    with client, tls.channel(controller.target, pki.client(*AUDITOR)) as channel:
        stub = pb_grpc.AdminServiceStub(channel)
        listed = stub.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=10).jackpots
        (pending,) = [j for j in listed if (j.table_id, j.seat) == ("cs-2", 2)]
        good = {"jackpot_id": pending.jackpot_id, "decision": "approve", "note": ""}
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
