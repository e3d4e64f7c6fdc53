"""A test redis-server whose wall clock the test sets: the journal's times on chosen days.

The journal's times are Redis's (the stream ids its scripts write), so a test of gaming days,
daylight-saving changes and day closes moves Redis's clock, not the host's.
:class:`ShiftedClock` builds ``shifted_clock.c`` (a tiny ``LD_PRELOAD`` library; gcc is
installed by ``scripts/bootstrap.sh``) and gives the environment a
:class:`~controller.testing.redis_server.RedisServer` is started with; :meth:`ShiftedClock.set`
then moves that server's wall clock to a given instant (forward only: a stream's ids never go
back). Redis's monotonic clocks are not touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from importlib import resources
from pathlib import Path

OFFSET_WIDTH = 24
"""The offset file holds the signed offset in ms, space-padded to this many bytes (written in
place, never truncated: the server reads it at every call)."""


class ShiftedClock:
    """The shim library and offset file in ``directory``; offset 0 until :meth:`set`."""

    def __init__(self, directory: Path) -> None:
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler is None:
            raise RuntimeError("a C compiler (gcc) is needed: scripts/bootstrap.sh installs it")
        directory.mkdir(parents=True, exist_ok=True)
        source = directory / "shifted_clock.c"
        source.write_text(
            (resources.files("controller.testing") / "shifted_clock.c").read_text("utf-8")
        )
        self.library = directory / "shifted_clock.so"
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-O2", "-o", str(self.library), str(source)],
            check=True,
            capture_output=True,
        )
        self.offset_file = directory / "offset"
        self.offset_file.write_bytes(b"0".ljust(OFFSET_WIDTH))
        self.offset_ms = 0

    @property
    def environment(self) -> dict[str, str]:
        """What the redis-server is started with."""
        return {"LD_PRELOAD": str(self.library), "JACKPOT_TEST_CLOCK_FILE": str(self.offset_file)}

    def set(self, at_ms: int) -> None:
        """Move the server's wall clock to ``at_ms`` (ms since the Unix epoch), from now on
        running at the real rate."""
        self.offset_ms = at_ms - int(time.time() * 1000)
        fd = os.open(self.offset_file, os.O_WRONLY)
        try:
            os.pwrite(fd, str(self.offset_ms).encode().ljust(OFFSET_WIDTH), 0)
        finally:
            os.close(fd)
