"""Start and stop a real ``redis-server`` process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from controller.testing.children import Started, free_port, program, stop_process


class RedisServer(Started):
    """A ``redis-server`` child process with AOF on (``appendfsync always``) in ``data_dir``.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        appendonly: bool = True,
        appendfsync: str = "always",
        extra_args: tuple[str, ...] = (),
        environment: dict[str, str] | None = None,
    ) -> None:
        binary = program("redis-server", "redis-server")
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.extra_args = extra_args
        self.environment = environment
        """Added to the server's environment (a test clock: :mod:`controller.testing.clock`)."""
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers PING."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            self.appendfsync,
            "--daemonize",
            "no",
            "--logfile",
            str(self.data_dir / "redis.log"),
            *self.extra_args,
        ]
        env = {**os.environ, **self.environment} if self.environment else None
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = (self.data_dir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited at start:\n{log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith((b"+PONG", b"-NOAUTH")):  # up (with a password)
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port} in {timeout_s}s")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        stop_process(self.process, timeout_s=5)
        self.process = None
