"""The v1 reflection service (``grpc.reflection.v1.ServerReflection``) beside v1alpha.

grpcio-reflection serves only ``grpc.reflection.v1alpha``, while current tools (grpcurl,
Postman, buf curl, the Node.js and Go libraries) ask for v1 first. The two protocols are the
same messages with the same field numbers in another package, so v1 is served by the
v1alpha servicer itself, over the same descriptor pool: its descriptor file is v1alpha's
renamed (added to the default pool once, so that reflection can describe it), and its
requests and replies are read and written with the v1alpha message classes (the bytes on
the wire are the same).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc import aio
from grpc_reflection.v1alpha import reflection_pb2 as v1alpha
from grpc_reflection.v1alpha._async import ReflectionServicer

SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
FILE_NAME = "grpc/reflection/v1/reflection.proto"
_V1ALPHA = ".grpc.reflection.v1alpha."
_V1 = ".grpc.reflection.v1."


def v1_file() -> Any:
    """The v1 reflection descriptor file in the default pool (added on the first call)."""
    pool = descriptor_pool.Default()
    try:
        return pool.FindFileByName(FILE_NAME)
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    v1alpha.DESCRIPTOR.CopyToProto(proto)
    proto.name = FILE_NAME
    proto.package = "grpc.reflection.v1"
    proto.ClearField("options")
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(_V1ALPHA):
                field.type_name = _V1 + field.type_name.removeprefix(_V1ALPHA)
    for service in proto.service:
        for method in service.method:
            method.input_type = _V1 + method.input_type.removeprefix(_V1ALPHA)
            method.output_type = _V1 + method.output_type.removeprefix(_V1ALPHA)
    pool.AddSerializedFile(proto.SerializeToString())
    return pool.FindFileByName(FILE_NAME)


def add_v1_reflection(service_names: Sequence[str], server: aio.Server) -> None:
    """Serve v1 reflection of ``service_names`` on ``server``."""
    v1_file()
    servicer = ReflectionServicer(service_names)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=v1alpha.ServerReflectionRequest.FromString,
        response_serializer=v1alpha.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE_NAME, {"ServerReflectionInfo": handler}),)
    )


FILE = v1_file()
"""The v1 reflection file, in the default pool from this import on."""
