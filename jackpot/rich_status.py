"""Read a refusal's ``google.rpc.Status`` details without googleapis-common-protos.

The controller answers every refusal with an ``ErrorInfo`` reason and, where a retry can
succeed, a ``RetryInfo`` (docs/reference/errors.md). The table agent installs only gRPC and
protobuf, so it reads them with message classes of its own: the same field numbers as
google/rpc/status.proto and error_details.proto, in a private descriptor pool (no clash
with googleapis-common-protos where it is installed too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, duration_pb2, message_factory

DETAILS_KEY = "grpc-status-details-bin"
_PACKAGE = "jackpot.agent.rpc"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


@dataclass(frozen=True, slots=True)
class Details:
    """What a refusal's details say: its reason ("" when none was sent), its domain, the
    request field at fault ("" for none) and the delay before a retry (None: not said)."""

    reason: str = ""
    domain: str = ""
    field: str = ""
    retry_after_s: float | None = None


def _classes() -> tuple[Any, Any, Any]:
    pool = descriptor_pool.DescriptorPool()
    for dependency in (any_pb2, duration_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        dependency.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    file = descriptor_pb2.FileDescriptorProto(
        name="jackpot/agent/rpc.proto",
        package=_PACKAGE,
        syntax="proto3",
        dependency=["google/protobuf/any.proto", "google/protobuf/duration.proto"],
    )
    optional = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    repeated = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
    kinds = descriptor_pb2.FieldDescriptorProto

    def message(name: str, *fields: tuple[str, int, int, int, str]) -> None:
        added = file.message_type.add(name=name)
        for field_name, number, label, kind, type_name in fields:
            field = added.field.add(name=field_name, number=number, label=label, type=kind)
            if type_name:
                field.type_name = type_name

    message(
        "Status",
        ("code", 1, optional, kinds.TYPE_INT32, ""),
        ("message", 2, optional, kinds.TYPE_STRING, ""),
        ("details", 3, repeated, kinds.TYPE_MESSAGE, ".google.protobuf.Any"),
    )
    # ErrorInfo's metadata map (field 3) is read as its entries: key 1, value 2.
    message(
        "MetadataEntry",
        ("key", 1, optional, kinds.TYPE_STRING, ""),
        ("value", 2, optional, kinds.TYPE_STRING, ""),
    )
    message(
        "ErrorInfo",
        ("reason", 1, optional, kinds.TYPE_STRING, ""),
        ("domain", 2, optional, kinds.TYPE_STRING, ""),
        ("metadata", 3, repeated, kinds.TYPE_MESSAGE, f".{_PACKAGE}.MetadataEntry"),
    )
    message(
        "RetryInfo", ("retry_delay", 1, optional, kinds.TYPE_MESSAGE, ".google.protobuf.Duration")
    )
    pool.Add(file)
    return tuple(  # type: ignore[return-value]
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in ("Status", "ErrorInfo", "RetryInfo")
    )


_STATUS, _ERROR_INFO_CLASS, _RETRY_INFO_CLASS = _classes()


def details_of(trailing_metadata: Any) -> Details:
    """The details in a call's trailing metadata (pairs of key and value); empty ones when it
    sent none or they do not decode (a controller of another make)."""
    for key, value in trailing_metadata or ():
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        try:
            return _read(value)
        except Exception:  # protobuf raises DecodeError and others for malformed bytes
            return Details()
    return Details()


def _read(raw: bytes) -> Details:
    status = _STATUS.FromString(raw)
    reason = domain = field = ""
    retry_after_s: float | None = None
    for detail in status.details:
        if detail.type_url == _ERROR_INFO:
            info = _ERROR_INFO_CLASS.FromString(detail.value)
            reason, domain = info.reason[:64], info.domain[:64]
            field = next((e.value[:100] for e in info.metadata if e.key == "field"), "")
        elif detail.type_url == _RETRY_INFO:
            delay = _RETRY_INFO_CLASS.FromString(detail.value).retry_delay
            retry_after_s = max(0.0, delay.seconds + delay.nanos / 1e9)
    return Details(reason, domain, field, retry_after_s)
