"""The controller's plain HTTP port: Prometheus ``/metrics`` and ``/healthz``.

``/healthz`` answers 200 while the controller serves (Redis answers and some link group's
state is sound) and 503 otherwise: readiness, for load balancers and Kubernetes, which cannot
present the client certificate the gRPC port requires. ``/livez`` answers 200 while the
process is up and not stopping: liveness, which must not restart a controller because Redis
is down or lost its data (a restart cannot cure either, and the running controller is what
tells operators about it).
Neither path takes input or reveals a secret; keep the port on the operations network.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

StartResponse = Callable[..., object]


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """No access log: scrapes and probes every few seconds would drown the real log."""


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

        self._server = make_server(
            host, port, app, server_class=_Server, handler_class=_QuietHandler
        )
        self.port = int(self._server.server_port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="http-metrics", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
