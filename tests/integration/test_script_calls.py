"""The store's script calls (controller/store/script_calls.py) against a real redis-server:
a connection a call ended cleanly on is kept and used again without the pool; one that did
not end with a whole reply is closed; a kept one the server closed is replaced; the pool's
other users always find connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis._parsers import _AsyncRESP3Parser
from redis._parsers.hiredis import _AsyncHiredisParser
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.connection import Connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from controller.store import connection
from controller.store.script_calls import (
    MAX_KEEP,
    ScriptCalls,
    _call,
    _pack,
    _parser_missing,
    missing,
)

ECHO = "return ARGV[1]"
SLOW = """
local function now() local t = redis.call('TIME'); return t[1] * 1000000 + t[2] end
local start = now()
while now() - start < 600000 do end
return 1
"""
FAILS = "return redis.error_reply('NOPE refused')"
MIXED = """
return {ARGV[1], tonumber(ARGV[2]), {KEYS[1], false, 'x'}, redis.status_reply('OK'), #ARGV[3]}
"""


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    redis = connection.connect(redis_url, max_connections=8, pool_timeout_s=5.0)
    yield redis
    await redis.aclose()


def _in_use(client: Redis) -> int:
    return len(client.connection_pool._in_use_connections)


async def test_a_clean_call_keeps_its_connection_for_the_next(client: Redis) -> None:
    calls = ScriptCalls(client)
    echo = client.register_script(ECHO)
    assert await calls.evalsha(echo, [], ["a"]) == "a"
    first = client.connection_pool._in_use_connections
    assert len(first) == 1  # kept: still checked out of the pool
    kept = next(iter(first))
    assert type(kept._parser) is _AsyncHiredisParser  # the one-round-trip path, not redis-py's
    assert await calls.evalsha(echo, [], ["b"]) == "b"
    assert client.connection_pool._in_use_connections == {kept}
    await calls.close()
    assert _in_use(client) == 0


async def test_a_refused_call_keeps_its_connection_in_step(client: Redis) -> None:
    calls = ScriptCalls(client)
    with pytest.raises(ResponseError, match="NOPE refused"):
        await calls.evalsha(client.register_script(FAILS), [], [])
    assert await calls.evalsha(client.register_script(ECHO), [], ["next"]) == "next"
    assert _in_use(client) == 1
    await calls.close()


async def test_a_cancelled_call_closes_its_connection(client: Redis) -> None:
    """The late reply of a cancelled call is never read as another call's."""
    calls = ScriptCalls(client)
    slow = asyncio.create_task(calls.evalsha(client.register_script(SLOW), [], []))
    await asyncio.sleep(0.3)
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert _in_use(client) == 0  # closed and given back, not kept
    assert await calls.evalsha(client.register_script(ECHO), [], ["after"]) == "after"
    await calls.close()


async def test_a_kept_connection_the_server_closed_is_replaced(
    client: Redis, redis_client: Redis
) -> None:
    calls = ScriptCalls(client)
    echo = client.register_script(ECHO)
    await calls.evalsha(echo, [], ["a"])
    await redis_client.client_kill_filter(_type="normal", skipme=True)
    kept = next(iter(client.connection_pool._in_use_connections))
    deadline = asyncio.get_running_loop().time() + 10
    reader = kept._reader
    assert reader is not None
    while not reader.at_eof():  # the kill reaches the kept connection
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert await calls.evalsha(echo, [], ["b"]) == "b"
    await calls.close()


async def test_a_script_missing_from_the_cache_is_loaded_again(
    client: Redis, redis_client: Redis
) -> None:
    calls = ScriptCalls(client)
    echo = client.register_script(ECHO)
    assert await calls.evalsha(echo, [], ["a"]) == "a"
    await redis_client.script_flush()
    assert await calls.evalsha(echo, [], ["b"]) == "b"
    await calls.close()


async def test_at_most_a_quarter_of_the_pool_is_kept(redis_url: str) -> None:
    for bound, most in ((3, 0), (8, 2), (64, MAX_KEEP)):
        client = connection.connect(redis_url, max_connections=bound, pool_timeout_s=5.0)
        calls = ScriptCalls(client)
        echo = client.register_script(ECHO)
        await asyncio.gather(*(calls.evalsha(echo, [], [str(n)]) for n in range(bound)))
        assert _in_use(client) <= most, bound
        # the pool's other users find connections while scripts keep theirs
        assert all(await asyncio.gather(*(client.ping() for _ in range(bound - most))))
        await calls.close()
        await client.aclose()


async def test_replies_are_what_redis_py_answers(client: Redis) -> None:
    """The one-round-trip path answers what redis-py's own script call answers: text,
    integers, nested arrays, nil, status, and non-ASCII text both ways."""
    calls = ScriptCalls(client)
    mixed = client.register_script(MIXED)
    for args in (["é ✓", "42", ""], ["", "-7", "x" * 100_000], ["a b", "0", "é"]):
        assert await calls.evalsha(mixed, ["k{1}"], args) == await mixed(["k{1}"], args)
    await calls.close()


async def test_commands_are_packed_as_redis_py_packs_them(client: Redis) -> None:
    conn = client.connection_pool.make_connection()  # type: ignore[no-untyped-call]
    for command in (
        ("EVALSHA", "ab" * 20, 2, "k1", "k{é}", 0, -12, 10**30, b"\x00\r\n", 1.5, ""),
        ("PING",),
    ):
        assert _pack(conn.encoder, command) == b"".join(conn.pack_command(*command))
    with pytest.raises(DataError):
        _pack(conn.encoder, ("EVALSHA", True))


async def test_a_call_over_its_deadline_closes_its_connection(redis_url: str) -> None:
    client = connection.connect(redis_url, max_connections=8, pool_timeout_s=5.0)
    client.connection_pool.connection_kwargs["socket_timeout"] = 0.2
    calls = ScriptCalls(client)
    with pytest.raises(RedisTimeoutError):
        await calls.evalsha(client.register_script(SLOW), [], [])
    assert _in_use(client) == 0  # closed and given back: its late reply is never read
    deadline = asyncio.get_running_loop().time() + 10
    while True:  # Redis answers again once the slow script is over
        try:
            assert await calls.evalsha(client.register_script(ECHO), [], ["after"]) == "after"
            break
        except RedisTimeoutError:
            assert asyncio.get_running_loop().time() < deadline
    await calls.close()
    await client.aclose()


async def test_a_connection_lost_in_a_call_is_a_connection_error(
    client: Redis, redis_client: Redis
) -> None:
    """The server closes the connection while a reply is awaited (a command that waits
    without holding Redis up: a script would keep the kill waiting until it ends)."""
    conn = await client.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    waiting = asyncio.create_task(_call(conn, "BLPOP", "never-pushed", 0))
    deadline = asyncio.get_running_loop().time() + 10
    while not any(c["cmd"] == "blpop" for c in await redis_client.client_list(_type="normal")):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.02)
    await redis_client.client_kill_filter(_type="normal", skipme=True)
    with pytest.raises(RedisConnectionError, match="closed by server"):
        await waiting
    await conn.disconnect()
    await client.connection_pool.release(conn)


