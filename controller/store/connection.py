"""A Redis client from a URL: one server (``redis://``, ``rediss://``, ``unix://``), the
primary that Redis Sentinel names (``sentinel://``), or a Redis Cluster
(``redis-cluster://HOST:PORT[,HOST:PORT...]``, given as ``--redis-cluster``:
:mod:`controller.store.cluster`).

    sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[?db=N]

lists the Sentinels (port 26379 when left out; ``[::1]:26379`` for IPv6) and the service name
they monitor the primary under. USER and PASSWORD, as in a ``redis://`` URL, are those of the
Redis servers (better given with ``--redis-password-file``, as a URL is visible in a process
listing); the Sentinels' own password, if they have one, is given apart
(``--sentinel-password-file``). Sentinel connections are plaintext.

Every client has a bounded pool: at most ``max_connections`` connections, a call waits up to
``pool_timeout_s`` for a free one, and every socket operation gives up after
``socket_timeout_s`` (a script call's reply, checked by one sweeping timer, at most a quarter
of it, and at most 1 s, later: :mod:`controller.store.script_calls`). A call is never retried
here (a failed call is UNAVAILABLE to the agent, which sends the same idempotent request
again).

On a ``sentinel://`` URL the pool asks the Sentinels for the primary whenever it opens a
connection. A connection that finds its server demoted to replica (READONLY, or a refused
WAIT) is closed and its call fails, so the retry opens a new one to the primary the
Sentinels name; a connection to a dead primary fails the same way. :func:`follow_primary`,
called by the controller at every refresh (2 s), asks the Sentinels again, so that a primary
replaced while still up (``SENTINEL FAILOVER``, which demotes the old one only about ten
seconds later) is left within one refresh; from then on no connection to the old primary is
handed out again.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import AbstractConnection, parse_url
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import (
    MasterNotFoundError,
    Sentinel,
    SentinelConnectionPool,
    SentinelManagedConnection,
)
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from controller.store import cluster
from jackpot.errors import StoreUnavailable

log = logging.getLogger("controller.store")

SENTINEL_SCHEME = "sentinel"
DEFAULT_SENTINEL_PORT = 26379
SOCKET_TIMEOUT_S = 5.0
"""A Redis server's socket timeout (connect, read, write), in seconds."""
SENTINEL_TIMEOUT_S = 1.0
"""A Sentinel's socket timeout, in seconds: a Sentinel answers at once, and one that does
not should not hold up asking the next."""
SCHEMES = ("redis", "rediss", "unix", SENTINEL_SCHEME, cluster.CLUSTER_SCHEME)
SENTINEL_FORM = "sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[?db=N]"
_REPLICA_REFUSAL = "cannot be used with replica instances"  # WAIT's and WAITAOF's reply
_SERVICE = re.compile(r"[A-Za-z0-9._-]{1,128}")
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}")

Client = Redis | RedisCluster
"""A client of one server (or of the primary Sentinel names), or of a Redis Cluster."""


class RedisURLError(ValueError):
    """A URL that does not name a Redis; the message says what is wrong (never a password)."""


@dataclass(frozen=True, slots=True)
class SentinelURL:
    """A parsed ``sentinel://`` URL: the Sentinels' (host, port), the service name, the
    database number, and the Redis servers' user and password when the URL holds them."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def redacted(url: str) -> str:
    """``url`` with the password (if any) replaced by ``***``, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    user, at, hosts = authority.rpartition("@")
    if not at or ":" not in user:
        return url
    return f"{scheme}{sep}{user.partition(':')[0]}:***@{hosts}{slash}{tail}"


def _fail(url: str, problem: str) -> RedisURLError:
    return RedisURLError(f"Redis URL {redacted(url)!r}: {problem}")


def _sentinel_address(url: str, text: str) -> tuple[str, int]:
    """(host, port) of one ``HOST[:PORT]`` (``[v6]:PORT``) of a Sentinel URL."""
    if not text:
        raise _fail(url, "an empty Sentinel address (two commas, or a comma at an end)")
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not host or (rest and not rest.startswith(":")):
            raise _fail(url, f"Sentinel address {text!r} is not [IPV6]:PORT")
        port_text = rest[1:] if rest else ""
    else:
        if text.count(":") > 1:
            raise _fail(url, f"Sentinel address {text!r}: write an IPv6 address as [ADDRESS]:PORT")
        host, _, port_text = text.partition(":")
        if not _HOST.fullmatch(host):
            raise _fail(url, f"Sentinel address {text!r}: {host!r} is not a host name or address")
    if not port_text and not text.endswith(":"):
        return host, DEFAULT_SENTINEL_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise _fail(url, f"Sentinel address {text!r}: the port must be a number 1 to 65535")
    return host, int(port_text)


