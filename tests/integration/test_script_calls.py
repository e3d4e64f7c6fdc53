"""The store's script calls (controller/store/script_calls.py) against a real redis-server:
a connection a call ended cleanly on is kept and used again without the pool; one that did
not end with a whole reply is closed; a kept one the server closed is replaced; the pool's
other users always find connections."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from controller.store import connection
from controller.store.script_calls import MAX_KEEP, ScriptCalls

ECHO = "return ARGV[1]"
SLOW = """
local function now() local t = redis.call('TIME'); return t[1] * 1000000 + t[2] end
local start = now()
while now() - start < 600000 do end
return 1
"""
FAILS = "return redis.error_reply('NOPE refused')"


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
