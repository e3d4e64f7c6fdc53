"""One EVALSHA at a time, with less of redis-py's per-call machinery than its generic path.

A table's step is one script call (design.md § 2), so the store makes two a round: what
redis-py adds to every call (its generic command path, a task per write for the socket
timeout, a pool check-out with a condition, a timeout and a readiness probe, then a
check-in) is a sizeable part of the controller's own CPU per round. :class:`ScriptCalls`
keeps the connections its calls ended cleanly on (at most ``keep``, taken from the client's
pool and given back at :meth:`close`), reuses them without asking the pool again, and makes
each call one round trip under one deadline: the command packed here, written, and its reply
read straight from the connection's hiredis reader (redis-py's own reader, so the connection
stays in step for redis-py's calls), instead of redis-py's write task and its layered read.
A push frame (RESP3: a server's maintenance notice) met before the reply goes to the parser's
own handler, as redis-py does, and the reply is read after it. A connection that health
checks takes redis-py's own send and read; a pool without hiredis, redis-py's public path
(below).

Every call ends with its connection in step: a call that did not end with a whole reply (an
error on the wire, a timeout, a cancellation) closes its connection and gives it back to the
pool, so no late reply is ever read as another call's; a kept connection the server closed
meanwhile (a FIN, a reset, a transport closing) is given back and another taken, and a write
on a transport closed under the call (uvloop raises :class:`RuntimeError` there, asyncio's
loop drops the write) is a lost connection, as any socket error is. The client's retry
policy is none: a call is never retried here (a step is idempotent; the table agent retries).

The direct path reads redis-py's private parts (a connection's ``_reader``, ``_writer`` and
``_parser``, the hiredis parser's ``_reader`` and push type, ``NOT_ENOUGH_DATA``), which change
between releases. :func:`missing` looks for each of them, and their shapes, once per
connection class (on a connection made and never connected, its parser set up and fed a
reply); when one is missing or not as expected, every call takes redis-py's public path
(``evalsha`` on the client, the script loaded again on NOSCRIPT, the same errors raised),
and the path taken is logged once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from typing import Any

import redis
from redis.asyncio import Redis
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from controller.store.connection import closed_transport
from jackpot.deadlines import DeadlineWatch

try:  # private to redis-py: absent from some releases (then the public path, see the module)
    from redis._parsers import hiredis as _hiredis_parsers
except ImportError:  # pragma: no cover - every release this project allows has it
    _hiredis_parsers = None  # type: ignore[assignment]

log = logging.getLogger("controller.store")

_ABSENT = object()
NOT_ENOUGH_DATA: Any = getattr(_hiredis_parsers, "NOT_ENOUGH_DATA", _ABSENT)
"""What redis-py's hiredis reader answers while a reply is not whole."""
_AsyncHiredisParser: Any = getattr(_hiredis_parsers, "_AsyncHiredisParser", None)
"""redis-py's parser of asyncio connections with hiredis (None: not in this release)."""

