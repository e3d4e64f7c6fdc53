"""A real Redis Cluster as child processes: ``primaries`` primaries, each with ``replicas``
replicas, made by ``redis-cli --cluster create`` (which wants three primaries at least; a
smaller cluster, for the scale benchmark, is made by the same commands redis-cli sends:
CLUSTER ADDSLOTSRANGE, MEET and REPLICATE).

Every node is a ``redis-server`` with ``cluster-enabled yes`` and its AOF on
(:class:`controller.testing.redis_server.RedisServer`) on a free loopback port, in its own
directory (a node rewrites its ``nodes.conf``). :class:`RedisCluster` starts them, joins them
into one cluster, waits until every node reports ``cluster_state:ok`` and knows every other
one, and can fail a primary over while it is up (``CLUSTER FAILOVER`` on one of its
replicas, :meth:`RedisCluster.failover`). Every process it started is stopped when the
cluster stops, also when starting it failed half way.

Times are in milliseconds where Redis takes milliseconds (``node_timeout_ms``), in seconds
elsewhere (``timeout_s``).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import redis

from controller.testing.children import Started, free_port, program
from controller.testing.redis_server import RedisServer

SLOTS = 16384
"""The hash slots of every Redis Cluster."""


class RedisCluster(Started):
    """``primaries`` primaries with ``replicas`` replicas each, under ``directory``.

    ``node_timeout_ms`` is the cluster's ``cluster-node-timeout``: how long a node may be
    unreachable before its replica is promoted. ``appendfsync`` is every node's.
    """

    def __init__(
        self,
        directory: Path,
        *,
        primaries: int = 3,
        replicas: int = 1,
        node_timeout_ms: int = 2000,
        appendfsync: str = "everysec",
    ) -> None:
        if primaries < 1 or replicas < 0:
            raise ValueError("a cluster needs at least one primary and no negative replicas")
        cli = program("redis-cli", "redis-tools")
        self.cli = cli
        self.directory = directory
        self.primary_count = primaries
        self.replica_count = replicas
        self.node_timeout_ms = node_timeout_ms
        self.appendfsync = appendfsync
        self.nodes: list[RedisServer] = []
        self.bus_ports: dict[int, int] = {}  # node port -> its cluster bus port

    @property
    def seeds(self) -> str:
        """Every node as ``127.0.0.1:PORT``, comma separated: ``--redis-cluster``'s value."""
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def client(self, node: RedisServer) -> redis.Redis:
        """A synchronous client of one node (short timeouts; the caller closes it)."""
        return redis.Redis(
            host="127.0.0.1",
            port=node.port,
            socket_timeout=2.0,
            socket_connect_timeout=2.0,
            decode_responses=True,
        )

    def start(self, timeout_s: float = 60.0) -> RedisCluster:
        """Start the nodes, create the cluster, wait until every node says it is ok."""
        deadline = time.monotonic() + timeout_s
        try:
            for number in range(self.primary_count * (1 + self.replica_count)):
                bus_port = free_port()
                node = RedisServer(
                    self.directory / f"node-{number}",
                    appendfsync=self.appendfsync,
                    extra_args=(
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        str(self.node_timeout_ms),
                        "--cluster-port",  # the bus: not port + 10000 (may exceed 65535)
                        str(bus_port),
                    ),
                )
                self.nodes.append(node)
                self.bus_ports[node.port] = bus_port
                node.start()
            if self.primary_count < 3:
                self._create_small(deadline)
            else:
                self._create(deadline)
            self.wait_until(self.healthy, "every node to say cluster_state:ok", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _create(self, deadline: float) -> None:
        """``redis-cli --cluster create`` over every node."""
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        created = subprocess.run(
            [
                *(self.cli, "--cluster", "create", *addresses),
                *("--cluster-replicas", str(self.replica_count), "--cluster-yes"),
            ],
            capture_output=True,
            text=True,
            timeout=max(1.0, deadline - time.monotonic()),
            check=False,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{created.stdout[-2000:]}")

    def _create_small(self, deadline: float) -> None:
        """One or two primaries: give each an equal range of slots, let every node meet the
        first, then make the rest replicas of the primaries in turn."""
        primaries = self.nodes[: self.primary_count]
        ids: dict[int, str] = {}
        for number, node in enumerate(self.nodes):
            with contextlib.closing(self.client(node)) as client:
                ids[node.port] = str(client.execute_command("CLUSTER MYID"))  # type: ignore[no-untyped-call]
                if number < self.primary_count:
                    first = SLOTS * number // self.primary_count
                    last = SLOTS * (number + 1) // self.primary_count - 1
                    client.execute_command("CLUSTER ADDSLOTSRANGE", first, last)  # type: ignore[no-untyped-call]
                if number:
                    first_node = self.nodes[0]
                    bus_port = self.bus_ports[first_node.port]
                    client.execute_command(  # type: ignore[no-untyped-call]
                        "CLUSTER MEET", "127.0.0.1", first_node.port, bus_port
                    )

        def met() -> bool:
            return all(
                int(self.info(node).get("cluster_known_nodes", 0)) == len(self.nodes)
                for node in self.nodes
            )

        self.wait_until(met, "every node to know every other one", deadline)
        for number, node in enumerate(self.nodes[self.primary_count :]):
            primary = primaries[number % self.primary_count]
            with contextlib.closing(self.client(node)) as client:
                client.execute_command("CLUSTER REPLICATE", ids[primary.port])  # type: ignore[no-untyped-call]

    def stop(self) -> None:
        """Stop every node it started."""
        for node in self.nodes:
            node.stop()

    def info(self, node: RedisServer) -> dict[str, str]:
        """``CLUSTER INFO`` of ``node`` as a dict."""
        with contextlib.closing(self.client(node)) as client:
            info = client.execute_command("CLUSTER INFO")  # type: ignore[no-untyped-call]
        return {str(name): str(value) for name, value in info.items()}  # parsed by redis-py

    def healthy(self) -> bool:
        """True when every running node reports ``cluster_state:ok``, knows every node,
        sees every slot assigned and lists every running node in CLUSTER SLOTS, and every
        primary has its replicas attached."""
        running = [node for node in self.nodes if node.process is not None]
        try:
            for node in running:
                info = self.info(node)
                if info.get("cluster_state") != "ok":
                    return False
                if int(info.get("cluster_known_nodes", 0)) < len(self.nodes):
                    return False
                if int(info.get("cluster_slots_ok", 0)) != SLOTS:
                    return False
            primaries = self.primaries()
            if not all(self.attached_replicas(p) >= self.replica_count for p in primaries):
                return False
            # Every running node in every node's map of slots (a replica that has just
            # come back is left out of CLUSTER SLOTS for a while).
            ports = {node.port for node in running}
            for node in running:
                with contextlib.closing(self.client(node)) as client:
                    ranges = client.execute_command("CLUSTER SLOTS")  # type: ignore[no-untyped-call]
                listed = {int(entry[1]) for section in ranges for entry in section[2:]}
                if listed != ports:
                    return False
            return True
        except (redis.RedisError, OSError):
            return False

    def role(self, node: RedisServer) -> str:
        """``master`` or ``slave``, as INFO replication says."""
        with contextlib.closing(self.client(node)) as client:
            return str(client.info("replication")["role"])

    def attached_replicas(self, node: RedisServer) -> int:
        """How many replicas of ``node`` have their link up."""
        with contextlib.closing(self.client(node)) as client:
            info = client.info("replication")
        return sum(
            1
            for name, value in info.items()
            if name.startswith("slave") and isinstance(value, dict)
            if value.get("state") == "online"
        )

    def primaries(self) -> list[RedisServer]:
        """The running nodes that are primaries now, by port."""
        return [
            node for node in self.nodes if node.process is not None and self.role(node) == "master"
        ]

    def primary_of_slot(self, slot: int) -> RedisServer:
        """The node that serves ``slot`` now, as the cluster's first running node says."""
        node = next(node for node in self.nodes if node.process is not None)
        with contextlib.closing(self.client(node)) as client:
            ranges = client.execute_command("CLUSTER SLOTS")  # type: ignore[no-untyped-call]
        for first, last, primary, *_ in ranges:
            if int(first) <= slot <= int(last):
                port = int(primary[1])
                return next(node for node in self.nodes if node.port == port)
        raise LookupError(f"no node serves slot {slot}")

    def replica_of(self, primary: RedisServer) -> RedisServer:
        """One replica of ``primary`` with its link up."""
        with contextlib.closing(self.client(primary)) as client:
            info = client.info("replication")
        for name, value in info.items():
            if name.startswith("slave") and isinstance(value, dict):
                if value.get("state") == "online":
                    port = int(value["port"])
                    return next(node for node in self.nodes if node.port == port)
        raise LookupError(f"the primary on port {primary.port} has no replica online")

    def failover(self, primary: RedisServer, timeout_s: float = 30.0) -> RedisServer:
        """Promote a replica of ``primary`` (``CLUSTER FAILOVER`` on it: the replica first
        catches up with the primary, so nothing the primary holds is lost), wait until the
        cluster is healthy again with it as primary; answer the new primary."""
        deadline = time.monotonic() + timeout_s
        replica = self.replica_of(primary)
        with contextlib.closing(self.client(replica)) as client:
            client.execute_command("CLUSTER FAILOVER")  # type: ignore[no-untyped-call]
        self.wait_until(lambda: self.role(replica) == "master", "the replica's promotion", deadline)
        self.wait_until(self.healthy, "the cluster to be ok again", deadline)
        return replica

    def kill(self, primary: RedisServer, timeout_s: float = 60.0) -> RedisServer:
        """``kill -9`` ``primary``; wait until the cluster has promoted its replica (after
        ``node_timeout_ms``) and every running node says cluster_state:ok again; answer the
        new primary. What the replica had not received is lost with the old primary."""
        deadline = time.monotonic() + timeout_s
        replica = self.replica_of(primary)
        if primary.process is not None:
            primary.process.kill()
            primary.process.wait()
            primary.process = None

        def promoted() -> bool:
            running = [node for node in self.nodes if node.process is not None]
            return self.role(replica) == "master" and all(
                self.info(node).get("cluster_state") == "ok" for node in running
            )

        self.wait_until(promoted, "the replica's promotion", deadline)
        return replica

    def rejoin(self, node: RedisServer, timeout_s: float = 60.0) -> None:
        """Start a killed node again (it remembers the cluster: it comes back as a replica)
        and wait until the cluster is healthy."""
        deadline = time.monotonic() + timeout_s
        node.start()
        self.wait_until(self.healthy, "the cluster to be ok again", deadline)

    @staticmethod
    def wait_until(ready: Callable[[], bool], what: str, deadline: float) -> None:
        """Poll ``ready`` every 0.1 s until it is true, or raise naming ``what``."""
        while True:
            with contextlib.suppress(redis.RedisError, OSError):
                if ready():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Redis Cluster: gave up waiting for {what}")
            time.sleep(0.1)
