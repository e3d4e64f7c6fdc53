"""The table's own meter sign: ``table-agent ... --web-port N`` serves ``/sign``.

The page is the controller's sign page (:mod:`jackpot.web.sign`), fed here by the agent's
WatchMeters stream for its own table (the meters of its link group). The sign says
PROGRESSIVE OFFLINE exactly when the table does: while the stream is broken, or while the
agent is in PROGRESSIVE OFFLINE (``--offline-after``: no answer from any controller), so
the sign and the wagers the table takes always agree. Its winners list is empty: the
controller's sign (``/sign/<link group>``) shows the winners of every table of the link group.

Access: with ``--web-cert`` and ``--web-key`` (a server certificate from the casino CA, e.g.
``jackpotctl certs controller --san <the table's host> --out DIR``) the port speaks HTTPS
and serves only a client certificate from ``--ca`` naming ``jackpot://display/<name>``.
Without them it speaks plain HTTP and must listen on loopback (a sign browser on the table's
own computer). Standard library only: the agent installs with grpcio and protobuf alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import ssl
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from pathlib import Path

from jackpot.tls import ENV_CA, is_loopback
from jackpot.web import sign
from jackpot.web.server import EventStream, Request, Response, WebServer, text
from table_agent.client import ControllerClient
from table_agent.link import Link

log = logging.getLogger("table_agent.sign")

DISPLAY_PREFIX = "jackpot://display/"
RECONNECT_S = 1.0
"""The pause before the stream to the controller is opened again after it broke."""
MAX_STREAMS = 16
"""Signs open at once on one table's agent."""


@dataclass(frozen=True, slots=True)
class SignTLS:
    """The sign port's server certificate and key, and the CA its clients chain to."""

    cert: Path
    key: Path
    client_ca: Path

    def context(self) -> ssl.SSLContext:
        """A server context that requires a client certificate from ``client_ca``."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert, self.key)
            context.load_verify_locations(cafile=self.client_ca)
        except (OSError, ssl.SSLError) as error:
            raise OSError(f"--web-cert/--web-key/--ca cannot be used: {error}") from None
        context.verify_mode = ssl.CERT_REQUIRED
        return context


def refusal(request: Request, tls: bool) -> Response | None:
    """A 403 for a caller that is not a display (with TLS), else None."""
    if not tls:
        return None
    names = [uri for uri in request.peer_uris if uri.startswith("jackpot://")]
    if len(names) != 1 or not names[0].startswith(DISPLAY_PREFIX):
        shown = names[0] if len(names) == 1 else f"{len(names)} jackpot identities"
        return text(403, f"{shown[:80]} may not see the sign; it is for: display")
    return None


class TableSign:
    """The sign of table ``table_id`` on ``host``:``port``, fed by ``client``."""

    def __init__(
        self,
        client: ControllerClient,
        table_id: str,
        link: Link,
        *,
        host: str,
        port: int,
        tls: SignTLS | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._table_id = table_id
        self._link = link
        self._clock = clock
        self._tls = tls is not None
        self.values: dict[str, int] = {}
        self.connected = False
        self._changed = asyncio.Event()
        self._follower: asyncio.Task[None] | None = None
        self.server = WebServer(
            host,
            port,
            self.handle,
            ssl_context=tls.context() if tls else None,
            max_streams=MAX_STREAMS,
            max_body=0,
        )

    async def start(self) -> None:
        """Open the port and the stream of meters (:class:`OSError` for the port)."""
        await self.server.start()
        self._follower = asyncio.create_task(self._follow(), name="sign-meters")

    async def close(self) -> None:
        """Close the port, the open signs and the stream."""
        if self._follower is not None:
            self._follower.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._follower
        await self.server.close()

    async def _follow(self) -> None:
        """Keep the WatchMeters stream open, again after every break."""
        while True:
            try:
                async for meters in self._client.watch_meters(self._table_id):
                    self.values = dict(meters)
                    self.connected = True
                    self._wake()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # keep trying: the sign says OFFLINE meanwhile
                log.debug("table %s: the sign's meter stream broke: %s", self._table_id, error)
            self.connected = False
            self._wake()
            await asyncio.sleep(RECONNECT_S)

    def _wake(self) -> None:
        """Wake every open sign (each waits on the event current when it began to wait)."""
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def fresh(self) -> bool:
        """Whether the values shown are current: the stream is open and the table online."""
        return self.connected and not self._link.check()

    async def handle(self, request: Request) -> Response | EventStream:
        """``/sign`` and ``/sign/events``; 403 for anyone but a display, 404 elsewhere."""
        refused = refusal(request, self._tls)
        if refused is not None:
            return refused
        path = request.path.rstrip("/")
        if request.method != "GET" and path in ("/sign", "/sign/events"):
            return text(405, f"{path} takes GET only, not {request.method}")
        if path == "/sign":
            return Response(200, sign.page(), "text/html; charset=utf-8")
        if path == "/sign/events":
            return EventStream(self._events())
        return text(404, f"no page at {request.path[:100]!r}; the sign is at /sign")

    async def _events(self) -> AsyncGenerator[bytes, None]:
        yield sign.retry()
        while True:
            yield sign.snapshot(
                f"table {self._table_id}",
                sorted(self.values.items()),
                (),
                age_ms=0 if self.fresh else sign.STALE_AFTER_MS + 1,
                now_ms=int(self._clock() * 1000),
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), sign.HEARTBEAT_S)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--web-port``, ``--web-host``, ``--web-cert`` and ``--web-key``."""
    group = parser.add_argument_group("the table's meter sign (/sign)")
    group.add_argument(
        "--web-port", type=int, metavar="PORT", help="serve the meter sign on this port"
    )
    group.add_argument(
        "--web-host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address of --web-port (default 127.0.0.1; another needs --web-cert)",
    )
    group.add_argument(
        "--web-cert",
        type=Path,
        metavar="FILE",
        help="the sign port's server certificate: HTTPS, display certificates from --ca only",
    )
    group.add_argument("--web-key", type=Path, metavar="FILE", help="its private key")


def check_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the sign's options (None: nothing)."""
    if args.web_port is None:
        if args.web_cert or args.web_key:
            return "--web-cert and --web-key are for --web-port"
        return None
    if not 1 <= args.web_port <= 65535:
        return f"--web-port must be 1 to 65535, not {args.web_port}"
    if (args.web_cert is None) != (args.web_key is None):
        return "--web-cert and --web-key go together"
    if args.web_cert is None and not is_loopback(args.web_host):
        return (
            f"--web-host {args.web_host} without --web-cert would show the sign in plain "
            "HTTP to anyone: give --web-cert and --web-key, or listen on loopback"
        )
    if args.web_cert is not None and not (args.ca or os.environ.get(ENV_CA)):
        return "--web-cert needs --ca: the CA of the display certificates it admits"
    return None


def sign_tls(args: argparse.Namespace) -> SignTLS | None:
    """The sign port's TLS files from the options (None: plain HTTP on loopback)."""
    if args.web_cert is None:
        return None
    return SignTLS(args.web_cert, args.web_key, Path(args.ca or os.environ[ENV_CA]))
