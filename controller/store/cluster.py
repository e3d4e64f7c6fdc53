"""Redis Cluster: the seed nodes, the client, and each script sent to the shard of its keys.

    --redis-cluster HOST:PORT[,HOST:PORT...]

lists some nodes of the cluster (any of them, primaries or replicas: the client reads the
whole map of slots from the first that answers, and again whenever the cluster answers that
a slot has moved). Internally it is the URL ``redis-cluster://HOST:PORT[,HOST:PORT...]``, so
that everything that passes a ``--redis`` URL along passes a cluster along unchanged.

Every link group's keys carry its hash tag (:mod:`controller.store.keys`), so each link group
is one slot, on one shard; the four global records are one key each. A script names only
keys of one link group: :func:`run_script` refuses, before sending anything, a call whose keys
are of more than one slot (:class:`CrossSlot`), sends it on one connection of the primary
that serves that slot, and sends the wait of ``--wait-replicas`` (WAIT or WAITAOF) right
after it on that same connection - WAIT only counts the writes of its own connection on its
own server, which redis-py's cluster pipeline does not guarantee (it sends a command without
keys to any node). A MOVED or ASK answer (a slot moved: a failover, a resharding; the script
did not run) is followed to the node named, a bounded number of times; a connection that
fails makes the client read the map of slots again before its next call, and the call fails
(UNAVAILABLE to the agent, which sends the same idempotent request again).

:func:`check_link_group_slots` is the start-up check that every key a script is given for a
link group hashes to the link group's one slot.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Sequence
from typing import Any

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.crc import key_slot
from redis.exceptions import AskError, MovedError, NoScriptError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from controller.store import keys
from controller.store.durability import ReplicaWait

CLUSTER_SCHEME = "redis-cluster"
CLUSTER_FORM = "HOST:PORT[,HOST:PORT...]"
REDIRECTS = 5
"""How many MOVED or ASK answers one script call follows before it fails (UNAVAILABLE)."""
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}")


class ClusterSeedsError(ValueError):
    """A ``--redis-cluster`` value that does not list nodes; the message says what is wrong
    (the caller names the option)."""


class CrossSlot(RuntimeError):
    """A call whose keys hash to more than one slot: a bug, never sent to Redis."""


def parse_seeds(text: str) -> tuple[tuple[str, int], ...]:
    """(host, port) of each node of ``HOST:PORT[,HOST:PORT...]`` (``[V6]:PORT`` for IPv6);
    :class:`ClusterSeedsError` names what is wrong."""
    seeds: list[tuple[str, int]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ClusterSeedsError(
                f"{text!r}: an empty node address (two commas, or a comma at an end); write "
                + CLUSTER_FORM
            )
        if item.startswith("["):
            host, bracket, rest = item[1:].partition("]")
            port_text = rest[1:] if bracket and rest.startswith(":") else ""
            if not bracket or not host:
                raise ClusterSeedsError(f"{item!r} is not [IPV6]:PORT")
        else:
            host, _, port_text = item.rpartition(":")
            if not _HOST.fullmatch(host):
                raise ClusterSeedsError(
                    f"{item!r} is not HOST:PORT (write an IPv6 address as [ADDRESS]:PORT)"
                )
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ClusterSeedsError(f"{item!r}: the port must be a number 1 to 65535")
        if (host, int(port_text)) in seeds:
            raise ClusterSeedsError(f"{item!r} is listed twice")
        seeds.append((host, int(port_text)))
    return tuple(seeds)


class ClusterClient(RedisCluster):
    """redis-py's cluster client, but a failover does not close connections other calls are
    using. redis-py answers CLUSTERDOWN (a shard without a primary) and repeated MOVED by
    ``aclose()``, which closes every connection of every node at once; a call writing on one
    of them then fails inside redis-py (``'NoneType' object has no attribute 'writelines'``),
    not as a connection error. Here ``aclose()`` makes the client read the map of slots again
    and marks every connection to be opened anew: an idle one when it is next handed out, a
    busy one when its call is over (as redis-py's own refresh of the map does); :func:`close`
    closes everything."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opened: set[Connection] = set()
        """Every connection this client has opened and that was still open when the last one
        was opened, kept until :func:`close`, which closes them all. A failover can leave one
        open on a node redis-py no longer names: a call that took the node from the map
        before the map was read again opens a connection on it after it left, and hands it
        back still open. Nothing else would close it but the garbage collector, at a random
        later moment. Bounded by the nodes the cluster ever had times ``max_connections``."""
        # redis-py calls the client's on_connect only with read_from_replicas: wire it here,
        # for the nodes made so far (the seeds) and those the map of slots will make.
        self.connection_kwargs["redis_connect_func"] = self.on_connect
        for node in self.nodes_manager.startup_nodes.values():
            node.connection_kwargs["redis_connect_func"] = self.on_connect

    async def on_connect(self, connection: Connection) -> None:
        """Remember every connection opened (redis-py calls this on each connect), forgetting
        those closed since."""
        self.opened = {kept for kept in self.opened if kept.is_connected}
        self.opened.add(connection)
        await super().on_connect(connection)

    async def aclose(self) -> None:
        """Read the map of slots before the next call; open every connection anew."""
        self._initialize = True
        for node in list(self.nodes_manager.nodes_cache.values()):
            for connection in list(node._connections):
                connection.mark_for_reconnect()  # type: ignore[no-untyped-call]


def cluster_url(seeds: str) -> str:
    """The URL of ``--redis-cluster SEEDS`` (checked: :class:`ClusterSeedsError`)."""
    parse_seeds(seeds)
    return f"{CLUSTER_SCHEME}://{seeds}"


def is_cluster_url(url: str) -> bool:
    """True for a ``redis-cluster://`` URL."""
    return url.lower().startswith(CLUSTER_SCHEME + "://")


def seeds_of(url: str) -> tuple[tuple[str, int], ...]:
    """The nodes of a ``redis-cluster://`` URL (:class:`ClusterSeedsError`)."""
    if not is_cluster_url(url):
        raise ClusterSeedsError(f"not a {CLUSTER_SCHEME}:// URL: {url!r}")
    return parse_seeds(url.partition("://")[2])


def connect_cluster(
    url: str,
    *,
    password: str | None,
    max_connections: int,
    socket_timeout_s: float,
) -> RedisCluster:
    """A cluster client (responses decoded as text) for a ``redis-cluster://`` URL.

    At most ``max_connections`` connections per node; a call that finds them all busy fails
    at once (UNAVAILABLE: the caller sends it again). A call is retried once after a
    connection failed, on the map of slots read again (a failover), as redis-py does;
    every write is idempotent, so a retry never applies anything twice.
    """
    nodes = [ClusterNode(host, port) for host, port in seeds_of(url)]
    return ClusterClient(
        startup_nodes=nodes,
        decode_responses=True,
        password=password,
        max_connections=max_connections,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=socket_timeout_s,
        retry=Retry(NoBackoff(), 1),
        require_full_coverage=True,
    )


def one_slot(keys_: Sequence[str]) -> int:
    """The slot of every key of ``keys_`` (:class:`CrossSlot` if they are not one)."""
    slots = {key_slot(key.encode()) for key in keys_}
    if len(slots) != 1:
        raise CrossSlot(f"keys of {len(slots)} slots in one call: {sorted(keys_)}")
    return slots.pop()


@functools.lru_cache(maxsize=65536)
def check_link_group_slots(link_group_id: str) -> int:
    """Check that every key the scripts are given for ``link_group_id`` (each record of
    :class:`keys.LinkGroupKeys`, a meter's, a table's and a round's) hashes to the slot of
    its hash tag, and that no global record does; answer that slot (:class:`CrossSlot`)."""
    group = keys.LinkGroupKeys(link_group_id)
    names = [
        name
        for name, value in vars(keys.LinkGroupKeys).items()
        if isinstance(value, property) and name != "tag"
    ]
    group_keys = [getattr(group, name) for name in names]
    group_keys += [group.meter("m"), group.mystery("m"), group.table("t"), group.round("t", 1)]
    slot = one_slot(group_keys)
    if slot != key_slot(group.tag.encode()):
        raise CrossSlot(f"the keys of link group {link_group_id} are not in its tag's slot")
    for record in (keys.LINK_GROUPS, keys.TABLE_INDEX, keys.METER_INDEX, keys.INSTALLATION):
        if key_slot(record.encode()) == slot and record.startswith(group.tag):
            raise CrossSlot(f"global record {record} carries link group {link_group_id}'s tag")
    return slot


async def run_script(
    client: RedisCluster,
    script: AsyncScript,
    keys_: Sequence[str],
    args: Sequence[Any],
    wait: ReplicaWait | None,
) -> tuple[Any, Any]:
    """EVALSHA ``script`` on the primary serving the slot of ``keys_``, then ``wait`` (if
    any) on the same connection; answer (the script's reply, the wait's reply or None).

    A reply that is an error is raised (:class:`ResponseError`) - the wait's is answered as
    the exception instead, for the caller to judge. The script is loaded on that node when
    the node lacks it (a new primary after a failover)."""
    slot = one_slot(keys_)
    await client.initialize()  # reads the map of slots only when it must
    asking: str | None = None
    for _ in range(REDIRECTS):
        if asking is not None:
            node = client.get_node(node_name=asking)
            if node is None:
                raise ResponseError(f"ASK names an unknown node {asking}")
        else:
            node = client.nodes_manager.get_node_from_slot(slot)
        commands: list[tuple[Any, ...]] = [("ASKING",)] if asking else []
        commands.append(("EVALSHA", script.sha, len(keys_), *keys_, *args))
        if wait is not None:
            commands.append(wait.args())
        replies = await _send(client, node, commands)
        reply = replies[1 if asking else 0]
        acked = replies[-1] if wait is not None else None
        asking = None
        if isinstance(reply, NoScriptError):
            script.sha = await _send_one(client, node, ("SCRIPT", "LOAD", script.script))
            continue
        if isinstance(reply, MovedError):
            await client.nodes_manager.move_slot(reply)
            continue
        if isinstance(reply, AskError):
            asking = f"{reply.host}:{reply.port}"
            continue
        if isinstance(reply, Exception):
            raise reply
        return reply, acked
    raise ResponseError(f"MOVED: slot {slot} kept moving; retry the same request")


async def _send_one(client: RedisCluster, node: ClusterNode, command: tuple[Any, ...]) -> Any:
    (reply,) = await _send(client, node, [command])
    if isinstance(reply, Exception):
        raise reply
    return reply


async def _send(
    client: RedisCluster, node: ClusterNode, commands: Sequence[tuple[Any, ...]]
) -> list[Any]:
    """Send ``commands`` in one write on one connection of ``node`` and read every reply
    (an error reply as its exception). A connection whose replies were not all read (an
    error on the wire, a timeout, a cancellation) is closed, never handed out again with a
    late reply on it; after a connection error or a timeout the client reads the map of
    slots again before its next call."""
    connection = node.acquire_connection()
    try:
        await node.disconnect_if_needed(connection)  # one marked to be opened anew
        try:
            await connection.send_packed_command(connection.pack_commands(commands))
            replies: list[Any] = []
            for _ in commands:
                try:
                    replies.append(await connection.read_response())
                except ResponseError as error:
                    replies.append(error)
        except AttributeError as error:  # closed under the call by redis-py (a refresh)
            raise RedisConnectionError(
                f"the connection was closed during the call: {error}"
            ) from error
        return replies
    except BaseException as error:
        await connection.disconnect()
        if isinstance(error, RedisConnectionError | RedisTimeoutError):  # as redis-py does
            node.update_active_connections_for_reconnect()
            client.nodes_manager.move_node_to_end_of_cached_nodes(node.name)
            client._initialize = True
        raise
    finally:
        node.release(connection)
        if client.nodes_manager.nodes_cache.get(node.name) is not node:  # it left the map
            await node.disconnect_free_connections()


async def scan(node: ClusterNode, pattern: str, count: int = 1000) -> list[str]:
    """Every key of ``node`` matching ``pattern`` (SCAN to its end, ``count`` at a time)."""
    found: list[str] = []
    cursor = 0
    while True:
        cursor, batch = await node.execute_command("SCAN", cursor, "MATCH", pattern, "COUNT", count)
        found += batch
        if not cursor:
            return found


async def close(client: RedisCluster) -> None:
    """Close every connection of ``client`` (redis-py's ``aclose`` closes none while the
    client is due to read the map of slots again; :class:`ClusterClient`'s never closes
    busy ones). redis-py closes the connections of a node that left the map of slots in a
    task of its own: those tasks are awaited first, so that none is left to a closed loop."""
    await client.aclose()  # marks it closed, for redis-py's own check when it is collected
    manager = client.nodes_manager
    nodes = [*manager.nodes_cache.values(), *manager.startup_nodes.values()]
    tasks = [*manager._background_tasks, *(t for n in nodes for t in n._background_tasks)]
    await asyncio.gather(*tasks, return_exceptions=True)
    await manager.aclose()
    await manager.aclose("startup_nodes")
    if isinstance(client, ClusterClient):
        await asyncio.gather(
            *(connection.disconnect() for connection in list(client.opened)),
            return_exceptions=True,
        )


async def primaries(client: RedisCluster) -> list[ClusterNode]:
    """The primaries of the cluster, as the client's map of slots names them (read now)."""
    await client.initialize()
    return sorted(client.get_primaries(), key=lambda node: node.name)
