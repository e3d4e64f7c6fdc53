"""Test harness shipped with the product: a real redis-server on a free loopback port.

Used by this project's tests, benchmarks and ``make demo``, and by anyone who embeds the
controller in their own tests (the way temporal ships ``WorkflowEnvironment``).
"""

from controller.testing.children import free_port, stop_process
from controller.testing.pki import TestPKI
from controller.testing.processes import ControllerProcess
from controller.testing.proxy import FaultProxy
from controller.testing.redis_server import RedisServer

__all__ = ["ControllerProcess", "FaultProxy", "RedisServer", "TestPKI", "free_port", "stop_process"]
