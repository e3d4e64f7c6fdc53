"""One caller against everyone: each attack of issue 20 item 3 on a real controller (real
certificates, real Redis, real sockets on loopback, bounded in count and time), and an
honest session played through every limit without a refusal.

The configuration is built only from the fields the controller knows, so that each attack
runs (and fails its assertions) on a controller without the defences too.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from grpc import aio

import controller.observability.http as http_module
import controller.runtime.server as server_module
from controller.runtime.server import ControllerServer, ServerConfig
from controller.security import certs
from controller.security.tls import TLSFiles
from controller.testing import TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import (
    FLUSH_CLUBS,
    FULL_HOUSE,
    ROYAL_SPADES,
    SUPERVISOR,
    Channels,
    Floor,
    lockout,
    settle,
)

CONCURRENT_RPCS = 64
CALLS_PER_CALLER = 16
RULE_TESTS = Path(__file__).parents[2] / "deploy" / "prometheus" / "rules"
GET_TABLE = "/jackpot.v1.TableService/GetTable"
LIST_METERS = "/jackpot.v1.AdminService/ListMeters"


@pytest.fixture(autouse=True)
def few_call_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller of 64 concurrent calls (4,096 in production): the same attack, smaller."""
    monkeypatch.setattr(server_module, "MAX_CONCURRENT_RPCS", CONCURRENT_RPCS)


@pytest.fixture
def deny_list(tmp_path: Path) -> Path:
    path = tmp_path / "deny-list"
    path.write_text("# revoked certificates\n", encoding="utf-8")
    return path


@pytest.fixture
def other_ca(tmp_path: Path) -> TestPKI:
    """A second CA, trusted from the start by the controller of a test that asks for it."""
    return TestPKI(tmp_path / "other-ca")


@pytest.fixture
def client_ca(tmp_path: Path, pki: TestPKI, request: pytest.FixtureRequest) -> Path:
    """A copy of the CA bundle the controller trusts, for a test to rotate."""
    path = tmp_path / "client-ca.crt"
    path.write_bytes(pki.ca.read_bytes())
    if "other_ca" in request.fixturenames:
        other: TestPKI = request.getfixturevalue("other_ca")
        path.write_bytes(pki.ca.read_bytes() + other.ca.read_bytes())
    return path


@pytest.fixture
def limits() -> dict[str, Any]:
    """Settings a test changes (by parametrizing this fixture)."""
    return {}


@pytest.fixture
def server_config(
    server_config: ServerConfig,
    deny_list: Path,
    client_ca: Path,
    pki: TestPKI,
    limits: dict[str, Any],
) -> ServerConfig:
    files = pki.server()
    wanted: dict[str, Any] = {
        "tls": TLSFiles(files.cert, files.key, client_ca),
        "deny_list": deny_list,
        "web_port": 0,
        "metrics_port": 0,
        "handshake_timeout_s": 1.0,
        "max_connection_idle_s": 1.0,
        "first_message_s": 1.0,
        "max_calls_per_caller": CALLS_PER_CALLER,
        **limits,
    }
    known = {
        name: value for name, value in wanted.items() if name in ServerConfig.__dataclass_fields__
    }
    return dataclasses.replace(server_config, **known)


def revoke(
    deny_list: Path, controller: ControllerServer, pki: TestPKI, role: str, name: str
) -> None:
    fingerprint = certs.fingerprint(pki.client(role, name).cert.read_bytes())
    with deny_list.open("a", encoding="utf-8") as file:
        file.write(f"{fingerprint}  # {role}/{name}\n")
    controller.reload()


async def _never() -> AsyncIterator[bytes]:
    """A request stream that never sends."""
    await asyncio.Event().wait()
    yield b""  # pragma: no cover


def silent_calls(channel: aio.Channel, method: str, count: int) -> list[Any]:
    """``count`` calls of ``method`` that start and never send their request."""
    start = channel.stream_stream(method, lambda raw: raw, lambda raw: raw)
    return [start(_never()) for _ in range(count)]


