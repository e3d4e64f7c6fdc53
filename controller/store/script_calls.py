"""One EVALSHA at a time, with less of redis-py's per-call machinery than its generic path.

A table's step is one script call (design.md § 2), so the store makes two a round: what
redis-py adds to every call (its generic command path, a task per write for the socket
timeout, a pool check-out with a condition, a timeout and a readiness probe, then a
check-in) is a sizeable part of the controller's own CPU per round. :class:`ScriptCalls`
keeps the connections its calls ended cleanly on (at most ``keep``, taken from the client's
pool and given back at :meth:`close`), reuses them without asking the pool again, and writes
each command under one deadline instead of a task.

Every call ends with its connection in step: a call that did not end with a whole reply (an
error on the wire, a timeout, a cancellation) closes its connection and gives it back to the
pool, so no late reply is ever read as another call's; a kept connection the server closed
meanwhile is given back and another taken. The client's retry policy is none: a call is never
retried here (a step is idempotent; the table agent retries).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

MAX_KEEP = 16
"""Connections kept between calls at most: about the calls in flight at once on a busy
controller."""
KEEP_SHARE = 4
"""At most a quarter of the pool's bound is kept (none of a pool of 3 or fewer), so that the
store's other commands, which share the pool, always find connections."""


class ScriptCalls:
    """EVALSHA calls on ``client``'s pool (see the module)."""

    def __init__(self, client: Redis) -> None:
        self._client = client
        pool = getattr(client, "connection_pool", None)  # a cluster client has one per node
        bound = getattr(pool, "max_connections", 0) or 0
        self._keep = min(MAX_KEEP, bound // KEEP_SHARE)
        self._kept: list[Any] = []

    async def evalsha(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """One EVALSHA of ``script``, its reply parsed as ``script(...)`` would; the script is
        loaded again when Redis's script cache lacks it (after a restart or a failover)."""
        connection = await self._take()
        try:
            try:
                await _send(connection, "EVALSHA", script.sha, len(keys), *keys, *args)
                reply = await connection.read_response()
            except NoScriptError:
                script.sha = await self._client.script_load(script.script)
                await _send(connection, "EVALSHA", script.sha, len(keys), *keys, *args)
                reply = await connection.read_response()
        except ResponseError:
            await self._give_back(connection)  # a whole reply was read: in step
            raise
        except BaseException:
            await connection.disconnect()
            await self._client.connection_pool.release(connection)
            raise
        await self._give_back(connection)
        return reply

    async def close(self) -> None:
        """Give every kept connection back to the pool (before the pool closes)."""
        kept, self._kept = self._kept, []
        for connection in kept:
            await self._client.connection_pool.release(connection)

    async def _take(self) -> Any:
        """A kept connection that is still open, else one from the pool."""
        pool = self._client.connection_pool
        while self._kept:
            connection = self._kept.pop()
            reader = connection._reader
            if reader is not None and not reader.at_eof():
                return connection
            await connection.disconnect()  # closed by the server meanwhile
            await pool.release(connection)
        return await pool.get_connection()  # type: ignore[no-untyped-call]

    async def _give_back(self, connection: Any) -> None:
        if (
            connection.is_connected
            and not connection.health_check_interval  # the pool's check-out checks its health
            and len(self._kept) < self._keep
        ):
            self._kept.append(connection)
        else:
            await self._client.connection_pool.release(connection)


async def _send(connection: Any, *command: Any) -> None:
    """Send one command on ``connection`` as redis-py's ``send_command`` does, without the
    task its write timeout starts per call: the write is bounded by the same socket timeout,
    as a deadline on this task. A connection that health checks or is not connected takes
    redis-py's own path."""
    writer = connection._writer
    if writer is None or connection.health_check_interval:
        await connection.send_command(*command)
        return
    packed = connection.pack_command(*command)
    try:
        async with asyncio.timeout(connection.socket_timeout):
            writer.writelines(packed)
            await writer.drain()
    except TimeoutError:
        raise RedisTimeoutError("Timeout writing to socket") from None
    except OSError as error:
        raise RedisConnectionError(f"Error while writing to socket: {error}") from error
