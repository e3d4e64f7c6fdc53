"""The state of record in Redis, as one object that holds the store's parts.

:class:`RedisStore` owns the client, the script gateway (:mod:`controller.store.gateway`: every
script, read, replica wait and refusal goes through it) and one object per aggregate, each in
its own module: ``store.catalog`` (link groups, meters), ``store.tables``, ``store.rounds``,
``store.irregularities``, ``store.jackpots``, ``store.journal``, ``store.epochs``,
``store.snapshots`` (export, restore), ``store.reconciliation``, ``store.controls``,
``store.staged_tables``, ``store.corrections``, ``store.integrity`` (the audit's corrupt
records) and ``store.server`` (durability settings). Each write is exactly one script
(validation, money arithmetic, journal entries and the stored answer, all in one atomic
step); a refused script raises the matching :mod:`jackpot.errors` class and has changed
nothing.
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from controller.store import connection
from controller.store.catalog import Catalog
from controller.store.controls import Controls
from controller.store.corrections import Corrections
from controller.store.epochs import Epochs
from controller.store.gateway import ScriptGateway
from controller.store.integrity import Integrity
from controller.store.irregularities import Irregularities
from controller.store.jackpots import Jackpots
from controller.store.journal import Journal
from controller.store.persistence import Server
from controller.store.reconciliation import Reconciliation
from controller.store.rounds import DEFAULT_MAX_ROUND_STEP, DEFAULT_ROUND_RETENTION_SECONDS, Rounds
from controller.store.scripts import Scripts
from controller.store.snapshots import Snapshots
from controller.store.staged_tables import StagedTables
from controller.store.tables import Tables

DEFAULT_MAX_CONNECTIONS = 64
"""Redis connections of one controller; a call waits for a free one (bounded by
``pool_timeout_s`` and by the call's own deadline) rather than opening more."""


class RedisStore:
    """Meters, rounds, jackpots and the journal in Redis: the aggregates over one gateway.

    ``round_retention_seconds`` is how long a round's record (and so its stored answers for
    retries) is kept (:class:`Rounds`); ``max_round_step`` how far above a table's last round
    a new round id may be; ``wait_replicas`` and ``wait_timeout_ms`` the wait after each
    write (:class:`ScriptGateway`); ``scripts`` other builds of the scripts (a benchmark's).
    """

    def __init__(
        self,
        client: connection.Client,
        *,
        round_retention_seconds: int = DEFAULT_ROUND_RETENTION_SECONDS,
        max_round_step: int = DEFAULT_MAX_ROUND_STEP,
        wait_replicas: int = 0,
        wait_timeout_ms: int = 1000,
        scripts: Scripts | None = None,
    ) -> None:
        gateway = ScriptGateway(
            client, wait_replicas=wait_replicas, wait_timeout_ms=wait_timeout_ms, scripts=scripts
        )
        self.gateway = gateway
        self.catalog = Catalog(gateway)
        self.tables = Tables(gateway, self.catalog)
        self.epochs = Epochs(gateway)
        self.rounds = Rounds(
            gateway,
            self.tables,
            round_retention_seconds=round_retention_seconds,
            max_round_step=max_round_step,
        )
        self.irregularities = Irregularities(gateway, self.catalog)
        self.jackpots = Jackpots(gateway, self.catalog)
        self.journal = Journal(gateway)
        self.snapshots = Snapshots(
            gateway, self.catalog, round_retention_seconds=round_retention_seconds
        )
        self.reconciliation = Reconciliation(
            gateway, round_retention_seconds=round_retention_seconds
        )
        self.controls = Controls(gateway, self.catalog, self.tables)
        self.staged_tables = StagedTables(gateway)
        self.corrections = Corrections(gateway, self.catalog, self.jackpots)
        self.integrity = Integrity(
            gateway, self.catalog, self.tables, self.jackpots, self.irregularities
        )
        self.server = Server(gateway)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        password: str | None = None,
        sentinel_password: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        pool_timeout_s: float = 5.0,
        **options: Any,
    ) -> RedisStore:
        """A store on a new client for ``url`` (``redis://host:port/db``, ``rediss://`` for
        TLS, ``sentinel://`` for the primary Redis Sentinel names: :mod:`connection`).
        ``password`` (from a file or the environment) overrides one in the URL. At most
        ``max_connections`` are opened; a call waits up to ``pool_timeout_s`` for one."""
        client = connection.open_client(
            url,
            password=password,
            sentinel_password=sentinel_password,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
        )
        return cls(client, **options)  # the client owns (and closes) the pool

    @property
    def client(self) -> Redis:
        """The Redis client (for health checks and the audit). On a Redis Cluster it is a
        :class:`RedisCluster`, which answers the same commands, each on the shard of its key
        (:attr:`cluster` names it as such)."""
        return self.gateway.client

    @property
    def cluster(self) -> RedisCluster | None:
        """The cluster client, on a Redis Cluster (``--redis-cluster``); else None."""
        return self.gateway.cluster

    @property
    def on_cluster(self) -> bool:
        """True when the store is on a Redis Cluster (``--redis-cluster``)."""
        return self.gateway.cluster is not None

    async def close(self) -> None:
        """Close the connection pool (every node's, on a cluster)."""
        await self.gateway.close()
