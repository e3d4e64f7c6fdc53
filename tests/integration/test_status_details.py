"""Refusals carry ``google.rpc.Status`` details over real gRPC: an ``ErrorInfo`` reason, the
field at fault (``BadRequest``), and when to retry (``RetryInfo``), read as a client of any
language reads them (``grpc_status.rpc_status.from_call``), with the code and message as
before; and the v1 reflection service, asked by a real client."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, cast

import grpc
import pytest
from google.protobuf import descriptor_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc import aio
from grpc_reflection.v1alpha import reflection_pb2
from grpc_status import rpc_status

from controller.api import reflection_v1
from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import RedisServer, TestPKI
from jackpot.v1 import jackpot_pb2 as pb
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerRefused
from tests.helpers import (
    Channels,
    Floor,
    connect,
    controller_config,
    lockout,
    settle,
    table_client,
)

ROYAL = "AS KS QS JS TS"


async def refused(call: Any) -> tuple[aio.AioRpcError, status_pb2.Status]:
    """The error ``call`` fails with and its rich status (which must be there)."""
    with pytest.raises(aio.AioRpcError) as caught:
        await call
    # from_call checks that code and message agree with the details; an aio error is a Call
    status = rpc_status.from_call(cast(grpc.Call, caught.value))
    assert status is not None, caught.value.details()
    return caught.value, status


def details(status: status_pb2.Status) -> dict[str, Any]:
    """The status's details by type name, unpacked."""
    found: dict[str, Any] = {}
    for any_ in status.details:
        for kind in (
            error_details_pb2.ErrorInfo,
            error_details_pb2.BadRequest,
            error_details_pb2.RetryInfo,
        ):
            if any_.TypeName() == kind.DESCRIPTOR.full_name:
                message = kind()
                any_.Unpack(message)
                found[kind.DESCRIPTOR.name] = message
    assert len(found) == len(status.details), status
    return found