def _sentinel_db(url: str, query: str) -> int:
    db = 0
    seen: set[str] = set()
    for name, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if name != "db":
            raise _fail(url, f"unknown option {name!r} (a sentinel:// URL takes only ?db=N)")
        if name in seen:
            raise _fail(url, "db is given twice")
        seen.add(name)
        if not value.isdigit() or len(value) > 6:
            raise _fail(url, f"db must be a database number (0, 1, ...), not {value!r}")
        db = int(value)
    if query and not seen:
        raise _fail(url, f"cannot read the options {query!r} (a sentinel:// URL takes ?db=N)")
    return db


def parse_sentinel_url(url: str) -> SentinelURL:
    """Parse ``sentinel://[[USER]:PASSWORD@]HOST[:PORT][,...]/SERVICE[?db=N]``;
    :class:`RedisURLError` names what is wrong."""
    scheme, sep, rest = url.partition("://")
    if scheme.lower() != SENTINEL_SCHEME or not sep:
        raise _fail(url, f"not a sentinel:// URL ({SENTINEL_FORM})")
    if "#" in rest:
        raise _fail(url, "a fragment (#...) has no meaning here")
    rest, _, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    username: str | None = None
    password: str | None = None
    if at:
        user, colon, secret = userinfo.partition(":")
        if not colon:
            raise _fail(url, "credentials must be written USER:PASSWORD@ or :PASSWORD@")
        username, password = unquote(user) or None, unquote(secret) or None
    if not hosts:
        raise _fail(url, f"no Sentinel address ({SENTINEL_FORM})")
    sentinels = tuple(_sentinel_address(url, text) for text in hosts.split(","))
    if len(set(sentinels)) != len(sentinels):
        raise _fail(url, "a Sentinel is listed twice")
    if not slash or not path:
        raise _fail(url, f"no service name after the Sentinels ({SENTINEL_FORM})")
    service = unquote(path)
    if "/" in service:
        raise _fail(url, f"the path must be just the service name, not {path!r}; give ?db=N")
    if not _SERVICE.fullmatch(service):
        raise _fail(url, f"service name {service!r}: at most 128 letters, digits, dots, _ and -")
    return SentinelURL(sentinels, service, _sentinel_db(url, query), username, password)


