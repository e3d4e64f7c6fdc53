"""The system under test as processes: redis-server and the controller, on 127.0.0.1 only.

Also reads what the kernel knows of a process: resident memory (bytes) and CPU time (seconds).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from grpc import aio

from controller.testing import ControllerProcess, RedisServer, TestPKI
from jackpot import tls

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime


def memory_bytes(pid: int, field: str = "VmRSS") -> int:
    """A memory line of ``/proc/PID/status`` (VmRSS: resident now, VmHWM: peak), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no {field} for process {pid}")


class System:
    """A redis-server (AOF on, appendfsync always) and one controller process on loopback,
    with mutual TLS as in production (the call rate limits off: the benchmark measures how
    many rounds one controller can settle).

    A context manager: entering starts both and waits until the controller serves; leaving
    stops both and removes the working directory.
    """

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="jackpot-bench-"))
        self.redis = RedisServer(self.work / "redis", appendfsync="always")
        self.pki = TestPKI(self.work / "pki")
        self.controller = ControllerProcess(
            self.redis.url,
            self.work / "controller.log",
            pki=self.pki,
            metrics=False,
            extra_args=("--table-calls-per-second", "0", "--client-calls-per-second", "0"),
        )
        self._channels: list[aio.Channel] = []

    def connect(self, role: str, name: str) -> aio.Channel:
        """A channel to the controller with the certificate of ``role``/``name``."""
        channel = tls.aio_channel(self.target, self.pki.client(role, name))
        self._channels.append(channel)
        return channel

    async def close_channels(self) -> None:
        """Close every channel :meth:`connect` opened."""
        for channel in self._channels:
            await channel.close(None)
        self._channels.clear()

    @property
    def target(self) -> str:
        """The controller's gRPC address, HOST:PORT."""
        return self.controller.target

    @property
    def controller_pid(self) -> int:
        """The controller's process id."""
        return self.controller.pid

    @property
    def redis_pid(self) -> int:
        """The redis-server's process id."""
        if self.redis.process is None:
            raise RuntimeError("redis-server is not running")
        return self.redis.process.pid

    def __enter__(self) -> System:
        try:
            self.redis.start()
            self.controller.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the controller, then redis-server; remove the working directory."""
        self.controller.stop()
        self.redis.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            tail = self.controller.log_tail()
            if tail:
                print(f"bench: the controller's log ended with:\n{tail}", file=sys.stderr)
        self.stop()
