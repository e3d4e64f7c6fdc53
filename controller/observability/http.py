"""The controller's plain HTTP port: Prometheus ``/metrics`` and ``/healthz``.

``/healthz`` answers 200 while the controller serves (Redis answers and some link group's
state is sound) and 503 otherwise: readiness, for load balancers and Kubernetes, which cannot
present the client certificate the gRPC port requires. ``/livez`` answers 200 while the
process is up and not stopping: liveness, which must not restart a controller because Redis
is down or lost its data (a restart cannot cure either, and the running controller is what
tells operators about it).
Neither path takes input or reveals a secret; keep the port on the operations network.

The server is bounded, since anyone who reaches the port may connect: at most
:data:`MAX_CONNECTIONS` connections at once (one thread each), :data:`MAX_PER_ADDRESS` of them
from one address; one more is closed at once. A connection must send its request within
:data:`HANDLER_TIMEOUT_S` (each read and write has that long), so an idle or stalled one
gives its thread and descriptor back.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

StartResponse = Callable[..., object]

MAX_CONNECTIONS = 32
"""Connections served at once (Prometheus scrapes and probes need a few)."""
MAX_PER_ADDRESS = 8
"""Connections served at once from one client address."""
HANDLER_TIMEOUT_S = 5.0
"""The time a connection has for each read and write before it is closed."""


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self._count = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread of its own if it has a slot; else close it."""
        address = str(client_address[0]) if client_address else "?"
        with self._lock:
            mine = self._open.get(address, 0)
            if self._count >= MAX_CONNECTIONS or mine >= MAX_PER_ADDRESS:
                full = True
            else:
                full = False
                self._open[address] = mine + 1
                self._count += 1
        if full:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(address)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(str(client_address[0]) if client_address else "?")

    def _release(self, address: str) -> None:
        with self._lock:
            self._count -= 1
            left = self._open.get(address, 0) - 1
            if left > 0:
                self._open[address] = left
            else:
                self._open.pop(address, None)

    @property
    def connections(self) -> int:
        """Connections served now."""
        return self._count


class _QuietHandler(WSGIRequestHandler):
    timeout = HANDLER_TIMEOUT_S  # each read and write of the connection's socket

    def log_message(self, format: str, *args: object) -> None:
        """No access log: scrapes and probes every few seconds would drown the real log."""

    def handle(self) -> None:
        try:
            super().handle()
        except (TimeoutError, ConnectionError):
            self.close_connection = True  # stalled or gone: the thread is given back


class HttpEndpoint:
    """``/metrics`` from ``registry``, ``/healthz`` from ``serving()`` and ``/livez`` from
    ``alive()``, in a thread."""

    def __init__(
        self,
        host: str,
        port: int,
        registry: CollectorRegistry,
        serving: Callable[[], bool],
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        metrics = make_wsgi_app(registry)
        checks = {
            "/healthz": (serving, b"SERVING\n", b"NOT_SERVING\n"),
            "/livez": (alive, b"ALIVE\n", b"STOPPING\n"),
        }

        def app(environ: dict[str, object], start_response: StartResponse) -> Iterable[bytes]:
            check = checks.get(str(environ.get("PATH_INFO")))
            if check is not None:
                ok = check[0]()
                status = "200 OK" if ok else "503 Service Unavailable"
                start_response(status, [("Content-Type", "text/plain; charset=utf-8")])
                return [check[1] if ok else check[2]]
            return metrics(environ, start_response)  # type: ignore[no-any-return]

        self._server: _Server = make_server(
            host, port, app, server_class=_Server, handler_class=_QuietHandler
        )
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="http-metrics", daemon=True
        )
        self._thread.start()

    @property
    def connections(self) -> int:
        """Connections served now."""
        return self._server.connections

    def close(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
