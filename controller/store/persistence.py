"""How durable an acknowledged write is on the Redis the store is on.

The server's version and its append-only file also choose the wait that follows every write
(WAIT or WAITAOF, :mod:`controller.store.durability`): read at start, then every refresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import ResponseError

from controller.store import cluster, connection
from controller.store.gateway import ScriptGateway


@dataclass(frozen=True, slots=True)
class Persistence:
    """How durable an acknowledged write is on this Redis."""

    redis_version: str
    aof_enabled: bool | None  # None: the server does not let us read its configuration
    appendfsync: str
    role: str
    connected_replicas: int


class Server:
    """The Redis server's durability settings (``store.server``)."""

    def __init__(self, gateway: ScriptGateway) -> None:
        self._gateway = gateway
        self._read = gateway.read

    async def persistence(self) -> Persistence:
        """Read the durability settings of the server (AOF, fsync policy, replication); on a
        cluster, of every primary, answering the weakest (the oldest version, AOF on only
        if on everywhere, one fsync policy or ``mixed``, the fewest replicas).
        :class:`StoreUnavailable` when Redis does not answer them (unreachable, BUSY, ...)."""
        readings = await self._read(self._readings())
        aof = {reading.aof_enabled for reading in readings}
        weakest = min(readings, key=lambda reading: _version_key(reading.redis_version))
        aof_enabled = False if False in aof else (None if None in aof else True)
        fsyncs = sorted({reading.appendfsync for reading in readings})
        self._gateway.replica_wait.choose(weakest.redis_version, aof_enabled)
        return Persistence(
            redis_version=weakest.redis_version,
            aof_enabled=aof_enabled,
            appendfsync=fsyncs[0] if len(fsyncs) == 1 else "mixed (" + ", ".join(fsyncs) + ")",
            role=min(reading.role for reading in readings),  # "master" < "slave"
            connected_replicas=min(reading.connected_replicas for reading in readings),
        )

    async def _readings(self) -> list[Persistence]:
        """Each server's settings: the one's, or every primary's of a cluster."""
        nodes = self._gateway.cluster
        if nodes is None:
            return [await _server_persistence(self._gateway.client, {})]
        return [
            await _server_persistence(nodes, {"target_nodes": node})
            for node in await cluster.primaries(nodes)
        ]


async def _server_persistence(client: connection.Client, target: dict[str, Any]) -> Persistence:
    """The durability settings of one server (``target``: the node, on a cluster)."""
    info = await client.info("server", **target)
    replication = await client.info("replication", **target)
    try:
        config = await client.config_get("append*", **target)
    except ResponseError:  # managed services often disable CONFIG
        config = {"appendonly": "unknown", "appendfsync": "unknown"}
    return Persistence(
        redis_version=str(info.get("redis_version", "?")),
        aof_enabled={"yes": True, "no": False}.get(str(config.get("appendonly"))),
        appendfsync=str(config.get("appendfsync", "?")),
        role=str(replication.get("role", "?")),
        connected_replicas=int(replication.get("connected_slaves", 0)),
    )


def _version_key(version: str) -> tuple[int, ...]:
    """``"7.0.15"`` -> (7, 0, 15), for ordering; an unreadable one orders first."""
    parts = version.split(".")
    return tuple(int(part) for part in parts) if all(p.isdigit() for p in parts) else ()