async def test_an_invalid_argument_names_its_field(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    error, status = await refused(tables.VoidRound(pb.VoidRoundRequest(table_id="t1", round_id=1)))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == "reason is required"  # the message as before
    found = details(status)
    assert found["ErrorInfo"].reason == "INVALID_ARGUMENT"
    assert found["ErrorInfo"].domain == "jackpot.v1"
    assert found["ErrorInfo"].metadata["field"] == "reason"
    (violation,) = found["BadRequest"].field_violations
    assert (violation.field, violation.description) == ("reason", "reason is required")
    assert "RetryInfo" not in found


async def test_bad_cards_and_kinds_name_their_field(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    bad = settle("t1", 1, {1: ROYAL, 2: "2H ZZ 3C 4D 5S"})
    error, status = await refused(tables.Settle(bad))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    found = details(status)
    assert found["ErrorInfo"].reason == "INVALID_CARDS"
    assert [v.field for v in found["BadRequest"].field_violations] == ["seats[1].cards"]
    unknown = lockout("t1", 2, [1, 2])
    unknown.wagers[1].kind = 99  # type: ignore[assignment]
    error, status = await refused(tables.Lockout(unknown))
    found = details(status)
    assert [v.field for v in found["BadRequest"].field_violations] == ["wagers[1].kind"]


async def test_a_refusal_of_no_single_field_has_no_field_violation(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    """A card dealt twice across two hands is no one field's fault."""
    await tables.Lockout(lockout("t1", 1, [1, 2]))
    bad = settle("t1", 1, {1: ROYAL, 2: "AS 2H 3C 4D 5S"})
    error, status = await refused(tables.Settle(bad))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    found = details(status)
    assert found["ErrorInfo"].reason == "INVALID_CARDS", error.details()
    assert set(found) == {"ErrorInfo"}


async def test_a_failed_precondition_says_which(
    tables: pb_grpc.TableServiceAsyncStub, floor: Floor
) -> None:
    error, status = await refused(tables.Settle(settle("t1", 7, {1: ROYAL})))
    assert error.code() is grpc.StatusCode.FAILED_PRECONDITION
    found = details(status)
    assert found["ErrorInfo"].reason == "ROUND_STATE"
    assert set(found) == {"ErrorInfo"}  # no retry helps


async def test_a_refusal_of_access_has_its_kind(channels: Channels, floor: Floor) -> None:
    display = pb_grpc.AdminServiceStub(channels("display", "lobby"))
    error, status = await refused(display.ListMeters(pb.ListMetersRequest()))
    assert error.code() is grpc.StatusCode.PERMISSION_DENIED
    assert details(status)["ErrorInfo"].reason == "ROLE_NOT_ALLOWED"


@pytest.fixture
def server_config(server_config: ServerConfig) -> ServerConfig:
    """A call rate small enough to reach: 5 calls a second, a burst of 5."""
    return dataclasses.replace(server_config, table_calls_per_s=5, table_call_burst=5)


async def test_the_rate_limit_says_when_to_retry(channels: Channels, floor: Floor) -> None:
    stub = pb_grpc.TableServiceStub(channels("table", "t1"))
    for _ in range(5):  # the burst
        await stub.GetTable(pb.GetTableRequest(table_id="t1"))
    error, status = await refused(stub.GetTable(pb.GetTableRequest(table_id="t1")))
    assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "made more than 5 calls a second" in (error.details() or "")
    found = details(status)
    assert found["ErrorInfo"].reason == "RATE_LIMITED"
    delay = found["RetryInfo"].retry_delay.ToNanoseconds() / 1e9
    assert 0.05 < delay <= 0.2, delay  # the time one call takes to come back: 1/5 s at most


async def test_unavailable_says_retry(tmp_path: Path, pki: TestPKI) -> None:
    with RedisServer(tmp_path / "redis") as redis:
        server = ControllerServer(controller_config(redis.url, pki))
        await server.start()
        try:
            async with connect(f"127.0.0.1:{server.port}", pki) as (tables, admin):
                await Floor(admin).create()
                redis.stop()
                error, status = await refused(tables.Lockout(lockout("t1", 1, [1])))
                assert error.code() is grpc.StatusCode.UNAVAILABLE
                found = details(status)
                assert found["ErrorInfo"].reason == "STORE_UNAVAILABLE"
                assert found["RetryInfo"].retry_delay.ToNanoseconds() > 0
        finally:
            await server.stop(grace_s=1)


async def test_v1_reflection_lists_services_and_sends_file_descriptors(
    channel: aio.Channel, floor: Floor
) -> None:
    """A v1 client (the v1 method path; the messages are v1alpha's, the same bytes)."""
    v1 = channel.stream_stream(
        f"/{reflection_v1.SERVICE_NAME}/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
    )
    call = v1(
        iter(
            [
                reflection_pb2.ServerReflectionRequest(list_services=""),
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol="jackpot.v1.TableService"
                ),
                reflection_pb2.ServerReflectionRequest(
                    file_containing_symbol=reflection_v1.SERVICE_NAME
                ),
            ]
        )
    )
    replies = [reply async for reply in call]
    names = {s.name for s in replies[0].list_services_response.service}
    assert {
        "jackpot.v1.TableService",
        "jackpot.v1.AdminService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= names
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in replies[1].file_descriptor_response.file_descriptor_proto
    ]
    jackpot = next(f for f in files if f.package == "jackpot.v1")
    assert {"TableService", "AdminService"} <= {s.name for s in jackpot.service}
    (own,) = (
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in replies[2].file_descriptor_response.file_descriptor_proto
    )
    assert own.package == "grpc.reflection.v1"
    method = own.service[0].method[0]
    assert method.input_type == ".grpc.reflection.v1.ServerReflectionRequest"


async def test_the_table_agent_surfaces_the_reason(
    controller: ControllerServer, pki: TestPKI, floor: Floor
) -> None:
    client = table_client(controller.port, pki, "ghost", retry_for_s=5)
    try:
        with pytest.raises(ControllerRefused) as caught:
            await client.get_table("ghost")
        assert caught.value.code is grpc.StatusCode.NOT_FOUND
        assert caught.value.reason == "NOT_FOUND"
    finally:
        await client.close()
    client = table_client(controller.port, pki, "t1", retry_for_s=5)
    try:
        with pytest.raises(ControllerRefused) as caught:
            await client.void_round("t1", 1, reason="")
        assert (caught.value.reason, caught.value.field) == ("INVALID_ARGUMENT", "reason")
    finally:
        await client.close()


def _rate_refusals(controller: ControllerServer) -> float:
    return (
        controller.metrics.registry.get_sample_value(
            "grpc_server_handled_total",
            {
                "grpc_type": "unary",
                "grpc_service": "jackpot.v1.TableService",
                "grpc_method": "GetTable",
                "grpc_code": "ResourceExhausted",
            },
        )
        or 0.0
    )


async def test_the_table_agent_waits_as_the_rate_limit_says(
    controller: ControllerServer, channels: Channels, pki: TestPKI, floor: Floor
) -> None:
    """Told how long to wait (up to 0.2 s), the agent retries once, then; backing off from
    25-50 ms as before, it would be refused again whenever it was told more than that."""
    stub = pb_grpc.TableServiceStub(channels("table", "t1"))
    for _ in range(50):  # spend the burst, up to the first refusal
        try:
            await stub.GetTable(pb.GetTableRequest(table_id="t1"))
        except aio.AioRpcError as error:
            assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            break
    before = _rate_refusals(controller)
    assert before == 1
    client = table_client(controller.port, pki, "t1", retry_for_s=5)
    try:
        started = time.monotonic()
        info = await client.get_table("t1")
        took = time.monotonic() - started
    finally:
        await client.close()
    assert info.last_round_id == 0
    refused = _rate_refusals(controller) - before
    assert refused <= 1, (refused, took)
