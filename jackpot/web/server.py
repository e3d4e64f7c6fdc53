"""A small, bounded HTTP/1.1 server on asyncio streams, for the sign and the floor view.

Why not a web framework: the table agent serves the meter sign too and must stay
installable with grpcio and protobuf only, and both processes already run an asyncio loop
whose data (the meter feed, the store) the pages read; asyncio's own streams serve both
without a thread hop or a second copy of the code. What a page needs is little: GET, a small
POST, and server-sent events. So the server is deliberately narrow:

* one request per connection (``Connection: close``); no chunked bodies, no upgrades;
* a request head of at most :data:`MAX_HEAD_BYTES`, a body of at most ``max_body`` bytes
  (``Content-Length`` only), both read within :data:`READ_TIMEOUT_S`;
* at most ``max_connections`` connections and ``max_streams`` event streams at once; one
  more is refused (503) at once rather than queued;
* with TLS, each handshake must finish within ``handshake_timeout_s`` and uses the context
  ``ssl_context`` gives at that moment (a callable may give a new one after its files
  change: it is switched in from the handshake's server-name callback, which OpenSSL calls
  for every handshake, with or without SNI); then ``admit`` judges the client certificate
  before any byte of the request is read: a refused peer (revoked, unusable) is answered its
  refusal and closed at once, and an admitted one (its key: the identity) holds at most
  ``max_connections_per_peer`` connections and ``max_streams_per_peer`` event streams;
* an event stream writes one small event at a time and waits for the client to take it
  (within :data:`WRITE_TIMEOUT_S`, else the stream ends): a slow or vanished client holds at
  most the transport's buffer, never a growing queue.

With an :class:`ssl.SSLContext` the server speaks HTTPS and hands the handler the client
certificate (DER and its URI SANs); the context decides whether one is required.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

log = logging.getLogger("jackpot.web")

MAX_HEAD_BYTES = 16 * 1024
"""The request line and headers together (a browser sends well under 2 KiB)."""
READ_TIMEOUT_S = 10.0
"""The time a client has to send its request head and body."""
WRITE_TIMEOUT_S = 10.0
"""The time a client has to take one response or one event before it is dropped."""
HANDSHAKE_TIMEOUT_S = 10.0
"""The time a client has to finish the TLS handshake."""

SECURITY_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    # The pages are one self-contained file (inline style and script; nothing from another
    # origin: the casino network is closed) that talks only to its own origin.
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
)


@dataclass(frozen=True, slots=True)
class Request:
    """One request. ``headers`` by lower-case name (a repeated header: its first value);
    ``peer_der`` the client certificate (DER) when the connection is TLS and one was
    presented, with ``peer_uris`` its URI subject alternative names."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes = b""
    peer_der: bytes | None = None
    peer_uris: tuple[str, ...] = ()
    scheme: str = "http"
    peer: str | None = None  # what ``admit`` named the peer (its identity), if it judged it


@dataclass(frozen=True, slots=True)
class Response:
    """A whole response (``body`` is sent with its length)."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class EventStream:
    """A ``text/event-stream`` response: each item of ``events`` is one encoded event
    (:func:`event`), sent as it comes, until the iterator ends or the client leaves."""

    events: AsyncGenerator[bytes, None]


Handler = Callable[[Request], Awaitable[Response | EventStream]]
Admit = Callable[[bytes | None], str]
"""Judge a connection's client certificate (DER, None without one) right after the
handshake: the peer's key (its identity), or raise :class:`Refused`."""


def text(status: int, message: str) -> Response:
    """A plain-text response (an error's precise message, or a short answer)."""
    return Response(status, (message + "\n").encode("utf-8"))


def json_response(status: int, data: Any) -> Response:
    """A JSON response (integers stay integers: money is cents)."""
    return Response(status, json.dumps(data, separators=(",", ":")).encode(), "application/json")