async def codes(calls: list[Any], timeout: float) -> list[grpc.StatusCode | None]:
    """Each call's status once it ends (None: still open after ``timeout``; then cancelled)."""

    async def code(call: Any) -> grpc.StatusCode | None:
        try:
            ended: grpc.StatusCode = await asyncio.wait_for(call.code(), timeout)
            return ended
        except TimeoutError:
            call.cancel()
            return None

    return list(await asyncio.gather(*(code(call) for call in calls)))


async def table_answers(channels: Channels) -> grpc.StatusCode:
    """An honest table's GetTable."""
    stub = pb_grpc.TableServiceStub(channels("table", "t1"))
    try:
        await stub.GetTable(pb.GetTableRequest(table_id="t1"), timeout=5)
    except aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


# ------------------------------------------------------------------------------ gRPC port


async def test_a_revoked_certificate_cannot_hold_the_call_slots(
    deny_list: Path, channels: Channels, floor: Floor, controller: ControllerServer, pki: TestPKI
) -> None:
    revoke(deny_list, controller, pki, "table", "stolen")
    revoked = controller.metrics.registry.get_sample_value("jackpot_revoked_certificates")
    assert revoked == 1
    hostile = silent_calls(channels("table", "stolen"), GET_TABLE, CONCURRENT_RPCS)
    await asyncio.sleep(0.5)  # every call has reached the controller
    assert await table_answers(channels) is grpc.StatusCode.OK
    assert set(await codes(hostile, 3)) == {grpc.StatusCode.UNAUTHENTICATED}


