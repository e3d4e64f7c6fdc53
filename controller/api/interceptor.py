"""One server interceptor for every RPC: who calls, what it may do, errors and metrics.

For each call, in this order, at the call's start and before its request is read: the
caller's identity from its client certificate (:mod:`controller.api.peers`;
UNAUTHENTICATED), the role table (:mod:`controller.api.access`; PERMISSION_DENIED), the
caller's call rate (RESOURCE_EXHAUSTED; tables and other identities each have their own; a
refused call takes from it too, so a flood of refusals is slowed down like any other), one
of the caller's call slots (RESOURCE_EXHAUSTED beyond ``calls.per_caller`` calls in
progress); then the request, which must arrive within ``first_message_s`` (one sweeping
timer for all calls, :class:`~jackpot.deadlines.DeadlineWatch`; else RESOURCE_EXHAUSTED: a
call that sends nothing holds a slot that long at most), decoded here rather than by gRPC
(a malformed body is INVALID_ARGUMENT, not UNKNOWN with a traceback), a table's
certificate naming another table (PERMISSION_DENIED); then the servicer. Every call
admitted from a table's certificate, and every stream it holds open, tells
:class:`~controller.api.liveness.TableLiveness` that its agent runs (the floor view).

To see the call before its request, unary methods are served as client-streaming ones
(the wire is the same): gRPC hands a unary handler its call only once the request has
arrived, and ``intercept_service`` sees no peer. A stream also holds one of the caller's
stream slots while it is open (RESOURCE_EXHAUSTED beyond), and ends UNAUTHENTICATED at its
next message once its certificate is revoked. Servicers raise :mod:`jackpot.errors`
classes; each becomes its status code (``controller.api.status``) with the error's
message and the ``google.rpc.Status`` details (a machine-readable reason, the field at fault,
when to retry). Every call is counted and timed (go-grpc-prometheus names), refusals included;
every refusal of access is also counted in ``jackpot_access_denied_total`` and logged at
WARNING, sampled (:class:`~controller.api.limits.LogSampler`). An unexpected exception is
logged and answered INTERNAL without its details.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

import grpc
from grpc import aio

from controller.api.access import check_role, check_table, set_caller
from controller.api.limits import LogSampler, RateLimiter, StreamSlots
from controller.api.liveness import TableLiveness
from controller.api.peers import Authenticator
from controller.api.status import details_trailer, status_for
from controller.domain.identity import Identity, Role
from controller.observability.metrics import Labels, Metrics, RpcSeries, code_label
from jackpot.deadlines import DeadlineWatch
from jackpot.errors import AccessDenied, InvalidArgument, JackpotError, RequestLate

log = logging.getLogger("controller.api")

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]
Context: TypeAlias = "aio.ServicerContext[Any, Any]"

FIRST_MESSAGE_S = 10.0
"""The time a call has to send its request once it has started."""


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
        calls: StreamSlots | None = None,
        first_message_s: float = FIRST_MESSAGE_S,
        liveness: TableLiveness | None = None,
    ) -> None:
        self._metrics = metrics
        self._authenticator = authenticator
        self._table_rates = table_rates
        self._client_rates = client_rates
        self.streams = streams
        self.calls = calls or StreamSlots(1 << 30, 1 << 30, "calls in progress")
        self.first_message_s = first_message_s
        self._first_message = DeadlineWatch(first_message_s)
        self.liveness = liveness
        self._log_sampler = LogSampler()
        self._wrapped: dict[str, Handler] = {}

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler:
        """The method's handler wrapped (once per method: its handler and labels are fixed)."""
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(handler_call_details)
        if handler is None:  # an unknown method: gRPC answers UNIMPLEMENTED
            return handler
        wrapped = self._wrap(handler, method)
        self._wrapped[method] = wrapped
        return wrapped

    def _wrap(self, handler: Handler, method: str) -> Handler:
        service, _, name = method.strip("/").rpartition("/")
        decode = handler.request_deserializer
        # Served as client streams: the call is seen at its start, before its request.
        if handler.unary_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, method, decode, ("unary", service, name)),
                request_deserializer=None,  # raw bytes: decoded in _admit
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
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
        auth_context = context.auth_context()
        try:
            caller = self._authenticator.identify(auth_context)
            access = check_role(method, caller)
        except AccessDenied as denied:
            key = caller.uri if caller else self._authenticator.peer_key(auth_context)
            self._refuse(method, caller, denied, key, charge=True)
        rates = self._table_rates if caller.role is Role.TABLE else self._client_rates
        rates.acquire(caller.uri, caller.uri)
        set_caller(caller)
        if caller.role is Role.TABLE and self.liveness is not None:
            self.liveness.heard(caller.name)  # any call: the agent runs (the floor view)
        return caller, access.for_own_table

    def _refuse(
        self,
        method: str,
        caller: Identity | None,
        denied: AccessDenied,
        key: str,
        *,
        charge: bool = False,
    ) -> NoReturn:
        """Count a refusal, log it (sampled) and raise it. ``charge``: a call refused before
        it took from its caller's call rate takes from it now (RESOURCE_EXHAUSTED, not
        logged, once that is spent)."""
        self._metrics.access_denied.labels(
            method.rsplit("/", 1)[-1], caller.role.value if caller else "none", denied.reason
        ).inc()
        if charge:
            is_table = caller is not None and caller.role is Role.TABLE
            (self._table_rates if is_table else self._client_rates).acquire(key, key)
        unlogged = self._log_sampler.sample(f"{key} {denied.reason}")
        if unlogged is not None:
            since = f" ({unlogged} more refused since the last line)" if unlogged else ""
            log.warning("refused %s: %s%s", method, denied, since)
        raise denied

    async def _first(self, context: Context, method: str) -> bytes:
        """The one request of a unary call, once it arrives (within ``first_message_s``, as
        :class:`~jackpot.deadlines.DeadlineWatch` sweeps). Read from the call itself (what the
        request iterator reads). As ``asyncio.timeout``, a cancellation that is not the
        watch's passes on unchanged."""
        watch = self._first_message
        task = watch.current()
        cancelling = task.cancelling()
        watch.watch(task)
        try:
            raw = await context.read()
        except asyncio.CancelledError:
            if watch.expired(task) and task.uncancel() <= cancelling:
                raise RequestLate(
                    f"no request within {self.first_message_s:g} s of the call's start; "
                    "send the request with the call"
                ) from None
            raise
        else:
            if watch.expired(task):  # the deadline passed as the request came: it goes on
                task.uncancel()
        finally:
            watch.done(task)
        if raw is aio.EOF:  # type: ignore[attr-defined]  # the stubs lack it
            raise InvalidArgument(
                f"the call of {method.rsplit('/', 1)[-1]} ended without a request"
            ) from None
        return raw  # type: ignore[no-any-return]

    def _admit(
        self,
        method: str,
        caller: Identity,
        own_table: bool,
        raw: bytes,
        decode: Callable[[bytes], Any] | None,
    ) -> Any:
        """The caller's decoded request, once it may make it."""
        request = _decode(method, raw, decode)
        if own_table:
            try:
                check_table(caller, str(getattr(request, "table_id", "")))
            except AccessDenied as denied:
                self._refuse(method, caller, denied, caller.uri)
        return request

    async def _streamed(
        self, method: str, caller: Identity, start: Callable[[], Any]
    ) -> AsyncIterator[Any]:
        """The replies of the handler call ``start`` makes, once the caller holds one of its
        stream slots (until the stream ends); it ends UNAUTHENTICATED at the first reply after
        its certificate is revoked."""
        heard = (
            self.liveness.streaming(caller.name)
            if caller.role is Role.TABLE and self.liveness is not None
            else contextlib.nullcontext()
        )
        with self.streams.hold(caller.uri), heard:
            async for reply in _responses(start()):
                try:
                    self._authenticator.check_not_revoked(caller)
                except AccessDenied as denied:
                    self._refuse(method, caller, denied, caller.uri)
                yield reply

    def _wrap_unary(
        self,
        behaviour: Callable[..., Any],
        method: str,
        decode: Callable[[bytes], Any] | None,
        labels: Labels,
    ) -> Callable[[AsyncIterator[bytes], Context], Awaitable[Any]]:
        series = self._metrics.rpc_series(labels)

        async def unary(requests: AsyncIterator[bytes], context: Context) -> Any:
            async with _Observed(series, context):
                caller, own_table = self._identify(method, context)
                uri, calls = caller.uri, self.calls
                calls.take(uri)
                try:
                    raw = await self._first(context, method)
                    request = self._admit(method, caller, own_table, raw, decode)
                    return await behaviour(request, context)
                finally:
                    calls.give(uri)

        return unary

    def _wrap_stream(
        self,
        behaviour: Callable[..., Any],
        method: str,
        decode: Callable[[bytes], Any] | None,
        labels: Labels,
    ) -> Callable[[AsyncIterator[bytes], Context], AsyncIterator[Any]]:
        series = self._metrics.rpc_series(labels)

        async def stream(requests: AsyncIterator[bytes], context: Context) -> AsyncIterator[Any]:
            async with _Observed(series, context):
                caller, own_table = self._identify(method, context)
                with self.calls.hold(caller.uri):
                    raw = await self._first(context, method)
                    request = self._admit(method, caller, own_table, raw, decode)
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
        series = self._metrics.rpc_series(labels)

        async def bidi(requests: AsyncIterator[bytes], context: Context) -> AsyncIterator[Any]:
            async with _Observed(series, context):
                caller, _ = self._identify(method, context)

                async def decoded() -> AsyncIterator[Any]:
                    async for raw in requests:
                        yield _decode(method, raw, decode)

                with self.calls.hold(caller.uri):
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
    """Times one call, maps the exception that ends it to a status, and counts the code.
    A refusal (a :class:`JackpotError` that is not a fault, other than "try again later")
    is logged, one line at INFO."""

    def __init__(self, series: RpcSeries, context: Context) -> None:
        self._series = series
        self._context = context
        self._started = 0.0

    async def __aenter__(self) -> None:
        self._series.started.inc()
        self._started = time.perf_counter()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        code = grpc.StatusCode.OK
        method = self._series.method
        try:
            if isinstance(error, JackpotError):
                code = status_for(error)
                if code is grpc.StatusCode.INTERNAL:  # not a refusal: a fault to look into
                    log.error("%s failed: %s", method, error)
                elif code not in _NOT_LOGGED and not isinstance(error, AccessDenied):
                    log.info("refused %s (%s): %s", method, code_label(code), error)
                message = str(error)
                await self._context.abort(  # raises aio.AbortError
                    code, message, trailing_metadata=details_trailer(error, message)
                )
            elif isinstance(error, aio.AbortError):
                code = self._context.code() or grpc.StatusCode.UNKNOWN
            elif isinstance(error, asyncio.CancelledError):
                code = grpc.StatusCode.CANCELLED
            elif isinstance(error, Exception):
                code = grpc.StatusCode.INTERNAL
                log.error("unexpected error in %s", method, exc_info=error)
                message = "internal error; see the controller log"
                await self._context.abort(
                    code, message, trailing_metadata=details_trailer(_INTERNAL, message)
                )
            return False
        finally:
            self._series.handled(code).inc()
            self._series.latency.observe(time.perf_counter() - self._started)


_INTERNAL = JackpotError("internal error")
"""What an unexpected exception is answered as (reason INTERNAL; its details stay in the log)."""

_NOT_LOGGED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
"""Refusals that say "later", not "no": they come in floods during an outage or a burst,
are counted in ``grpc_server_handled_total``, and their cause is logged where it is found
(Redis unreachable, once every few seconds). Access refusals have their own WARNING."""