def check_url(url: str) -> None:
    """Refuse, with :class:`RedisURLError`, a URL :func:`connect` cannot use; connect to
    nothing. For a command line to say what is wrong before it starts anything."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in SCHEMES:
        raise _fail(
            url,
            "the scheme must be redis://, rediss:// (TLS), unix:// or sentinel:// "
            f"({SENTINEL_FORM}); a Redis Cluster is --redis-cluster {cluster.CLUSTER_FORM}",
        )
    if scheme == SENTINEL_SCHEME:
        parse_sentinel_url(url)
        return
    if scheme == cluster.CLUSTER_SCHEME:
        try:
            cluster.seeds_of(url)
        except cluster.ClusterSeedsError as error:
            raise _fail(url, f"the nodes: {error}") from None
        return
    try:
        options = parse_url(url)
        parts = urlsplit(url)
    except ValueError as error:
        raise _fail(url, str(error)) from None
    if scheme == "unix":
        if not options.get("path"):
            raise _fail(url, "no socket path (unix:///path/to/redis.sock)")
        return
    if not parts.hostname:
        raise _fail(url, f"no host ({scheme}://HOST:PORT/DB)")
    if parts.path.strip("/") and not parts.path.strip("/").isdigit():
        raise _fail(url, f"the path must be the database number (/0, /1, ...), not {parts.path!r}")


class Sentinels(Sentinel):
    """The Sentinels of a ``sentinel://`` URL, each asked once in turn (no retry: the next
    one is asked instead), with a short error saying what each one answered."""

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        """(host, port) of the primary the first Sentinel that knows a healthy one names
        (that Sentinel is asked first next time); :class:`MasterNotFoundError` saying what
        every Sentinel answered otherwise."""
        answers = []
        for number, sentinel in enumerate(self.sentinels):
            options = sentinel.connection_pool.connection_kwargs
            where = f"{options.get('host')}:{options.get('port')}"
            try:
                masters: Any = await sentinel.sentinel_masters()
            except (RedisConnectionError, RedisTimeoutError) as error:
                answers.append(f"{where}: {type(error).__name__}: {error}")
                continue
            state = masters.get(service_name)
            if state and self.check_master_state(state, service_name):
                self.sentinels[0], self.sentinels[number] = sentinel, self.sentinels[0]
                return str(state["ip"]), int(state["port"])
            answers.append(f"{where}: " + ("primary down" if state else "service not monitored"))
        raise MasterNotFoundError(
            f"no Sentinel names a primary for {service_name!r} ({'; '.join(answers)})"
        )


class _LostOnClosedTransport:
    """A connection whose write or read on a transport closed under it (a reset) fails as a
    lost connection (:class:`redis.exceptions.ConnectionError`: unavailable, the table
    retries), under any event loop. uvloop raises :class:`RuntimeError` there ("unable to
    perform operation on <TCPTransport closed=True ...>; the handler is closed"), which
    redis-py passes on as it is; asyncio's loop drops the write and the read fails as a lost
    connection. Any other RuntimeError is raised as it is."""

    async def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        try:
            await super().send_packed_command(*args, **kwargs)  # type: ignore[misc]
        except RuntimeError as error:
            raise await self._lost(error) from error

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)  # type: ignore[misc]
        except RuntimeError as error:
            raise await self._lost(error) from error

    async def _lost(self, error: RuntimeError) -> Exception:
        if not closed_transport(error):
            return error
        await self.disconnect(nowait=True)  # type: ignore[attr-defined]
        return RedisConnectionError(f"Error on the socket to Redis: closed ({error})")


def closed_transport(error: BaseException) -> bool:
    """Whether ``error`` is uvloop's refusal to use a closed transport (a connection reset
    or closed under a call)."""
    return isinstance(error, RuntimeError) and "handler is closed" in str(error)


def lost_on_closed_transport(connection_class: type[AbstractConnection]) -> type[Any]:
    """``connection_class`` whose calls fail as a lost connection on a closed transport
    (:class:`_LostOnClosedTransport`)."""
    if issubclass(connection_class, _LostOnClosedTransport):
        return connection_class
    return type(connection_class.__name__, (_LostOnClosedTransport, connection_class), {})


class PrimaryConnection(_LostOnClosedTransport, SentinelManagedConnection):
    """A connection to the primary the Sentinels name. Besides READONLY (redis-py's own
    rule), a refused WAIT or WAITAOF ("cannot be used with replica instances": a replay
    writes nothing, so only the wait after it finds out) shows that the server has become a
    replica: the connection is closed and the call fails as a connection error, so that it
    is retried on a new connection, to the primary the Sentinels name now."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        """Read a reply; a replica's refusal to wait closes the connection."""
        try:
            return await super().read_response(*args, **kwargs)
        except ResponseError as error:
            if _REPLICA_REFUSAL not in str(error):
                raise
            await self.disconnect()
            raise RedisConnectionError("the primary has become a replica") from error


class PrimaryPool(SentinelConnectionPool, BlockingConnectionPool):
    """Connections to the primary the Sentinels name, at most ``max_connections``, a caller
    waiting up to ``timeout`` seconds for a free one (as :class:`BlockingConnectionPool`).

    redis-py's asyncio pool keeps a connection that was in use when the pool learned of a new
    primary, and hands it out again later, still connected to the old one; this pool closes
    such a connection when it comes back, so that once the new primary is known every
    connection handed out is to it. It closes the Sentinels' connections with its own.
    """

    async def get_master_address(self) -> Any:
        """Ask the Sentinels for the primary; log when it changed."""
        previous = self.master_address
        address = await super().get_master_address()  # type: ignore[no-untyped-call]
        if previous is not None and address != previous:
            log.warning(
                "Redis Sentinel names a new primary for %s: %s:%s (was %s:%s)",
                self.service_name,
                *address,
                *previous,
            )
        return address

    async def release(self, connection: AbstractConnection) -> None:
        """Take a connection back; close it first if it is to a former primary."""
        address = (getattr(connection, "host", None), getattr(connection, "port", None))
        if self.master_address is not None and address != tuple(self.master_address):
            await connection.disconnect()
        await super().release(connection)

    async def aclose(self) -> None:
        """Close every connection, the Sentinels' too."""
        try:
            await super().aclose()
        finally:
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.aclose()


