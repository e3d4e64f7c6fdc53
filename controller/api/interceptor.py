"""One server interceptor for every RPC: who calls, what it may do, errors and metrics.

For each call, in this order: the caller's identity from its client certificate
(:mod:`controller.api.peers`; UNAUTHENTICATED), the role table (:mod:`controller.api.access`;
PERMISSION_DENIED), the caller's call rate (RESOURCE_EXHAUSTED; tables and other identities
each have their own), the request decoded here rather than by gRPC (a malformed body is
INVALID_ARGUMENT, not UNKNOWN with a traceback), a table's certificate naming another table
(PERMISSION_DENIED); then the servicer. A stream also holds one of the caller's stream slots
while it is open (RESOURCE_EXHAUSTED beyond), and ends UNAUTHENTICATED at its next message
once its certificate is revoked. Servicers raise :mod:`jackpot.errors` classes; each
becomes its status code (``controller.api.status``) with the error's message. Every call is
counted and timed (go-grpc-prometheus names), refusals included; every refusal of access is
also counted in ``jackpot_access_denied_total``. An unexpected exception is logged and
answered INTERNAL without its details.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
from grpc import aio

from controller.api.access import check_role, check_table, set_caller
from controller.api.limits import RateLimiter, StreamSlots
from controller.api.peers import Authenticator
from controller.api.status import code_label, status_for
from controller.domain.identity import Identity, Role
from controller.metrics import Metrics
from jackpot.errors import AccessDenied, InvalidArgument, JackpotError

log = logging.getLogger("controller.api")

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]
Context: TypeAlias = "aio.ServicerContext[Any, Any]"
Labels: TypeAlias = tuple[str, str, str]


if TYPE_CHECKING:  # the type stubs make these generic; the runtime classes are not
    _Interceptor = aio.ServerInterceptor[Any, Any]
else:
    _Interceptor = aio.ServerInterceptor


class ServerInterceptor(_Interceptor):
    """Admits each call (identity, role, table, rate), maps errors to status codes and records
    ``grpc_server_*`` metrics."""

    def __init__(
        self,
        metrics: Metrics,
        authenticator: Authenticator,
        *,
        table_rates: RateLimiter,
        client_rates: RateLimiter,
        streams: StreamSlots,
    ) -> None:
        self._metrics = metrics
        self._authenticator = authenticator
        self._table_rates = table_rates
        self._client_rates = client_rates
        self.streams = streams

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler:
        handler = await continuation(handler_call_details)
        if handler is None:  # an unknown method: gRPC answers UNIMPLEMENTED
            return handler
        method = handler_call_details.method
        service, _, name = method.strip("/").rpartition("/")
        decode = handler.request_deserializer
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, method, decode, ("unary", service, name)),
                request_deserializer=None,  # raw bytes: decoded in _admit
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(
                    handler.unary_stream, method, decode, ("server_stream", service, name)
                ),
                request_deserializer=None,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._wrap_bidi(
                    handler.stream_stream, method, decode, ("bidi_stream", service, name)
                ),
                request_deserializer=None,  # raw bytes: decoded as they are read
                response_serializer=handler.response_serializer,
            )
        return handler  # no client-streaming RPC is served

    def _identify(self, method: str, context: Context) -> tuple[Identity, bool]:
        """The caller and whether it must name its own table; counts a refusal, takes one
        call of the caller's rate."""
        caller: Identity | None = None
        try:
            caller = self._authenticator.identify(context.auth_context())
            access = check_role(method, caller)
        except AccessDenied as denied:
            self._count_denied(method, caller, denied)
            raise
        rates = self._table_rates if caller.role is Role.TABLE else self._client_rates
        rates.acquire(caller.uri, caller.uri)
        set_caller(caller)
        return caller, access.for_own_table

    def _admit(
        self, method: str, raw: bytes, context: Context, decode: Callable[[bytes], Any] | None
    ) -> tuple[Identity, Any]:
        """The caller and its decoded request, once it may make it."""
        caller, own_table = self._identify(method, context)
        request = _decode(method, raw, decode)
        if own_table:
            try:
                check_table(caller, str(getattr(request, "table_id", "")))
            except AccessDenied as denied:
                self._count_denied(method, caller, denied)
                raise
        return caller, request

    async def _streamed(
        self, method: str, caller: Identity, start: Callable[[], Any]
    ) -> AsyncIterator[Any]:
        """The replies of the handler call ``start`` makes, once the caller holds one of its
        stream slots (until the stream ends); it ends UNAUTHENTICATED at the first reply after
        its certificate is revoked."""
        with self.streams.hold(caller.uri):
            async for reply in _responses(start()):
                try:
                    self._authenticator.check_not_revoked(caller)
                except AccessDenied as denied:
                    self._count_denied(method, caller, denied)
                    raise
                yield reply

    def _count_denied(self, method: str, caller: Identity | None, denied: AccessDenied) -> None:
        role = caller.role.value if caller else "none"
        self._metrics.access_denied.labels(method.rsplit("/", 1)[-1], role, denied.reason).inc()
        log.warning("refused %s: %s", method, denied)

    def _wrap_unary(
        self,
        behaviour: Callable[..., Any],
        method: str,
        decode: Callable[[bytes], Any] | None,
        labels: Labels,
    ) -> Callable[[bytes, Context], Awaitable[Any]]:
        async def unary(raw: bytes, context: Context) -> Any:
            async with _Observed(self._metrics, labels, context):
                _, request = self._admit(method, raw, context, decode)
                return await behaviour(request, context)

        return unary

    def _wrap_stream(
        self,
        behaviour: Callable[..., Any],
        method: str,
        decode: Callable[[bytes], Any] | None,
        labels: Labels,
    ) -> Callable[[bytes, Context], AsyncIterator[Any]]:
        async def stream(raw: bytes, context: Context) -> AsyncIterator[Any]:
            async with _Observed(self._metrics, labels, context):
                caller, request = self._admit(method, raw, context, decode)
                start = functools.partial(behaviour, request, context)
                async for response in self._streamed(method, caller, start):
                    yield response

        return stream

    def _wrap_bidi(
        self,
        behaviour: Callable[..., Any],
        method: str,
        decode: Callable[[bytes], Any] | None,
        labels: Labels,
    ) -> Callable[[AsyncIterator[bytes], Context], AsyncIterator[Any]]:
        async def bidi(requests: AsyncIterator[bytes], context: Context) -> AsyncIterator[Any]:
            async with _Observed(self._metrics, labels, context):
                caller, _ = self._identify(method, context)

                async def decoded() -> AsyncIterator[Any]:
                    async for raw in requests:
                        yield _decode(method, raw, decode)

                start = functools.partial(behaviour, decoded(), context)
                async for response in self._streamed(method, caller, start):
                    yield response

        return bidi


async def _responses(result: Any) -> AsyncIterator[Any]:
    """The replies of a streaming handler: an async generator's items; nothing from a
    coroutine that writes its replies itself (``context.write``, as the health Watch does)."""
    if hasattr(result, "__aiter__"):
        async for response in result:
            yield response
    else:
        await result


def _decode(method: str, raw: bytes, decode: Callable[[bytes], Any] | None) -> Any:
    if decode is None:
        return raw
    try:
        return decode(raw)
    except Exception:  # protobuf raises DecodeError, and others for some malformed bodies
        raise InvalidArgument(
            f"the request body ({len(raw):,} bytes) is not a valid request of "
            f"{method.rsplit('/', 1)[-1]}"
        ) from None


class _Observed:
    """Times one call, maps the exception that ends it to a status, and counts the code."""

    def __init__(self, metrics: Metrics, labels: Labels, context: Context) -> None:
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
            self._metrics.grpc_handled.labels(*self._labels, code_label(code)).inc()
            self._metrics.grpc_latency.labels(*self._labels).observe(
                time.perf_counter() - self._started
            )
