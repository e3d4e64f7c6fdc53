"""The fault proxy, in front of a real redis-server: forwards, delays, resets, partitions."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from controller.testing import FaultProxy, RedisServer, free_port

PING = b"PING\r\n"
PONG = b"+PONG\r\n"
SILENCE_S = 0.3
"""How long a client listens to conclude that nothing arrives (while nothing can)."""


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[FaultProxy]:
    with FaultProxy(redis_server.port) as running:
        yield running


def connect(proxy: FaultProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    sock.settimeout(5)
    return sock


def ping(sock: socket.socket) -> bytes:
    sock.sendall(PING)
    return sock.recv(64)


def test_it_forwards_both_ways_on_every_connection(proxy: FaultProxy) -> None:
    with connect(proxy) as first, connect(proxy) as second:
        assert ping(first) == PONG
        assert ping(second) == PONG
        assert ping(first) == PONG
    assert proxy.connections_total == 2


def test_a_delay_holds_every_chunk_in_each_direction_then_delivers_it(proxy: FaultProxy) -> None:
    proxy.delay(0.4, downstream=False)
    with connect(proxy) as sock:
        started = time.monotonic()
        sock.sendall(PING)
        sock.settimeout(SILENCE_S)  # shorter than the delay: nothing can be there yet
        with pytest.raises(TimeoutError):
            sock.recv(64)
        sock.settimeout(5)
        assert sock.recv(64) == PONG
        assert time.monotonic() - started >= 0.4  # a lower bound only: never faster
        proxy.delay(0)
        assert ping(sock) == PONG


def test_a_reset_sends_every_open_connection_an_rst_and_new_ones_still_work(
    proxy: FaultProxy,
) -> None:
    with connect(proxy) as first, connect(proxy) as second:
        assert ping(first) == PONG and ping(second) == PONG
        assert proxy.reset() == 2
        for sock in (first, second):
            with pytest.raises(ConnectionResetError):  # an RST, not an orderly close
                ping(sock)
                ping(sock)  # the first send may still be buffered before the RST arrives
    assert proxy.open_connections == 0
    with connect(proxy) as again:
        assert ping(again) == PONG


def test_a_partition_is_silence_without_a_close_and_healing_delivers_what_was_held(
    proxy: FaultProxy,
) -> None:
    with connect(proxy) as before:
        assert ping(before) == PONG
        proxy.partition()
        before.sendall(PING)
        before.settimeout(SILENCE_S)
        with pytest.raises(TimeoutError):  # no answer, and no close (b"" would be a close)
            before.recv(64)
        during = connect(proxy)  # accepted, but connected nowhere while partitioned
        with during:
            during.sendall(PING)
            during.settimeout(SILENCE_S)
            with pytest.raises(TimeoutError):
                during.recv(64)
            proxy.heal()
            before.settimeout(5)
            during.settimeout(5)
            assert before.recv(64) == PONG  # held, then delivered in order
            assert during.recv(64) == PONG
            assert ping(before) == PONG


def test_a_partition_of_the_replies_lets_requests_run_and_a_reset_loses_their_answers(
    proxy: FaultProxy, redis_server: RedisServer
) -> None:
    key = f"proxy-test-{free_port()}"
    with connect(proxy) as sock:
        assert ping(sock) == PONG  # connected through
        proxy.partition(upstream=False)
        sock.sendall(f"INCR {key}\r\n".encode())
        sock.settimeout(SILENCE_S)
        with pytest.raises(TimeoutError):
            sock.recv(64)
        assert proxy.reset() == 1
        with pytest.raises(ConnectionResetError):
            sock.recv(64)  # the answer is lost with the connection
    proxy.heal()
    with socket.create_connection(("127.0.0.1", redis_server.port), timeout=5) as direct:
        direct.sendall(f"GET {key}\r\nDEL {key}\r\n".encode())
        assert direct.recv(64).startswith(b"$1\r\n1\r\n")  # but the request ran


def test_stop_closes_every_connection_and_the_port(redis_server: RedisServer) -> None:
    proxy = FaultProxy(redis_server.port).start()
    sock = connect(proxy)
    assert ping(sock) == PONG
    proxy.stop()
    with sock, pytest.raises(ConnectionResetError):
        ping(sock)
        ping(sock)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=5).close()
    proxy.stop()  # idempotent


def test_a_proxy_to_a_server_that_is_down_closes_its_clients() -> None:
    with FaultProxy(free_port()) as proxy, connect(proxy) as sock:
        assert sock.recv(64) == b""  # the proxy could not connect upstream and closed
