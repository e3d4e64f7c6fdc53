"""Who may call what, over real mutual TLS on loopback: each role exactly its RPCs, a table
only for its own table, revocation without restart, certificates from elsewhere refused."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from google.protobuf import message_factory
from grpc import aio
from redis.asyncio import Redis

from controller.api.access import ACCESS
from controller.domain.identity import CERTIFICATE_ROLES, Role
from controller.runtime.server import ControllerServer, ServerConfig
from controller.security import certs
from controller.testing import TestPKI
from jackpot import tls
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from tests.helpers import Channels, Floor, expect_refusal, journal, lockout, snapshot

JACKPOT_METHODS = sorted(method for method in ACCESS if method.startswith("/jackpot.v1."))


def _method(path: str) -> tuple[type[Any], bool]:
    """The request class of ``/jackpot.v1.Service/Method`` and whether it streams replies."""
    service, name = path.strip("/").removeprefix("jackpot.v1.").split("/")
    descriptor = pb.DESCRIPTOR.services_by_name[service].methods_by_name[name]
    return message_factory.GetMessageClass(descriptor.input_type), descriptor.server_streaming


async def call(channel: aio.Channel, path: str, request: Any) -> grpc.StatusCode:
    """Call any method with ``request``; its status (a stream: after its first message)."""
    _, streaming = _method(path)
    serialize, parse = type(request).SerializeToString, bytes
    try:
        if streaming:
            stream = channel.unary_stream(path, serialize, parse)(request, timeout=5)
            async for _ in stream:
                stream.cancel()
                break
        else:
            await channel.unary_unary(path, serialize, parse)(request, timeout=5)
    except aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def metric(controller: ControllerServer, name: str, **labels: str) -> float:
    value = controller.metrics.registry.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.parametrize("role", CERTIFICATE_ROLES)
async def test_each_role_may_call_exactly_its_rpcs(
    role: str, channels: Channels, floor: Floor, controller: ControllerServer
) -> None:
    name = "t1" if role == "table" else f"some-{role}"
    channel = channels(role, name)
    for path in JACKPOT_METHODS:
        request_class, _ = _method(path)
        request = request_class()
        if "table_id" in request_class.DESCRIPTOR.fields_by_name:
            request.table_id = "t1"
        code = await call(channel, path, request)
        allowed = Role(role) in ACCESS[path].roles
        assert (code is grpc.StatusCode.PERMISSION_DENIED) is not allowed, (path, role, code)
        assert code not in (
            grpc.StatusCode.UNAUTHENTICATED,
            grpc.StatusCode.INTERNAL,
            grpc.StatusCode.UNKNOWN,
        ), (path, role, code)
        if not allowed:
            method = path.rsplit("/", 1)[-1]
            counted = metric(
                controller,
                "jackpot_access_denied_total",
                grpc_method=method,
                role=role,
                reason="role",
            )
            assert counted == 1, (path, role)


async def test_a_table_certificate_reports_only_for_its_own_table(
    channels: Channels, floor: Floor, controller: ControllerServer, redis_client: Redis
) -> None:
    await floor.register("t2")
    as_t2 = pb_grpc.TableServiceStub(channels("table", "t2"))
    before = await snapshot(redis_client)
    for attempt in (
        as_t2.Lockout(lockout("t1", 1, [1])),
        as_t2.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1, reason="misdeal")),
        as_t2.GetTable(pb.GetTableRequest(table_id="t1")),
    ):
        await expect_refusal(
            attempt,
            grpc.StatusCode.PERMISSION_DENIED,
            "jackpot://table/t2 reports for table 't1'; a table's certificate is for its own "
            "table only",
        )
    assert await snapshot(redis_client) == before
    assert (
        metric(
            controller,
            "jackpot_access_denied_total",
            grpc_method="Lockout",
            role="table",
            reason="other_table",
        )
        == 1
    )
    # Its own table it may play.
    reply = await as_t2.Lockout(lockout("t2", 1, [1]))
    assert [a.seat for a in reply.accepted] == [1]


async def test_configuration_changes_are_journaled_with_the_certificate_that_made_them(
    floor: Floor, redis_client: Redis, pki: TestPKI
) -> None:
    fingerprint = certs.fingerprint(pki.client("operator", "ops").cert.read_bytes())
    entries = {fields["type"]: fields for _, fields in await journal(redis_client)}
    for kind in ("link_group_created", "meter_created", "table_registered"):
        assert entries[kind]["by"] == f"jackpot://operator/ops sha256:{fingerprint}", kind


@pytest.fixture
def deny_list(tmp_path: Path) -> Path:
    path = tmp_path / "deny-list"
    path.write_text("# revoked certificates\n", encoding="utf-8")
    return path


@pytest.fixture
def server_config(server_config: ServerConfig, request: pytest.FixtureRequest) -> ServerConfig:
    """The standard configuration, with the deny list when the test asks for one."""
    if "deny_list" in request.fixturenames:
        return dataclasses.replace(server_config, deny_list=request.getfixturevalue("deny_list"))
    return server_config


async def test_a_revoked_certificate_is_refused_without_a_restart(
    deny_list: Path,
    channels: Channels,
    floor: Floor,
    controller: ControllerServer,
    pki: TestPKI,
) -> None:
    table = pb_grpc.TableServiceStub(channels("table", "t1"))
    await table.GetTable(pb.GetTableRequest(table_id="t1"))
    fingerprint = certs.fingerprint(pki.client("table", "t1").cert.read_bytes())
    deny_list.write_text(f"{fingerprint}  # t1's agent PC was stolen\n", encoding="utf-8")
    controller.reload()  # what SIGHUP does
    await expect_refusal(
        table.GetTable(pb.GetTableRequest(table_id="t1")),
        grpc.StatusCode.UNAUTHENTICATED,
        f"certificate {fingerprint[:16]}... is revoked",
    )
    assert (
        metric(
            controller,
            "jackpot_access_denied_total",
            grpc_method="GetTable",
            role="none",
            reason="revoked",
        )
        == 1
    )
    # The list is also re-read when its file changes (checked at most once a second); one
    # that revokes nothing says so with a comment (an empty file keeps the revocations).
    deny_list.write_text("# nothing revoked\n", encoding="utf-8")
    for _ in range(40):
        await asyncio.sleep(0.1)
        try:
            await table.GetTable(pb.GetTableRequest(table_id="t1"))
            break
        except aio.AioRpcError as error:
            assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    else:
        pytest.fail("the shrunk deny list was never re-read")


@pytest.fixture
async def stranger_channel(
    controller: ControllerServer, tmp_path: Path
) -> AsyncIterator[aio.Channel]:
    """A table certificate from another CA, for table t1."""
    elsewhere = TestPKI(tmp_path / "elsewhere")
    files = dataclasses.replace(elsewhere.client("table", "t1"), ca=elsewhere.ca)
    # The stranger trusts our controller's CA, so only the controller's check can refuse it.
    ours = dataclasses.replace(files, ca=Path(controller.config.tls.client_ca))  # type: ignore[union-attr]
    channel = tls.aio_channel(f"localhost:{controller.port}", ours)
    yield channel
    await channel.close(None)


async def test_certificates_the_controller_does_not_trust_are_refused(
    stranger_channel: aio.Channel, controller: ControllerServer, floor: Floor, tmp_path: Path
) -> None:
    request = pb.GetTableRequest(table_id="t1")
    await expect_refusal(
        pb_grpc.TableServiceStub(stranger_channel).GetTable(request, timeout=5),
        grpc.StatusCode.UNAVAILABLE,
        "",
    )
    async with aio.insecure_channel(f"127.0.0.1:{controller.port}") as plaintext:
        await expect_refusal(
            pb_grpc.TableServiceStub(plaintext).GetTable(request, timeout=5),
            grpc.StatusCode.UNAVAILABLE,
            "",
        )


async def test_a_certificate_of_our_ca_without_a_jackpot_identity_is_unauthenticated(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> None:
    authority = certs._load_authority(pki.directory)
    cert, key = certs._leaf(
        authority,
        "somebody",
        [x509.DNSName("somebody.example")],
        ExtendedKeyUsageOID.CLIENT_AUTH,
        30,
    )
    issued = certs._save(tmp_path, "somebody", cert, key, force=False)
    files = tls.ClientTLS(pki.ca, issued.cert, issued.key)
    async with tls.aio_channel(f"127.0.0.1:{controller.port}", files) as channel:
        await expect_refusal(
            pb_grpc.AdminServiceStub(channel).ListMeters(pb.ListMetersRequest()),
            grpc.StatusCode.UNAUTHENTICATED,
            "exactly one URI SAN jackpot://<role>/<name> is required",
        )


async def test_a_revoked_display_loses_its_open_meter_stream(
    deny_list: Path,
    channels: Channels,
    tables: pb_grpc.TableServiceAsyncStub,
    floor: Floor,
    controller: ControllerServer,
    pki: TestPKI,
) -> None:
    sign = pb_grpc.TableServiceStub(channels("display", "lobby-sign"))
    stream = sign.WatchMeters(pb.WatchMetersRequest(table_id="t1", min_interval_ms=50))
    first = await stream.read()
    assert isinstance(first, pb.MeterSnapshot) and first.meters[0].amount_cents == 1_000_000
    fingerprint = certs.fingerprint(pki.client("display", "lobby-sign").cert.read_bytes())
    deny_list.write_text(fingerprint + "\n", encoding="utf-8")
    controller.reload()
    await tables.Lockout(lockout("t1", 1, [1]))  # the meter moves: the stream's next message
    with pytest.raises(aio.AioRpcError) as caught:
        await stream.read()
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "is revoked" in (caught.value.details() or "")


async def _refused_certificate(
    controller: ControllerServer,
    pki: TestPKI,
    tmp_path: Path,
    names: Sequence[x509.GeneralName],
) -> str:
    """The refusal of a certificate of our CA whose subject alternative names are ``names``."""
    authority = certs._load_authority(pki.directory)
    cert, key = certs._leaf(authority, "x", names, ExtendedKeyUsageOID.CLIENT_AUTH, 30)
    issued = certs._save(tmp_path, f"x{len(names)}", cert, key, force=True)
    files = tls.ClientTLS(pki.ca, issued.cert, issued.key)
    async with tls.aio_channel(f"127.0.0.1:{controller.port}", files) as channel:
        with pytest.raises(aio.AioRpcError) as caught:
            await pb_grpc.AdminServiceStub(channel).ListMeters(pb.ListMetersRequest())
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    return caught.value.details() or ""


async def test_only_a_uri_san_names_an_identity(
    controller: ControllerServer, floor: Floor, pki: TestPKI, tmp_path: Path
) -> None:
    spelled = "jackpot://operator/evil"
    for names in ([x509.DNSName(spelled)], [x509.RFC822Name(spelled)]):
        assert "names 0 jackpot identities" in await _refused_certificate(
            controller, pki, tmp_path, names
        )
    two = [
        x509.UniformResourceIdentifier("jackpot://operator/a"),
        x509.UniformResourceIdentifier("jackpot://supervisor/b"),
    ]
    assert "names 2 jackpot identities" in await _refused_certificate(
        controller, pki, tmp_path, two
    )