async def test_one_identity_cannot_hold_the_call_slots(
    channels: Channels, floor: Floor, controller: ControllerServer
) -> None:
    hostile = silent_calls(channels("auditor", "greedy"), LIST_METERS, CONCURRENT_RPCS)
    await asyncio.sleep(0.3)
    assert await table_answers(channels) is grpc.StatusCode.OK
    ended = await codes(hostile, 4)  # the first-message deadline (1 s here) ends the rest
    assert ended == [grpc.StatusCode.RESOURCE_EXHAUSTED] * CONCURRENT_RPCS
    assert await table_answers(channels) is grpc.StatusCode.OK


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Whether the server closes the connection within ``seconds`` (what it sends is read
    and dropped)."""
    try:
        async with asyncio.timeout(seconds):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        pass
    return True


async def test_idle_connections_to_the_grpc_port_are_closed(
    controller: ControllerServer, pki: TestPKI
) -> None:
    # A TCP connection that never starts TLS: the handshake timeout (1 s here).
    reader, writer = await asyncio.open_connection("127.0.0.1", controller.port)
    try:
        assert await _closed_within(reader, 4), "an idle TCP connection is held"
    finally:
        writer.close()
    # A TLS connection (HTTP/2 preface sent) that makes no call: the idle limit (1 s here).
    files = pki.client("auditor", "idle")
    context = ssl.create_default_context(cafile=str(files.ca))
    context.load_cert_chain(files.cert, files.key)
    context.set_alpn_protocols(["h2"])
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", controller.port, ssl=context, server_hostname="localhost"
    )
    try:
        writer.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
        await writer.drain()
        assert await _closed_within(reader, 6), "an idle TLS connection is held"
    finally:
        writer.close()


@pytest.mark.parametrize("limits", [{"client_calls_per_s": 10.0, "client_call_burst": 20}])
async def test_refused_calls_count_against_the_callers_rate_and_are_logged_sampled(
    deny_list: Path,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    pki: TestPKI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    revoke(deny_list, controller, pki, "auditor", "revoked")
    request = pb.ListMetersRequest()
    for who, refusal in (
        (("display", "nosy"), grpc.StatusCode.PERMISSION_DENIED),
        (("auditor", "revoked"), grpc.StatusCode.UNAUTHENTICATED),
    ):
        caplog.clear()
        stub = pb_grpc.AdminServiceStub(channels(*who))
        seen: dict[grpc.StatusCode, int] = {}
        for _ in range(200):
            try:
                await stub.ListMeters(request, timeout=5)
                code = grpc.StatusCode.OK
            except aio.AioRpcError as error:
                code = error.code()
            seen[code] = seen.get(code, 0) + 1
        assert set(seen) == {refusal, grpc.StatusCode.RESOURCE_EXHAUSTED}, seen
        assert seen[refusal] <= 30, seen  # the burst, and what the rate refills meanwhile
        lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(lines) <= 3, [r.getMessage() for r in lines]
    # Another identity's rate is its own.
    await pb_grpc.AdminServiceStub(channels("auditor", "audit")).ListMeters(request, timeout=5)


def _odd_certificate(pki: TestPKI, tmp_path: Path, uri: str) -> tls.ClientTLS:
    authority = certs._load_authority(pki.directory)
    names = [x509.UniformResourceIdentifier(uri)]
    cert, key = certs._leaf(authority, "odd", names, ExtendedKeyUsageOID.CLIENT_AUTH, 30)
    issued = certs._save(tmp_path, "odd", cert, key, force=True)
    return tls.ClientTLS(pki.ca, issued.cert, issued.key)


async def test_an_identity_with_a_control_character_is_refused_everywhere(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> None:
    files = _odd_certificate(pki, tmp_path, "jackpot://supervisor/eve\0table")
    async with tls.aio_channel(f"127.0.0.1:{controller.port}", files) as channel:
        with pytest.raises(aio.AioRpcError) as caught:
            await pb_grpc.AdminServiceStub(channel).ListPendingJackpots(
                pb.ListPendingJackpotsRequest(), timeout=5
            )
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "control character" in (caught.value.details() or "")
    status, body = await web_get(controller, files, "/floor/state")
    assert status == 401 and "control character" in body


# ------------------------------------------------------------------------------ metrics port


async def _http_get(port: int, path: str) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(5):
            line = await reader.readline()
        return int(line.split()[1])
    finally:
        writer.close()


async def test_the_metrics_port_bounds_its_connections_and_closes_idle_ones(
    controller: ControllerServer,
) -> None:
    per_address = getattr(http_module, "MAX_PER_ADDRESS", 8)
    timeout = getattr(http_module, "HANDLER_TIMEOUT_S", 5.0)
    idle = [
        await asyncio.open_connection("127.0.0.1", controller.metrics_port)
        for _ in range(per_address)
    ]
    try:
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", controller.metrics_port)
        try:
            assert await _closed_within(reader, 1), "a connection beyond the cap is served"
        finally:
            writer.close()
        closed = await asyncio.gather(*(_closed_within(r, timeout + 2) for r, _ in idle))
        assert all(closed), "idle connections are held"
    finally:
        for _, writer in idle:
            writer.close()
    assert await _http_get(controller.metrics_port, "/livez") == 200


# ------------------------------------------------------------------------------ web port


def client_context(files: tls.ClientTLS, ca: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca or files.ca))
    context.load_cert_chain(files.cert, files.key)
    return context


async def web_open(
    controller: ControllerServer, files: tls.ClientTLS, ca: Path | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(
        "127.0.0.1",
        controller.web_port,
        ssl=client_context(files, ca),
        server_hostname="localhost",
    )


async def web_get(
    controller: ControllerServer,
    files: tls.ClientTLS,
    path: str,
    *,
    body: bytes | None = None,
    ca: Path | None = None,
) -> tuple[int, str]:
    """The status and body of one request to the web port."""
    reader, writer = await web_open(controller, files, ca)
    host = f"127.0.0.1:{controller.web_port}"
    head = f"{'POST' if body is not None else 'GET'} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if body is not None:
        head += (
            f"Origin: https://{host}\r\nContent-Type: application/json\r\n"
            f"Sec-Fetch-Site: same-origin\r\nContent-Length: {len(body)}\r\n"
        )
    try:
        writer.write((head + "\r\n").encode() + (body or b""))
        await writer.drain()
        async with asyncio.timeout(5):
            reply = await reader.read(100_000)
    finally:
        writer.close()
    if not reply:
        raise ConnectionError("the web port closed the connection without an answer")
    status_line, _, rest = reply.decode("utf-8", "replace").partition("\r\n")
    return int(status_line.split()[1]), rest.partition("\r\n\r\n")[2]


@contextlib.asynccontextmanager
async def signs(
    controller: ControllerServer, files: tls.ClientTLS, count: int
) -> AsyncIterator[list[int]]:
    """``count`` sign event streams of link group 'floor' held open: their statuses."""
    opened: list[asyncio.StreamWriter] = []
    statuses: list[int] = []
    try:
        for _ in range(count):
            reader, writer = await web_open(controller, files)
            opened.append(writer)
            writer.write(b"GET /sign/floor/events HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            async with asyncio.timeout(5):
                statuses.append(int((await reader.readline()).split()[1]))
        yield statuses
    finally:
        for writer in opened:
            writer.close()


async def test_one_display_holds_at_most_its_share_of_the_signs(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    async with signs(controller, pki.client("display", "greedy"), 12) as greedy:
        assert greedy[:8] == [200] * 8 and greedy[8:] == [429] * 4, greedy
        async with signs(controller, pki.client("display", "lobby"), 1) as lobby:
            assert lobby == [200]


async def test_a_revoked_certificate_is_refused_at_its_handshake_and_holds_nothing(
    deny_list: Path, controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    revoke(deny_list, controller, pki, "supervisor", "gone")
    revoked = pki.client("supervisor", "gone")
    opened = [await web_open(controller, revoked) for _ in range(40)]
    try:
        # Answered and closed before it sends a byte of a request.
        closed = await asyncio.gather(*(_closed_within(reader, 1) for reader, _ in opened))
        assert all(closed), "a revoked certificate holds its connections"
    finally:
        for _, writer in opened:
            writer.close()
    status, body = await web_get(controller, revoked, "/floor/state")
    assert status == 401 and "is revoked" in body
    assert (await web_get(controller, pki.client(*SUPERVISOR), "/floor/state"))[0] == 200
    # An identity that is not revoked holds 16 connections at most.
    greedy = [await web_open(controller, pki.client("auditor", "greedy")) for _ in range(20)]
    try:
        await asyncio.sleep(0.2)
        closed = await asyncio.gather(*(_closed_within(reader, 0.5) for reader, _ in greedy))
        assert closed == [False] * 16 + [True] * 4
        assert (await web_get(controller, pki.client(*SUPERVISOR), "/floor/state"))[0] == 200
    finally:
        for _, writer in greedy:
            writer.close()


async def test_a_ca_removed_from_the_client_ca_is_refused_by_the_web_port_too(
    other_ca: TestPKI, client_ca: Path, controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    visitor = dataclasses.replace(other_ca.client("supervisor", "visitor"), ca=pki.ca)
    assert (await web_get(controller, visitor, "/floor/state"))[0] == 200
    client_ca.write_bytes(pki.ca.read_bytes())  # the other CA is removed
    os.utime(client_ca, ns=(2, 2))  # a stamp of its own, whatever the clock's resolution
    async with tls.aio_channel(f"127.0.0.1:{controller.port}", visitor) as channel:
        with pytest.raises(aio.AioRpcError):
            await pb_grpc.AdminServiceStub(channel).ListPendingJackpots(
                pb.ListPendingJackpotsRequest(), timeout=5
            )
    with pytest.raises((ssl.SSLError, ConnectionError, ValueError)):
        await web_get(controller, visitor, "/floor/state")
    assert (await web_get(controller, pki.client(*SUPERVISOR), "/floor/state"))[0] == 200


# ------------------------------------------------------------------------------ expiry


def _expiry(controller: ControllerServer) -> dict[tuple[str, str, str], float]:
    samples = {}
    for family in controller.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == "jackpot_certificate_expiry_timestamp_seconds":
                labels = sample.labels
                samples[(labels["certificate"], labels["role"], labels["name"])] = sample.value
    return samples


async def test_certificate_expiry_is_exported_for_the_series_the_alerts_read(
    channels: Channels, floor: Floor, controller: ControllerServer, pki: TestPKI
) -> None:
    await table_answers(channels)
    sign = pb_grpc.TableServiceStub(channels("display", "lobby"))
    meters = sign.WatchMeters(pb.WatchMetersRequest(table_id="t1", min_interval_ms=50))
    await meters.read()
    meters.cancel()
    expiry = _expiry(controller)
    server = x509.load_pem_x509_certificate(pki.server().cert.read_bytes())
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    table = x509.load_pem_x509_certificate(pki.client("table", "t1").cert.read_bytes())
    by_kind = {(kind, role): value for (kind, role, _), value in expiry.items()}
    assert by_kind[("server", "controller")] == server.not_valid_after_utc.timestamp()
    assert by_kind[("ca", "ca")] == ca.not_valid_after_utc.timestamp()
    assert expiry[("client", "table", "t1")] == table.not_valid_after_utc.timestamp()
    assert ("client", "display", "lobby") in expiry
    # The alerts' unit tests feed this very series, with these labels.
    tests = yaml.safe_load((RULE_TESTS / "jackpot.rules.test.yml").read_text(encoding="utf-8"))
    fed = [
        series["series"]
        for test in tests["tests"]
        for series in test.get("input_series", [])
        if series["series"].startswith("jackpot_certificate_expiry_timestamp_seconds{")
    ]
    assert fed
    for series in fed:
        names = {part.split("=")[0] for part in series.split("{", 1)[1].rstrip("}").split(",")}
        assert names - {"job", "instance"} == {"certificate", "role", "name"}, series


# ------------------------------------------------------------------------------ honest play


PRODUCTION_RATES = {
    "table_calls_per_s": 2.0,
    "table_call_burst": 20,
    "client_calls_per_s": 10.0,
    "client_call_burst": 20,
    "first_message_s": 10.0,
    "max_connection_idle_s": 300.0,
    "handshake_timeout_s": 10.0,
}


@pytest.mark.parametrize("limits", [PRODUCTION_RATES])
async def test_an_honest_session_meets_no_limit(
    channels: Channels, floor: Floor, controller: ControllerServer, pki: TestPKI
) -> None:
    table = pb_grpc.TableServiceStub(channels("table", "t1"))
    meters = table.WatchMeters(pb.WatchMetersRequest(table_id="t1", min_interval_ms=50))
    first = await meters.read()
    assert isinstance(first, pb.MeterSnapshot) and first.meters
    display = pki.client("display", "lobby-sign")
    async with signs(controller, display, 2) as sign:
        assert sign == [200, 200]
        for round_id in range(1, 6):
            await table.GetTable(pb.GetTableRequest(table_id="t1"), timeout=5)
            await table.Lockout(lockout("t1", round_id, [2, 6]), timeout=5)
            hands = {2: FLUSH_CLUBS if round_id < 5 else ROYAL_SPADES, 6: FULL_HOUSE}
            settled = await table.Settle(settle("t1", round_id, hands), timeout=5)
        hit = next(r for r in settled.results if r.seat == 2)
        assert hit.jackpot_id
        supervisor = pki.client(*SUPERVISOR)
        for _ in range(3):  # the floor view polls
            assert (await web_get(controller, supervisor, "/floor/state"))[0] == 200
        review = {
            "jackpot_id": hit.jackpot_id,
            "decision": "approve",
            "note": "verified",
            "amount_cents": hit.amount_cents,  # the amount the supervisor confirmed
        }
        status, body = await web_get(
            controller, supervisor, "/floor/review", body=json.dumps(review).encode()
        )
        assert status == 200 and json.loads(body)["status"] == "approved", body
        admin = pb_grpc.AdminServiceStub(channels(*SUPERVISOR))
        await admin.ListPendingJackpots(pb.ListPendingJackpotsRequest(), timeout=5)
    meters.cancel()
    refused = {
        (sample.labels.get("grpc_method"), sample.labels.get("grpc_code"))
        for family in controller.metrics.registry.collect()
        for sample in family.samples
        if sample.name == "grpc_server_handled_total"
        and sample.labels.get("grpc_code") not in ("OK", "Canceled")
        and sample.value > 0
    }
    assert refused == set()
    denied = [
        sample
        for family in controller.metrics.registry.collect()
        for sample in family.samples
        if sample.name == "jackpot_access_denied_total" and sample.value > 0
    ]
    assert denied == []
