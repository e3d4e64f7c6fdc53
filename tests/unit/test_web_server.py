"""The shared web server's bounds and refusals, and the sign's events, in-process on loopback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from jackpot.web import server as web
from jackpot.web import sign
from jackpot.web.server import EventStream, Request, Response, WebServer

_PRODUCED = [0]  # events the stream handler has produced


async def _echo(request: Request) -> Response | EventStream:
    if request.path == "/events":

        async def events() -> AsyncGenerator[bytes, None]:
            _PRODUCED[0] = 0
            for number in range(10_000):
                _PRODUCED[0] += 1
                yield web.event("tick", {"n": number, "pad": "x" * 10_000})

        return EventStream(events())
    if request.path == "/boom":
        raise RuntimeError("a bug")
    return web.json_response(
        200, {"method": request.method, "path": request.path, "body": request.body.decode()}
    )


async def _exchange(port: int, raw: bytes) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


@pytest.fixture
async def server() -> AsyncIterator[WebServer]:
    running = WebServer("127.0.0.1", 0, _echo, max_streams=1, max_body=64, max_connections=8)
    await running.start()
    yield running
    await running.close()


async def test_a_request_and_its_answer(server: WebServer) -> None:
    raw = b"POST /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
    status, body = await _exchange(server.port, raw)
    assert status == 200
    assert json.loads(body) == {"method": "POST", "path": "/a b", "body": "hello"}


@pytest.mark.parametrize(
    ("raw", "status", "says"),
    [
        (b"GET / HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n", 431, b"longer than"),
        (b"POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 413, b"at most 64"),
        (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, b"not a length"),
        (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", 400, b"twice"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, b"Content-Length"),
        (b"DELETE / HTTP/1.1\r\n\r\n", 405, b"not served"),
        (b"GET / HTTP/2.0\r\n\r\n", 505, b"only HTTP/1.1"),
        (b"GET http://elsewhere/ HTTP/1.1\r\n\r\n", 400, b"must be a path"),
        (b"GET /\r\n\r\n", 400, b"request line"),
        (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400, b"malformed header"),
    ],
)
async def test_refusals(server: WebServer, raw: bytes, status: int, says: bytes) -> None:
    answered, body = await _exchange(server.port, raw)
    assert (answered, says in body) == (status, True), body


async def test_a_failing_handler_is_a_500_and_the_server_goes_on(server: WebServer) -> None:
    assert (await _exchange(server.port, b"GET /boom HTTP/1.1\r\n\r\n"))[0] == 500
    assert (await _exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n"))[0] == 200


async def test_streams_are_bounded_and_a_slow_client_holds_no_queue(server: WebServer) -> None:
    loop = asyncio.get_running_loop()
    _reader, writer = await asyncio.open_connection("127.0.0.1", server.port, limit=1024)
    writer.write(b"GET /events HTTP/1.1\r\n\r\n")
    await writer.drain()
    deadline = loop.time() + 30
    while server.streams != 1 and loop.time() < deadline:
        await asyncio.sleep(0.01)
    assert server.streams == 1
    status, body = await _exchange(server.port, b"GET /events HTTP/1.1\r\n\r\n")
    assert status == 503 and b"too many event streams" in body
    # The client reads nothing more: the stream stops producing once the socket buffers are
    # full (it waits for the client to take each event), far short of the 10,000 events of
    # 10 kB the handler would produce.
    writer.transport.pause_reading()  # type: ignore[attr-defined]
    produced = -1
    while loop.time() < deadline:
        await asyncio.sleep(0.5)
        if _PRODUCED[0] == produced:
            break
        produced = _PRODUCED[0]
    assert _PRODUCED[0] == produced < 2_000, produced
    writer.close()
    while server.streams and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert server.streams == 0, "the slot is free once the client left"


def test_the_sign_event_is_integer_cents_and_says_stale() -> None:
    winner = sign.Winner("cs-2", 2, "royal_flush", 1_000_255, 1_700_000_000_000)
    raw = sign.snapshot(
        "floor", [("cs-main", 1_000_000)], [winner] * 9, age_ms=3001, now_ms=1_700_000_000_500
    )
    name, data = raw.decode().splitlines()[:2]
    assert name == "event: meters"
    decoded = json.loads(data.removeprefix("data: "))
    assert decoded["meters"] == [{"meter_id": "cs-main", "cents": 1_000_000}]
    assert len(decoded["winners"]) == sign.MAX_WINNERS
    assert decoded["winners"][0]["amount_cents"] == 1_000_255
    assert decoded["stale"] is True
    fresh = sign.snapshot("floor", [], [], age_ms=200, now_ms=0)
    assert json.loads(fresh.decode().splitlines()[1][6:])["stale"] is False


def test_the_sign_page_is_self_contained() -> None:
    page = sign.page().decode()
    assert "PROGRESSIVE OFFLINE" in page
    assert f'data-offline-after-ms="{sign.OFFLINE_AFTER_MS}"' in page
    for external in ("http://", "https://", "//fonts", "@import", "<link"):
        assert external not in page, external


async def test_admit_judges_each_connection_before_its_request_and_bounds_each_peer() -> None:
    def admit(der: bytes | None) -> str:
        assert der is None  # plain HTTP: no certificate
        if judged.pop(0) == "refuse":
            raise web.Refused(401, "not you")
        return "jackpot://display/d"

    judged = ["refuse"] + ["take"] * 10
    running = WebServer(
        "127.0.0.1", 0, _echo, admit=admit, max_connections_per_peer=2, max_streams_per_peer=1
    )
    await running.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        answer = await asyncio.wait_for(reader.read(), 5)  # nothing sent: answered at once
        writer.close()
        assert answer.startswith(b"HTTP/1.1 401") and answer.endswith(b"not you\n")
        held = [await asyncio.open_connection("127.0.0.1", running.port) for _ in range(2)]
        await asyncio.sleep(0.1)
        status, body = await _exchange(running.port, b"GET / HTTP/1.1\r\n\r\n")
        assert status == 429 and b"has 2 connections open" in body
        for _, held_writer in held:
            held_writer.close()
        await asyncio.sleep(0.1)
        reader, writer = await asyncio.open_connection("127.0.0.1", running.port)
        writer.write(b"GET /events HTTP/1.1\r\n\r\n")
        assert (await asyncio.wait_for(reader.readline(), 5)).startswith(b"HTTP/1.1 200")
        status, body = await _exchange(running.port, b"GET /events HTTP/1.1\r\n\r\n")
        assert status == 429 and b"has 1 event streams open" in body
        writer.close()
    finally:
        await running.close()
