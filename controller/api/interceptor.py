"""One server interceptor for every RPC: error mapping and the gRPC metrics.

Servicers raise :mod:`controller.errors` classes; here each becomes its status code (from
``controller.api.status``) with the error's message, and every call is counted and timed
(go-grpc-prometheus names). An unexpected exception is logged and answered INTERNAL without
its details.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
from grpc import aio

from controller.api.status import status_for
from controller.errors import JackpotError
from controller.metrics import Metrics

log = logging.getLogger("controller.api")

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]


if TYPE_CHECKING:  # the type stubs make these generic; the runtime classes are not
    _Interceptor = aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = aio.ServerInterceptor


class ServerInterceptor(_Interceptor):
    """Maps errors to status codes and records ``grpc_server_*`` metrics for each call."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler:
        handler = await continuation(handler_call_details)
        if handler is None:  # an unknown method: gRPC answers UNIMPLEMENTED
            return handler
        service, _, method = handler_call_details.method.strip("/").rpartition("/")
        if handler.unary_unary is not None:
            labels = ("unary", service, method)
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, labels),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            labels = ("server_stream", service, method)
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(handler.unary_stream, labels),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler

    def _wrap_unary(
        self, behaviour: Callable[..., Any], labels: tuple[str, str, str]
    ) -> Callable[[Any, aio.ServicerContext[Any, Any]], Awaitable[Any]]:
        async def unary(request: Any, context: aio.ServicerContext[Any, Any]) -> Any:
            async with _Observed(self._metrics, labels, context):
                return await behaviour(request, context)

        return unary

    def _wrap_stream(
        self, behaviour: Callable[..., Any], labels: tuple[str, str, str]
    ) -> Callable[[Any, aio.ServicerContext[Any, Any]], AsyncIterator[Any]]:
        async def stream(
            request: Any, context: aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[Any]:
            async with _Observed(self._metrics, labels, context):
                async for response in behaviour(request, context):
                    yield response

        return stream


class _Observed:
    """Times one call, maps the exception that ends it to a status, and counts the code."""

    def __init__(
        self, metrics: Metrics, labels: tuple[str, str, str], context: aio.ServicerContext[Any, Any]
    ) -> None:
        self._metrics = metrics
        self._labels = labels
        self._context = context
        self._started = 0.0

    async def __aenter__(self) -> None:
        self._metrics.grpc_started.labels(*self._labels).inc()
        self._started = time.perf_counter()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        code = grpc.StatusCode.OK
        try:
            if isinstance(error, JackpotError):
                code = status_for(error)
                if code is grpc.StatusCode.INTERNAL:  # not a refusal: a fault to look into
                    log.error("%s/%s failed: %s", *self._labels[1:], error)
                await self._context.abort(code, str(error))  # raises aio.AbortError
            elif isinstance(error, aio.AbortError):
                code = self._context.code() or grpc.StatusCode.UNKNOWN
            elif isinstance(error, asyncio.CancelledError):
                code = grpc.StatusCode.CANCELLED
            elif isinstance(error, Exception):
                code = grpc.StatusCode.INTERNAL
                log.error("unexpected error in %s/%s", *self._labels[1:], exc_info=error)
                await self._context.abort(code, "internal error; see the controller log")
            return False
        finally:
            self._metrics.grpc_handled.labels(*self._labels, code.name).inc()
            self._metrics.grpc_latency.labels(*self._labels).observe(
                time.perf_counter() - self._started
            )
