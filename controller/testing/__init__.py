"""Test harness shipped with the product: a real redis-server on a free loopback port, Redis
Sentinel with a replica, a Redis Cluster, the controller as a process, a test certificate authority.

Used by this project's tests, benchmarks and ``make demo``, and by anyone who embeds the
controller in their own tests (the way temporal ships ``WorkflowEnvironment``).
"""

from controller.testing.children import free_port, stop_process
from controller.testing.cluster import RedisCluster
from controller.testing.pki import TestPKI
from controller.testing.processes import ControllerProcess
from controller.testing.proxy import FaultProxy
from controller.testing.redis_server import RedisServer
from controller.testing.sentinel import RedisSentinel, SentinelGroup

__all__ = [
    "ControllerProcess",
    "FaultProxy",
    "RedisCluster",
    "RedisSentinel",
    "RedisServer",
    "SentinelGroup",
    "TestPKI",
    "free_port",
    "stop_process",
]