def event(name: str, data: Any) -> bytes:
    """One server-sent event: ``event: name`` and ``data:`` the JSON of ``data`` (one line)."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class Refused(Exception):
    """A request or a peer refused with ``status`` and the message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class _Counts:
    connections: int = 0
    streams: int = 0
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    peer_connections: dict[str, int] = field(default_factory=dict)
    peer_streams: dict[str, int] = field(default_factory=dict)


def _take(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _give(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


class WebServer:
    """Serve ``handler`` on ``host``:``port`` (0 picks a free port: :attr:`port` after
    :meth:`start`)."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Handler,
        *,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        admit: Admit | None = None,
        max_connections: int = 256,
        max_streams: int = 64,
        max_connections_per_peer: int = 16,
        max_streams_per_peer: int = 8,
        max_body: int = 4096,
        handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.handler = handler
        self.ssl_context = ssl_context
        self.admit = admit
        self.max_connections = max_connections
        self.max_streams = max_streams
        self.max_connections_per_peer = max_connections_per_peer
        self.max_streams_per_peer = max_streams_per_peer
        self.max_body = max_body
        self.handshake_timeout_s = handshake_timeout_s
        self.port = 0
        self._counts = _Counts()
        self._server: asyncio.Server | None = None

    @property
    def streams(self) -> int:
        """Event streams open now."""
        return self._counts.streams

    async def start(self) -> None:
        """Listen (:class:`OSError` when the port cannot be had)."""
        context = self._outer_context()
        self._server = await asyncio.start_server(
            self._accept,
            self.host,
            self.requested_port,
            ssl=context,
            ssl_handshake_timeout=self.handshake_timeout_s if context else None,
            limit=MAX_HEAD_BYTES,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end every connection (event streams included)."""
        if self._server is not None:
            self._server.close()
        for task in list(self._counts.tasks):
            task.cancel()
        if self._counts.tasks:
            await asyncio.wait(self._counts.tasks, timeout=5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts = self._counts
        task = asyncio.current_task()
        if counts.connections >= self.max_connections:
            await _close(writer)
            return
        counts.connections += 1
        if task is not None:
            counts.tasks.add(task)
        peer: str | None = None
        try:
            try:
                peer = self._admit(writer)
            except Refused as refusal:
                await _send(writer, text(refusal.status, str(refusal)))
                return
            await self._serve(reader, writer, peer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, ssl.SSLError):
            pass  # the client left or stalled: nothing to answer
        except asyncio.CancelledError:
            pass  # the server stops
        finally:
            counts.connections -= 1
            if peer is not None:
                _give(counts.peer_connections, peer)
            if task is not None:
                counts.tasks.discard(task)
            await _close(writer)

    def _outer_context(self) -> ssl.SSLContext | None:
        """The context the port listens with: ``ssl_context``, or the first one a callable
        gives, which switches each handshake to the callable's context of the moment."""
        given = self.ssl_context
        if given is None or isinstance(given, ssl.SSLContext):
            return given
        current = given

        def switch(tls: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
            tls.context = current()

        outer = current()
        outer.sni_callback = switch
        return outer

    def _admit(self, writer: asyncio.StreamWriter) -> str | None:
        """The peer's key once ``admit`` takes its certificate and it has a connection left;
        :class:`Refused` otherwise (before any of its request is read)."""
        if self.admit is None:
            return None
        try:
            peer = self.admit(_peer(writer)[0])
        except Refused:
            raise
        except Exception:
            log.exception("judging a client certificate failed")
            raise Refused(500, "internal error (logged)") from None
        held = self._counts.peer_connections.get(peer, 0)
        if held >= self.max_connections_per_peer:
            raise Refused(
                429,
                f"{peer[:100]} has {held} connections open, the most one caller may; close one",
            )
        _take(self._counts.peer_connections, peer)
        return peer

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str | None
    ) -> None:
        try:
            request = await asyncio.wait_for(self._read(reader, writer, peer), READ_TIMEOUT_S)
        except Refused as refusal:
            await _send(writer, text(refusal.status, str(refusal)))
            return
        try:
            answer = await self.handler(request)
        except Exception:
            log.exception("web request %s %s failed", request.method, request.path[:100])
            answer = text(500, "internal error (logged)")
        if isinstance(answer, Response):
            await _send(writer, answer)
            return
        if self._counts.streams >= self.max_streams:
            await answer.events.aclose()
            await _send(
                writer,
                text(503, f"too many event streams open ({self.max_streams}); try again"),
            )
            return
        streams = self._counts.peer_streams
        if peer is not None and streams.get(peer, 0) >= self.max_streams_per_peer:
            await answer.events.aclose()
            message = (
                f"{peer[:100]} has {streams[peer]} event streams open, the most one caller "
                "may; close one"
            )
            await _send(writer, text(429, message))
            return
        self._counts.streams += 1
        if peer is not None:
            _take(streams, peer)
        try:
            await self._stream(writer, answer)
        finally:
            self._counts.streams -= 1
            if peer is not None:
                _give(streams, peer)

    async def _stream(self, writer: asyncio.StreamWriter, stream: EventStream) -> None:
        head = _head(200, "text/event-stream; charset=utf-8", None, ())
        writer.write(head)
        events = stream.events
        try:
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
            async for chunk in events:
                if writer.is_closing():
                    return
                writer.write(chunk)
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
        finally:
            await events.aclose()

    async def _read(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str | None
    ) -> Request:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise Refused(431, f"request head longer than {MAX_HEAD_BYTES} bytes") from None
        except asyncio.IncompleteReadError as error:
            if not error.partial:
                raise ConnectionError("closed before a request") from None
            raise Refused(400, "incomplete request head") from None
        method, target, headers = _parse_head(head)
        if "transfer-encoding" in headers:
            raise Refused(411, "send the body with a Content-Length (no chunked bodies)")
        length_text = headers.get("content-length", "0")
        if not length_text.isdigit() or len(length_text) > 9:
            raise Refused(400, f"Content-Length {length_text[:20]!r} is not a length")
        length = int(length_text)
        if length > self.max_body:
            raise Refused(413, f"request body of {length} bytes; at most {self.max_body}")
        body = await reader.readexactly(length) if length else b""
        path, _, query = target.partition("?")
        der, uris = _peer(writer)
        return Request(
            method,
            unquote(path),
            query,
            headers,
            body,
            der,
            uris,
            "https" if self.ssl_context else "http",
            peer,
        )


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """The method, the target and the headers of a request head; :class:`Refused` (400,
    405, 505) for anything this server does not take."""
    try:
        lines = head.decode("latin-1").split("\r\n")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise Refused(400, "request head is not text") from None
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise Refused(400, "request line must be: METHOD TARGET HTTP/1.1")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise Refused(505, f"{version[:20]!r}: only HTTP/1.1 is served")
    if method not in ("GET", "POST"):
        raise Refused(405, f"method {method[:20]!r} is not served (GET, POST)")
    if not target.startswith("/"):
        raise Refused(400, "request target must be a path")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise Refused(400, f"malformed header line {line[:40]!r}")
        key = name.lower()
        if key == "content-length" and key in headers:
            raise Refused(400, "Content-Length given twice")
        headers.setdefault(key, value.strip())
    return method, target, headers


def _peer(writer: asyncio.StreamWriter) -> tuple[bytes | None, tuple[str, ...]]:
    """The client certificate (DER) and its URI SANs, or (None, ()) without one."""
    tls = writer.get_extra_info("ssl_object")
    if tls is None:
        return None, ()
    der = tls.getpeercert(binary_form=True)
    decoded = tls.getpeercert() or {}
    uris = tuple(str(value) for kind, value in decoded.get("subjectAltName", ()) if kind == "URI")
    return der, uris


def _head(
    status: int, content_type: str, length: int | None, extra: tuple[tuple[str, str], ...]
) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Type: {content_type}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: close")
    lines += [f"{name}: {value}" for name, value in (*SECURITY_HEADERS, *extra)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send(writer: asyncio.StreamWriter, response: Response) -> None:
    writer.write(
        _head(response.status, response.content_type, len(response.body), response.headers)
    )
    writer.write(response.body)
    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.wait_closed(), 2)