NO_POOL = "a cluster client (no pool of its own: its calls go through controller.store.cluster)"
"""Why a cluster client's calls never take the direct path (nor come here)."""
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
        self.missing = NO_POOL if pool is None else _missing_once(pool)
        """Why the direct path is not taken (what redis-py lacks), or None when it is."""
        self.direct = self.missing is None
        """True when calls take the direct path; else redis-py's public path."""
        bound = getattr(pool, "max_connections", 0) or 0
        self._keep = min(MAX_KEEP, bound // KEEP_SHARE) if self.direct else 0
        self._kept: list[Any] = []

    async def evalsha(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """One EVALSHA of ``script``, its reply parsed as ``script(...)`` would; the script is
        loaded again when Redis's script cache lacks it (after a restart or a failover)."""
        if not self.direct:
            return await self._public(script, keys, args)
        connection = await self._take()
        try:
            try:
                reply = await _call(connection, "EVALSHA", script.sha, len(keys), *keys, *args)
            except NoScriptError:
                script.sha = await self._client.script_load(script.script)
                reply = await _call(connection, "EVALSHA", script.sha, len(keys), *keys, *args)
        except ResponseError:
            await self._give_back(connection)  # a whole reply was read: in step
            raise
        except BaseException:
            await connection.disconnect()
            await self._client.connection_pool.release(connection)
            raise
        await self._give_back(connection)
        return reply

    async def _public(self, script: AsyncScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """The call through redis-py's public API (what ``script(...)`` does, on this
        client): its errors are the direct path's, and a connection that did not end with
        a whole reply is closed by redis-py itself."""
        client = self._client
        try:
            return await client.evalsha(script.sha, len(keys), *keys, *args)
        except NoScriptError:
            script.sha = await client.script_load(script.script)
            return await client.evalsha(script.sha, len(keys), *keys, *args)

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
            if _open(connection):
                return connection
            await connection.disconnect()  # closed or reset meanwhile
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


async def _call(connection: Any, *command: Any) -> Any:
    """Send ``command`` on ``connection`` and read its one reply, under the connection's
    socket timeout for both; an error reply is raised (:class:`ResponseError`, the connection
    in step), a timeout or a lost connection raises redis-py's errors (the caller closes it).

    There is no ``drain()``: the connection carries one command at a time and its reply is
    awaited at once, so the write buffer never holds more than this command."""
    parser = connection._parser
    writer = connection._writer
    if (
        writer is None
        or connection.health_check_interval
        or type(parser) is not _AsyncHiredisParser
        or parser._reader is None
    ):
        await _send(connection, *command)
        return await connection.read_response()
    packed = _pack(connection.encoder, command)
    watch = _deadline(connection.socket_timeout)
    task = watch.current()
    cancelling = task.cancelling()
    watch.watch(task)
    try:
        writer.write(packed)
        reply = await _read_reply(parser, connection._reader)
    except asyncio.CancelledError:
        if watch.expired(task) and task.uncancel() <= cancelling:
            raise RedisTimeoutError("Timeout reading from Redis (a script call)") from None
        raise
    except OSError as error:
        raise RedisConnectionError(f"Error on the socket to Redis: {error}") from error
    except RuntimeError as error:
        if not closed_transport(error) and not writer.transport.is_closing():
            raise
        raise RedisConnectionError(f"Error on the socket to Redis: closed ({error})") from error
    else:
        if watch.expired(task):  # the deadline passed as the reply came: it goes on
            task.uncancel()
    finally:
        watch.done(task)
    if isinstance(reply, (ResponseError, RedisConnectionError)):
        raise reply
    return reply


async def _read_reply(parser: Any, stream: asyncio.StreamReader) -> Any:
    """The next reply read from ``stream`` by the hiredis ``parser``; a push frame met before
    it goes to the parser's own handler, as redis-py does."""
    reader, push = parser._reader, parser._hiredis_PushNotificationType
    while True:
        reply = reader.gets()
        while reply is NOT_ENOUGH_DATA:
            data = await stream.read(READ_BYTES)
            if not data:
                raise RedisConnectionError("Connection closed by server.")
            reader.feed(data)
            reply = reader.gets()
        if push is None or not isinstance(reply, push):
            return reply
        await parser.handle_push_response(reply)


def _deadline(timeout_s: float | None) -> DeadlineWatch:
    """The watch of the script calls under the socket timeout ``timeout_s`` (none: a day)."""
    limit_s = timeout_s if timeout_s is not None else NO_TIMEOUT_S
    watch = _WATCHES.get(limit_s)
    if watch is None:
        watch = _WATCHES[limit_s] = DeadlineWatch(limit_s)
    return watch


_WATCHES: dict[float, DeadlineWatch] = {}
"""One :class:`~jackpot.deadlines.DeadlineWatch` per socket timeout in use (one, in practice):
a script call's deadline is a dictionary entry that one timer sweeps, not a timer of its own
(``asyncio.timeout`` per call cost about 2% of the controller's CPU per round). A call over its
deadline ends within a quarter of it (at most 1 s) more."""
NO_TIMEOUT_S = 86_400.0
"""A script call's deadline on a connection without a socket timeout."""
READ_BYTES = 65_536
"""Bytes read from the socket at most at once (redis-py's own default read size)."""


def _pack(encoder: Any, command: Sequence[Any]) -> bytes:
    """``command`` as one RESP array of bulk strings (what redis-py's ``pack_command`` writes):
    text in the connection's encoding, integers in decimal, anything else through redis-py's
    encoder (which refuses what Redis cannot take, such as a bool or None)."""
    encoding, errors = encoder.encoding, encoder.encoding_errors
    parts = [b"*%d\r\n" % len(command)]
    for arg in command:
        if type(arg) is str:
            value = arg.encode(encoding, errors)
        elif type(arg) is int:
            value = b"%d" % arg
        elif type(arg) is bytes:
            value = arg
        else:
            value = encoder.encode(arg)
        parts.append(b"$%d\r\n%b\r\n" % (len(value), value))
    return b"".join(parts)


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
    except RuntimeError as error:
        if not closed_transport(error) and not writer.transport.is_closing():
            raise
        raise RedisConnectionError(f"Error on the socket to Redis: closed ({error})") from error


def _open(connection: Any) -> bool:
    """Whether a kept connection can carry a call: neither end of file (a FIN) nor an error
    (a reset: the stream holds the error, not an end of file) nor a transport closing."""
    reader, writer = connection._reader, connection._writer
    return (
        reader is not None
        and writer is not None
        and not reader.at_eof()
        and reader.exception() is None
        and not writer.transport.is_closing()
    )


_CHECKED: dict[tuple[Any, ...], str | None] = {}
"""Per connection class (its name and bases) and parser class: what :func:`missing` found
(looked for once)."""


def _missing_once(pool: Any) -> str | None:
    """:func:`missing` for ``pool``'s connections, looked for (and logged) once per class."""
    kwargs = getattr(pool, "connection_kwargs", {})
    connection_class = getattr(pool, "connection_class", None)
    # By what makes the class: a class made per client (connection.lost_on_closed_transport)
    # is the same class each time.
    made_of = getattr(connection_class, "__bases__", ())
    key = (getattr(connection_class, "__qualname__", None), made_of, kwargs.get("parser_class"))
    if key in _CHECKED:
        return _CHECKED[key]
    found = _CHECKED[key] = missing(pool)
    version = getattr(redis, "__version__", "?")
    if found is None:
        log.info("script calls: the direct path (redis-py %s, hiredis)", version)
    else:
        log.warning("script calls: redis-py's public path (redis-py %s: %s)", version, found)
    return found


def missing(pool: Any) -> str | None:
    """What the direct path needs that ``pool``'s connections lack, or None when they have
    all of it: every attribute :func:`_call`, :func:`_send` and :func:`_open` read, and the
    hiredis reader answering ``NOT_ENOUGH_DATA`` for half a reply and the reply when whole.
    Looked for on a connection made from ``pool``'s class and arguments, never connected."""
    if _AsyncHiredisParser is None or NOT_ENOUGH_DATA is _ABSENT:
        return "redis._parsers.hiredis has no _AsyncHiredisParser or NOT_ENOUGH_DATA"
    lacking = _pool_missing(pool)
    if lacking is not None:
        return lacking
    try:
        connection = pool.connection_class(**pool.connection_kwargs)
    except Exception as error:
        return f"no connection could be made to look at ({error!r})"
    for name in _CONNECTION_ATTRIBUTES:
        if not hasattr(connection, name):
            return f"its connections have no {name}"
    for name in _CONNECTION_METHODS:
        if not callable(getattr(connection, name, None)):
            return f"its connections have no {name}()"
    encoder = connection.encoder
    if not hasattr(encoder, "encoding") or not hasattr(encoder, "encoding_errors"):
        return "its connections' encoder has no encoding or encoding_errors"
    parser = connection._parser
    if type(parser) is not _AsyncHiredisParser:
        return f"its connections' parser is {type(parser).__qualname__} (hiredis is not used)"
    return _parser_missing(parser, connection)


_CONNECTION_ATTRIBUTES = (
    "_reader",
    "_writer",
    "_parser",
    "encoder",
    "socket_timeout",
    "health_check_interval",
    "is_connected",
)
_CONNECTION_METHODS = ("pack_command", "send_command", "read_response", "disconnect")


def _pool_missing(pool: Any) -> str | None:
    """What the direct path needs of ``pool`` itself that it lacks: a connection given
    without arguments, and taken back."""
    get_connection = getattr(pool, "get_connection", None)
    if get_connection is None or not callable(getattr(pool, "release", None)):
        return "its pool has no get_connection or release"
    try:
        inspect.signature(get_connection).bind()
    except TypeError:
        return "its pool's get_connection needs arguments"
    except ValueError:  # no signature to read: taken as callable without arguments
        pass
    return None


def _parser_missing(parser: Any, connection: Any) -> str | None:
    """What :func:`_call` needs of the hiredis ``parser`` that it lacks, set up as on a
    connection (on ``connection``, never connected) and fed one reply in two halves."""
    if not callable(getattr(parser, "handle_push_response", None)):
        return "its hiredis parser has no handle_push_response()"
    try:
        parser.on_connect(connection)
        reader = parser._reader
        if not hasattr(parser, "_hiredis_PushNotificationType"):
            return "its hiredis parser has no _hiredis_PushNotificationType"
        if reader is None or reader.gets() is not NOT_ENOUGH_DATA:
            return "its hiredis reader does not answer NOT_ENOUGH_DATA for no reply"
        reader.feed(b"+O")
        if reader.gets() is not NOT_ENOUGH_DATA:
            return "its hiredis reader does not answer NOT_ENOUGH_DATA for half a reply"
        reader.feed(b"K\r\n")
        if reader.gets() not in ("OK", b"OK"):
            return "its hiredis reader does not answer a whole reply"
    except Exception as error:
        return f"its hiredis parser could not be set up ({error!r})"
    finally:
        parser.on_disconnect()
    return None
