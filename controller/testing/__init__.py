"""Test harness shipped with the product: a real redis-server on a free loopback port.

Used by this project's tests, benchmarks and ``make demo``, and by anyone who embeds the
controller in their own tests (the way temporal ships ``WorkflowEnvironment``).
"""

from controller.testing.redis_server import RedisServer, free_port

__all__ = ["RedisServer", "free_port"]
