"""Child processes of tests, benchmarks and the demo: free ports, a clean stop, and the
context-manager protocol of everything that starts and stops."""

from __future__ import annotations

import shutil
import socket
import subprocess
from types import TracebackType
from typing import Self


class Started:
    """``with X(...) as x``: :meth:`start` on entry, :meth:`stop` on exit, whatever happened."""

    def start(self) -> Self:
        """Start; answer self once ready."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop whatever runs; never fails if nothing does."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def program(name: str, package: str) -> str:
    """The path of the installed program ``name``; :class:`RuntimeError` naming the Debian
    ``package`` that provides it when it is not on ``PATH``."""
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} is not installed; on Debian: sudo apt-get install {package}")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes] | None, timeout_s: float = 10.0) -> None:
    """SIGTERM ``process``, then SIGKILL if it has not exited after ``timeout_s``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
