"""A real Redis Cluster for the tests of this folder, and the cross-slot guard.

The cluster (3 primaries, each with a replica: :class:`controller.testing.RedisCluster`) is
started once for the session. ``redis_url`` and ``redis_client`` name it instead of the one
redis-server, so every test of this folder - its own, and the integration scenarios it runs
again (``test_cluster_scenarios.py``) - runs against the cluster unchanged.

The cross-slot guard wraps the packing of every command redis-py sends (one command, or a
pipeline's): it finds each command's keys and records a violation when one command's keys,
or those of one MULTI ... EXEC, are of more than one slot. A Redis Cluster would refuse such
a command (CROSSSLOT); the guard sees it before it is sent, whichever client sent it (the
controller's, a test's), and every test of this folder fails if it saw one. It also counts
the scripts it saw, so a test can show it looked at them.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.cluster import RedisCluster as ClusterClient
from redis.asyncio.connection import AbstractConnection
from redis.crc import key_slot

from controller.store import cluster
from controller.testing import RedisCluster

REQUIRED = os.environ.get("JACKPOT_REQUIRE_REDIS_CLUSTER") == "1"  # set by .ci/run

# Commands whose every argument after the name is a key; and those without keys.
_ALL_KEYS = frozenset({"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH", "WATCH", "SUNION", "SINTER"})
_NO_KEYS = frozenset(
    {
        "ASKING", "AUTH", "CLIENT", "CLUSTER", "COMMAND", "CONFIG", "DBSIZE", "DISCARD",
        "EXEC", "FLUSHALL", "FLUSHDB", "HELLO", "INFO", "KEYS", "MULTI", "PING", "READONLY",
        "READWRITE", "ROLE", "SCAN", "SCRIPT", "SELECT", "UNWATCH", "WAIT", "WAITAOF",
    }
)  # fmt: skip


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def command_keys(args: Sequence[Any]) -> list[str]:
    """The keys of one command (its name first), for the commands this product sends."""
    name = _text(args[0]).upper()
    if name in ("EVAL", "EVALSHA", "EVALSHA_RO", "FCALL", "FCALL_RO"):
        return [_text(key) for key in args[3 : 3 + int(args[2])]]
    if name in _ALL_KEYS:
        return [_text(key) for key in args[1:]]
    if name == "MSET":
        return [_text(key) for key in args[1::2]]
    if name in _NO_KEYS or len(args) < 2:
        return []
    return [_text(args[1])]


class CrossSlotGuard:
    """What the guard saw: every violation, and how many commands and scripts it checked."""

    def __init__(self) -> None:
        self.violations: list[str] = []
        self.seen: Counter[str] = Counter()

    def check(self, commands: Sequence[Sequence[Any]]) -> None:
        transaction: list[str] | None = None
        for args in commands:
            name = _text(args[0]).upper()
            found = command_keys(args)
            self.seen[name] += 1
            if len({key_slot(key.encode()) for key in found}) > 1:
                self.violations.append(f"{name} over slots: {found}")
            if name == "MULTI":
                transaction = []
            elif name == "EXEC" and transaction is not None:
                if len({key_slot(key.encode()) for key in transaction}) > 1:
                    self.violations.append(f"MULTI/EXEC over slots: {transaction}")
                transaction = None
            elif transaction is not None:
                transaction += found


GUARD = CrossSlotGuard()


@pytest.fixture(scope="session", autouse=True)
def cross_slot_guard() -> Iterator[CrossSlotGuard]:
    """Check every command packed during this folder's tests (see the module's docstring)."""
    pack_command = AbstractConnection.pack_command
    pack_commands = AbstractConnection.pack_commands

    def one(self: AbstractConnection, *args: Any) -> Any:
        GUARD.check([args])
        return pack_command(self, *args)

    def many(self: AbstractConnection, commands: Any) -> Any:
        commands = [tuple(command) for command in commands]
        GUARD.check(commands)
        return pack_commands(self, commands)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AbstractConnection, "pack_command", one)
        patch.setattr(AbstractConnection, "pack_commands", many)
        yield GUARD


@pytest.fixture(autouse=True)
def no_cross_slot_command(cross_slot_guard: CrossSlotGuard) -> Iterator[None]:
    before = len(cross_slot_guard.violations)
    yield
    assert cross_slot_guard.violations[before:] == [], "a command named keys of several slots"


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    if shutil.which("redis-cli") is None and not REQUIRED:
        pytest.skip("redis-cli not on PATH (Debian: apt-get install redis-tools)")
    with RedisCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def cluster_client(running: RedisCluster) -> ClusterClient:
    """A test's own client of the cluster (text replies), closed by ``cluster.close``."""
    nodes = [ClusterNode("127.0.0.1", node.port) for node in running.nodes if node.process]
    return cluster.ClusterClient(startup_nodes=nodes, decode_responses=True)


@pytest.fixture
async def redis_url(redis_cluster: RedisCluster) -> AsyncIterator[str]:
    """The cluster, emptied (every primary flushed), as ``--redis-cluster`` names it."""
    client = cluster_client(redis_cluster)
    await client.flushall(target_nodes=ClusterClient.PRIMARIES)
    await cluster.close(client)
    yield f"redis-cluster://{redis_cluster.seeds}"


@pytest.fixture
async def redis_client(redis_url: str, redis_cluster: RedisCluster) -> AsyncIterator[Any]:
    client = cluster_client(redis_cluster)
    yield client
    await cluster.close(client)
