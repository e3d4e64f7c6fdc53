"""What an acknowledged write waits for: Redis replicas (WAIT), or their and the primary's
append-only files (WAITAOF, Redis 7.2 and later).

``--wait-replicas N`` makes the store send, on the script's own connection and right after
it, ``WAITAOF <local> N <ms>`` when the primary is Redis 7.2 or later (``<local>`` is 1 when
the primary has its append-only file on: the write is then also fsynced there), else
``WAIT N <ms>``. WAITAOF counts a replica only once the write is fsynced to that replica's
append-only file, so the replicas must run with ``appendonly yes``; WAIT counts a replica
once it has the write in memory. The choice follows the server: it is made again whenever
the store reads the server's version (at start, then every refresh), and a server that does
not know WAITAOF (after a failover to an older one) turns it back to WAIT at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from redis.asyncio.client import Pipeline

WAITAOF_SINCE = (7, 2)
"""The first Redis version with WAITAOF."""
_VERSION = re.compile(r"(\d+)\.(\d+)")


def has_waitaof(redis_version: str) -> bool:
    """Whether a server reporting ``redis_version`` (INFO server) has WAITAOF: 7.2.0 and
    later. An unreadable version is taken as older (WAIT works on every version)."""
    match = _VERSION.match(redis_version.strip())
    if match is None:
        return False
    return (int(match[1]), int(match[2])) >= WAITAOF_SINCE


@dataclass(slots=True)
class ReplicaWait:
    """The wait that follows every write script: for ``replicas`` replicas, at most
    ``timeout_ms`` milliseconds. ``local`` None sends WAIT; 0 or 1 sends WAITAOF with that
    many local fsyncs."""

    replicas: int
    timeout_ms: int
    local: int | None = None

    @property
    def command(self) -> str:
        """``WAIT`` or ``WAITAOF``."""
        return "WAIT" if self.local is None else "WAITAOF"

    def choose(self, redis_version: str, aof_enabled: bool | None) -> None:
        """Use WAITAOF on a server that has it (with a local fsync when its AOF is known to
        be on), WAIT on any other."""
        if has_waitaof(redis_version):
            self.local = 1 if aof_enabled else 0
        else:
            self.local = None

    def args(self) -> tuple[Any, ...]:
        """The wait as a command: ``WAIT N ms`` or ``WAITAOF local N ms``."""
        if self.local is None:
            return ("WAIT", self.replicas, self.timeout_ms)
        return ("WAITAOF", self.local, self.replicas, self.timeout_ms)

    def queue(self, pipe: Pipeline) -> None:
        """Add the wait to ``pipe``, after the write."""
        pipe.execute_command(*self.args())

    def failed(self, error: Exception) -> None:
        """The wait itself was refused: a server without WAITAOF (after a failover to an
        older one) gets WAIT from the next write on."""
        if self.local is not None and "unknown command" in str(error).lower():
            self.local = None

    def shortfall(self, reply: Any) -> str | None:
        """None when ``reply`` (the wait's answer) confirms the write, else what is missing:
        "confirmed by 0 of 1 replicas", "not fsynced to the primary's append-only file"."""
        if self.local is None:
            replicas, local = int(reply), 0
        else:
            local, replicas = int(reply[0]), int(reply[1])
        if replicas < self.replicas:
            return f"confirmed by {replicas} of {self.replicas} replicas"
        if local < (self.local or 0):
            return "not fsynced to the primary's append-only file"
        return None
