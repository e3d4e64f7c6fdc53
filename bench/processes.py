"""The system under test as processes: redis-server and the controller, on 127.0.0.1 only.

Also reads what the kernel knows of a process: resident memory (bytes) and CPU time (seconds).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from controller.testing import RedisServer, free_port

REPO = Path(__file__).resolve().parents[1]
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
    """A redis-server (AOF on, appendfsync always) and one controller process on loopback.

    A context manager: entering starts both (the controller may still be starting: wait for
    its health check), leaving stops both and removes the working directory.
    """

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="jackpot-bench-"))
        self.redis = RedisServer(self.work / "redis", appendfsync="always")
        self.port = free_port()
        self.log_path = self.work / "controller.log"
        self.controller: subprocess.Popen[bytes] | None = None

    @property
    def target(self) -> str:
        """The controller's gRPC address, HOST:PORT."""
        return f"127.0.0.1:{self.port}"

    @property
    def controller_pid(self) -> int:
        """The controller's process id."""
        assert self.controller is not None, "the controller is not running"
        return self.controller.pid

    @property
    def redis_pid(self) -> int:
        """The redis-server's process id."""
        assert self.redis.process is not None, "redis-server is not running"
        return self.redis.process.pid

    def controller_exited(self) -> bool:
        """Whether the controller process has ended."""
        return self.controller is None or self.controller.poll() is not None

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the controller's log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def __enter__(self) -> System:
        try:
            self.redis.start()
            with self.log_path.open("wb") as log:
                self.controller = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "controller.cli",
                        "serve",
                        "--insecure",
                        "--listen",
                        self.target,
                        "--redis",
                        self.redis.url,
                        "--metrics-port",
                        "-1",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=REPO,
                )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the controller (SIGTERM, SIGKILL after 10 s), then redis-server; clean up."""
        if self.controller is not None:
            if self.controller.poll() is None:
                self.controller.terminate()
                try:
                    self.controller.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.controller.kill()
                    self.controller.wait()
            self.controller = None
        self.redis.stop()
        shutil.rmtree(self.work, ignore_errors=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            tail = self.log_tail()
            if tail:
                print(f"bench: the controller's log ended with:\n{tail}", file=sys.stderr)
        self.stop()
