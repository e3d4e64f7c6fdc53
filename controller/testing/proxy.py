"""A loopback TCP proxy that injects network faults between two of our processes.

Put it between the controller and redis-server (the controller's ``--redis`` names the
proxy's port) and, while tables play, make the link slow, cut it or partition it::

    with FaultProxy(redis.port) as proxy:      # listens on 127.0.0.1:proxy.port
        ...
        proxy.delay(0.5)                       # every chunk arrives half a second late
        proxy.reset()                          # every open connection gets a TCP RST
        proxy.partition()                      # nothing flows; connections stay open
        proxy.partition(upstream=False)        # requests arrive and run; replies are held
        proxy.heal()                           # back to normal; held data flows on

It runs an asyncio loop in a daemon thread of the calling process; every control call
returns once the loop has applied it, and :meth:`FaultProxy.stop` closes every connection and
the listening socket and ends the thread (toxiproxy, which does the same in Go, is not
installable here; docs: engineering.md section 6).

A *partition* behaves like a network that drops packets until it heals, not like one that
loses bytes: in a partitioned direction data already read is held and nothing more is
read, and new connections are accepted but not connected upstream. Clients see silence and
hit their own timeouts; when the partition heals, what was held is delivered in order (TCP
would retransmit it), so a request a client gave up on may still reach the server - the
case a retried, idempotent write must survive. Partitioning only the replies, then
resetting, makes requests that ran but whose answers were lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from controller.testing.children import Started, free_port

CHUNK_BYTES = 65536
UPSTREAM = "upstream"
"""Client to server (the controller's commands to Redis)."""
DOWNSTREAM = "downstream"
"""Server to client (Redis's replies)."""

T = TypeVar("T")


@dataclass(eq=False)
class _Link:
    """One proxied connection: the client's side, the server's side, the pump tasks."""

    client: asyncio.StreamWriter
    server: asyncio.StreamWriter | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def abort(self) -> None:
        """Close both sides at once with a TCP RST (SO_LINGER 0), never a FIN."""
        for writer in (self.client, self.server):
            if writer is None:
                continue
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        for task in self.tasks:
            task.cancel()


class FaultProxy(Started):
    """Forward ``127.0.0.1:port`` to ``upstream_host:upstream_port``, with faults on demand.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. ``port`` defaults to
    a free one, chosen now (so it is known before the proxy starts, and kept across a
    restart).
    """

    def __init__(
        self,
        upstream_port: int,
        *,
        upstream_host: str = "127.0.0.1",
        port: int | None = None,
        control_timeout_s: float = 10.0,
    ) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = port or free_port()
        self.control_timeout_s = control_timeout_s
        self.connections_total = 0
        """Connections accepted since the start."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._delay_s = {UPSTREAM: 0.0, DOWNSTREAM: 0.0}
        self._flowing: dict[str, asyncio.Event] = {}

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``, for a proxy in front of Redis."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def open_connections(self) -> int:
        """Connections open now."""
        return self._call(lambda: len(self._links))

    # ------------------------------------------------------------------ life cycle

    def start(self) -> FaultProxy:
        """Listen and forward; returns once the port accepts connections."""
        if self._thread is not None:
            raise RuntimeError("the proxy is already running")
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name=f"fault-proxy-{self.port}", daemon=True
        )
        self._thread.start()
        try:
            self._run(self._listen())
        except BaseException:
            self.stop()
            raise
        return self

    async def _listen(self) -> None:
        self._flowing = {UPSTREAM: asyncio.Event(), DOWNSTREAM: asyncio.Event()}
        for gate in self._flowing.values():
            gate.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    def stop(self) -> None:
        """Close every connection (RST) and the port, and end the thread. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            with contextlib.suppress(Exception):
                self._run(self._close())
                self._run(loop.shutdown_default_executor())
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=self.control_timeout_s)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._abort_all()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    # ------------------------------------------------------------------ faults

    def delay(self, seconds: float, *, upstream: bool = True, downstream: bool = True) -> None:
        """From now on deliver every chunk ``seconds`` after it was read (in order), in the
        directions chosen; 0 removes the delay."""
        if seconds < 0:
            raise ValueError("a delay is >= 0 seconds")

        def apply() -> None:
            for direction, chosen in ((UPSTREAM, upstream), (DOWNSTREAM, downstream)):
                if chosen:
                    self._delay_s[direction] = seconds

        self._call(apply)

    def reset(self) -> int:
        """Close every open connection with a TCP RST on both sides; answer how many.
        New connections are accepted as before."""
        return self._call(self._abort_all)

    def partition(self, *, upstream: bool = True, downstream: bool = True) -> None:
        """Stop forwarding without closing anything (see the module), in the directions
        chosen: with ``upstream=False`` requests still reach the server and run, and only
        the replies are held (and lost, should :meth:`reset` follow)."""

        def apply() -> None:
            for direction, chosen in ((UPSTREAM, upstream), (DOWNSTREAM, downstream)):
                if chosen:
                    self._gate(direction).clear()

        self._call(apply)

    def heal(self) -> None:
        """End every fault: no delay, forwarding again (held data is delivered first)."""

        def apply() -> None:
            for direction in (UPSTREAM, DOWNSTREAM):
                self._delay_s[direction] = 0.0
                self._gate(direction).set()

        self._call(apply)

    # ------------------------------------------------------------------ inside the loop

    def _gate(self, direction: str) -> asyncio.Event:
        """Set while ``direction`` forwards."""
        return self._flowing[direction]

    def _abort_all(self) -> int:
        links = list(self._links)
        for link in links:
            link.abort()
        self._links.clear()
        return len(links)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections_total += 1
        link = _Link(writer)
        self._links.add(link)
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            for direction in (UPSTREAM, DOWNSTREAM):  # nor does a partitioned network connect
                await self._gate(direction).wait()
            if link not in self._links:
                return  # reset while it waited
            try:
                up_reader, link.server = await asyncio.open_connection(*self.upstream)
            except OSError:
                return  # the server is down: the client sees its connection closed
            link.tasks = [
                asyncio.create_task(self._pump(reader, link.server, UPSTREAM)),
                asyncio.create_task(self._pump(up_reader, writer, DOWNSTREAM)),
            ]
            # One direction ending (EOF, an error, a reset) ends the connection.
            await asyncio.wait(link.tasks, return_when=asyncio.FIRST_COMPLETED)
        except (asyncio.CancelledError, OSError):
            pass
        finally:
            for task in link.tasks:
                task.cancel()
            await asyncio.gather(*link.tasks, return_exceptions=True)
            self._links.discard(link)
            self._handlers.discard(handler)
            for side in (link.client, link.server):
                if side is not None:
                    side.close()

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, direction: str
    ) -> None:
        """Copy ``source`` to ``sink`` chunk by chunk, each after the direction's delay and
        only while not partitioned; the reading and the writing run apart so that a delay
        is latency, not a lower rate."""
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def read() -> None:
            while True:
                await self._gate(direction).wait()
                data = await source.read(CHUNK_BYTES)
                if not data:
                    await held.put(None)
                    return
                await held.put((loop.time() + self._delay_s[direction], data))

        reading = asyncio.create_task(read())
        try:
            while True:
                item = await held.get()
                if item is None:
                    return
                due, data = item
                await asyncio.sleep(max(0.0, due - loop.time()))
                await self._gate(direction).wait()
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            return
        finally:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await reading

    # ------------------------------------------------------------------ from the caller

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the proxy's loop and wait for its result."""
        if self._loop is None:
            coroutine.close()
            raise RuntimeError("the proxy is not running")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=self.control_timeout_s)

    def _call(self, function: Callable[[], T]) -> T:
        """Call ``function`` on the proxy's loop and wait for its result."""

        async def call() -> T:
            return function()

        return self._run(call())