def connect(
    url: str,
    *,
    password: str | None = None,
    sentinel_password: str | None = None,
    max_connections: int,
    pool_timeout_s: float,
    socket_timeout_s: float = SOCKET_TIMEOUT_S,
) -> Redis:
    """A client (responses decoded as text) for ``url``, see the module's docstring; a
    Redis Cluster's is :func:`open_client`'s.

    ``password`` (from a file or the environment) overrides one in the URL;
    ``sentinel_password`` is the Sentinels' own, for a ``sentinel://`` URL only.
    The client owns its pool: closing the client closes every connection.
    """
    check_url(url)
    if cluster.is_cluster_url(url):
        raise _fail(url, "a Redis Cluster's client is opened by open_client")
    if not url.lower().startswith(SENTINEL_SCHEME + "://"):
        if sentinel_password:
            raise _fail(url, "a Sentinel password is for a sentinel:// URL only")
        pool = BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            socket_timeout=socket_timeout_s,
            max_connections=max_connections,
            timeout=pool_timeout_s,
            **({"password": password} if password else {}),
        )
        pool.connection_class = lost_on_closed_transport(pool.connection_class)
        return Redis.from_pool(pool)
    parsed = parse_sentinel_url(url)
    sentinel_options: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT_S,
        "socket_connect_timeout": SENTINEL_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),  # a Sentinel that does not answer: ask the next
    }
    if sentinel_password:
        sentinel_options["password"] = sentinel_password
    manager = Sentinels(  # type: ignore[no-untyped-call]
        parsed.sentinels, sentinel_kwargs=sentinel_options
    )
    client: Redis = manager.master_for(
        parsed.service,
        connection_pool_class=PrimaryPool,
        connection_class=PrimaryConnection,
        max_connections=max_connections,
        timeout=pool_timeout_s,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
        decode_responses=True,
        db=parsed.db,
        username=parsed.username,
        password=password or parsed.password,
    )
    return client


def open_client(
    url: str,
    *,
    password: str | None = None,
    sentinel_password: str | None = None,
    max_connections: int,
    pool_timeout_s: float,
    socket_timeout_s: float = SOCKET_TIMEOUT_S,
) -> Client:
    """A client for any URL :func:`check_url` accepts: :func:`connect`'s, or for a
    ``redis-cluster://`` URL a cluster client (:func:`controller.store.cluster.connect_cluster`;
    ``max_connections`` per node)."""
    if not cluster.is_cluster_url(url):
        return connect(
            url,
            password=password,
            sentinel_password=sentinel_password,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
            socket_timeout_s=socket_timeout_s,
        )
    check_url(url)
    if sentinel_password:
        raise _fail(url, "a Sentinel password is for a sentinel:// URL only")
    return cluster.connect_cluster(
        url, password=password, max_connections=max_connections, socket_timeout_s=socket_timeout_s
    )


async def follow_primary(client: Client) -> None:
    """For a client of a ``sentinel://`` URL: ask the Sentinels for the primary now; if it
    changed, idle connections to the old one are closed at once and busy ones when they come
    back. Nothing for any other client (a cluster client follows MOVED answers itself).
    :class:`StoreUnavailable` if no Sentinel names one."""
    if isinstance(client, RedisCluster):
        return
    pool = client.connection_pool
    if not isinstance(pool, SentinelConnectionPool):
        return
    try:
        await pool.get_master_address()  # type: ignore[no-untyped-call]
    except (RedisConnectionError, RedisTimeoutError) as error:
        log.warning("no Redis Sentinel names a primary for %s: %s", pool.service_name, error)
        raise StoreUnavailable(
            "Redis is unreachable; retry the same request (it is idempotent)"
        ) from error
