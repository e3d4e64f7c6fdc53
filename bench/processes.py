"""The system under test as processes: redis-server and the controller, on 127.0.0.1 only.

Also reads what the kernel knows of a process: resident memory (bytes) and CPU time (seconds).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from grpc import aio

from controller.testing import ControllerProcess, RedisServer, TestPKI
from controller.testing.children import free_port, stop_process
from jackpot import tls

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far, in seconds."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime


def family(pid: int) -> list[int]:
    """``pid`` and every process below it (a controller's workers), from /proc."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            pids.extend(family(int(child)))
    return pids


def family_cpu_seconds(pid: int) -> float:
    """The CPU seconds of ``pid`` and every process below it (those still running)."""
    total = 0.0
    for member in family(pid):
        try:
            total += cpu_seconds(member)
        except OSError:
            pass
    return total


def waited_seconds(pid: int) -> float:
    """The seconds the threads of ``pid`` and every process below it have spent runnable but
    waiting for a CPU (the run queue; ``/proc/PID/task/TID/schedstat``), summed."""
    total = 0
    for member in family(pid):
        for schedstat in Path(f"/proc/{member}/task").glob("*/schedstat"):
            try:
                total += int(schedstat.read_text().split()[1])  # ns on the run queue
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e9


def memory_bytes(pid: int, field: str = "VmRSS") -> int:
    """A memory line of ``/proc/PID/status`` (VmRSS: resident now, VmHWM: peak), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise LookupError(f"no {field} for process {pid}")


STALL_MS = 2
"""Redis's latency monitor records, per second, the longest fsync or command of at least this
many milliseconds (``LATENCY HISTORY``): the stalls :mod:`bench.run` reports beside a tail."""


class System:
    """A redis-server (AOF on, appendfsync always) and one controller (``workers`` processes)
    on loopback, with mutual TLS as in production (the call rate limits off: the benchmark
    measures how many rounds one controller can settle); and, once :meth:`start_echo` is
    called, the baseline echo server (:mod:`bench.echo`) with the controller's certificate.

    A context manager: entering starts Redis and the controller and waits until every worker
    serves; leaving stops them all and removes the working directory.
    """

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self.echo_port = free_port()
        self.echo_plain_port = free_port()
        self._echo: subprocess.Popen[bytes] | None = None
        self.work = Path(tempfile.mkdtemp(prefix="jackpot-bench-"))
        self.redis = RedisServer(
            self.work / "redis",
            appendfsync="always",
            extra_args=("--latency-monitor-threshold", str(STALL_MS)),  # bench.run: stalls
        )
        self.pki = TestPKI(self.work / "pki")
        self.controller = ControllerProcess(
            self.redis.url,
            self.work / "controller.log",
            pki=self.pki,
            metrics=False,
            extra_args=(
                "--table-calls-per-second",
                "0",
                "--client-calls-per-second",
                "0",
                *(("--workers", str(workers)) if workers > 1 else ()),
            ),
        )
        self._channels: list[aio.Channel] = []

    def start_echo(self, reply_bytes: int, timeout_s: float = 30.0) -> None:
        """Start the echo server answering ``reply_bytes``; return once it accepts."""
        files = self.pki.server()
        self._echo = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.echo",
                "--port",
                str(self.echo_port),
                "--plain-port",
                str(self.echo_plain_port),
                "--reply-bytes",
                str(reply_bytes),
                "--cert",
                str(files.cert),
                "--key",
                str(files.key),
                "--ca",
                str(files.client_ca),
            ]
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._echo.poll() is not None:
                raise RuntimeError("the echo server exited")
            try:
                socket.create_connection(("127.0.0.1", self.echo_plain_port), 0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the echo server did not listen within {timeout_s}s")

    @property
    def echo_pid(self) -> int:
        """The echo server's process id."""
        if self._echo is None:
            raise RuntimeError("the echo server is not running")
        return self._echo.pid

    @property
    def echo_target(self) -> str:
        """The echo server's mutual-TLS address, HOST:PORT."""
        return f"127.0.0.1:{self.echo_port}"

    def _wait_for_workers(self, timeout_s: float = 60.0) -> None:
        last = f"worker {self.workers - 1} of {self.workers} serving"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if last in self.controller.log_tail(1_000_000):
                return
            time.sleep(0.1)
        raise RuntimeError(f"the controller's {self.workers} workers did not all serve")

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
            if self.workers > 1:
                self._wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the echo server, the controller, then redis-server; remove the working
        directory."""
        stop_process(self._echo)
        self._echo = None
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