async def test_a_push_frame_before_the_reply_goes_to_redis_py_and_the_reply_is_read(
    client: Redis, redis_client: Redis
) -> None:
    """RESP3 (redis-py's default here): a push frame that arrives before a call's reply (here
    a client-tracking invalidation; on a managed Redis, a maintenance notice) is not taken
    for the reply."""
    conn = await client.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    assert str(conn.protocol) == "3"
    await conn.send_command("CLIENT", "TRACKING", "on")
    assert await conn.read_response() in ("OK", b"OK")
    await conn.send_command("GET", "tracked")
    await conn.read_response()
    await redis_client.set("tracked", "changed")  # Redis pushes an invalidation to conn
    deadline = asyncio.get_running_loop().time() + 10
    while not conn._reader._buffer:  # the push has reached conn, ahead of any reply
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)
    assert await _call(conn, "EVAL", "return ARGV[1]", 0, "the reply") == "the reply"
    assert not conn._reader._buffer
    await conn.disconnect()
    await client.connection_pool.release(conn)


class _NoReader(Connection):
    """A connection class without ``_reader`` until it connects (as a redis-py that named
    its stream otherwise would have none): redis-py's own calls work on it, the direct path
    would not."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        del self._reader

    @property
    def is_connected(self) -> bool:
        return getattr(self, "_reader", None) is not None and self._writer is not None


async def test_a_connection_class_without_what_the_direct_path_reads_takes_the_public_path(
    redis_url: str, redis_client: Redis
) -> None:
    pool = BlockingConnectionPool.from_url(
        redis_url, connection_class=_NoReader, decode_responses=True, max_connections=8
    )
    client = Redis.from_pool(pool)
    assert missing(pool) == "its connections have no _reader"
    calls = ScriptCalls(client)
    assert not calls.direct and calls.missing == "its connections have no _reader"
    echo = client.register_script(ECHO)
    assert await calls.evalsha(echo, [], ["a"]) == "a"
    assert _in_use(client) == 0  # given back at once: nothing is kept on the public path
    with pytest.raises(ResponseError, match="NOPE refused"):  # the same errors as the direct path
        await calls.evalsha(client.register_script(FAILS), [], [])
    await redis_client.script_flush()
    assert await calls.evalsha(echo, [], ["b"]) == "b"  # loaded again on NOSCRIPT
    mixed = client.register_script(MIXED)
    assert await calls.evalsha(mixed, ["k{1}"], ["é", "3", "x"]) == await mixed(
        ["k{1}"], ["é", "3", "x"]
    )
    await calls.close()
    await client.aclose()


def test_the_direct_path_is_chosen_only_with_everything_it_reads() -> None:
    """What the direct path reads is looked for once, on a connection never connected."""
    pool = BlockingConnectionPool(max_connections=8)  # redis-py's own classes: all there
    assert missing(pool) is None
    assert missing(BlockingConnectionPool(connection_class=_NoReader)) == (
        "its connections have no _reader"
    )
    without_hiredis = BlockingConnectionPool(parser_class=_AsyncRESP3Parser)
    assert "hiredis is not used" in (missing(without_hiredis) or "")

    class OldPool(BlockingConnectionPool):  # as redis-py 5.x's: a command name wanted
        async def get_connection(  # type: ignore[override]
            self, command_name: str, *keys: Any, **options: Any
        ) -> Any:
            return await super().get_connection()  # type: ignore[no-untyped-call]

    assert missing(OldPool()) == "its pool's get_connection needs arguments"

    class NoPush(_AsyncHiredisParser):  # as before redis-py 6.2: no push type
        def on_connect(self, connection: Any) -> None:
            super().on_connect(connection)  # type: ignore[no-untyped-call]
            del self._hiredis_PushNotificationType

    connection = Connection()
    assert _parser_missing(NoPush(socket_read_size=65536), connection) == (
        "its hiredis parser has no _hiredis_PushNotificationType"
    )
    assert _parser_missing(_AsyncHiredisParser(socket_read_size=65536), connection) is None
