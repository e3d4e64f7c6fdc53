"""``make demo`` stopped by SIGTERM or SIGHUP (a closed terminal, a service manager) stops Redis,
the controller and the tables it started and removes its folder, the CA's key among its files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 90.0
AS_FROM_A_TERMINAL = (
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
    "os.execvp(sys.argv[1], sys.argv[1:])",
)
"""Runs a command with SIGHUP at its default, as a terminal's shell starts it, even when
the tests run with SIGHUP ignored (under ``nohup``, which make would inherit)."""


def processes_naming(text: str) -> list[int]:
    """The ids of the running processes whose command line names ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "make"),
    [(signal.SIGTERM, False), (signal.SIGHUP, False), (signal.SIGHUP, True)],
    ids=["SIGTERM", "SIGHUP", "make-demo-terminal-closed"],
)
def test_the_demo_stopped_by_a_signal_leaves_nothing_behind(
    tmp_path: Path, signum: signal.Signals, make: bool
) -> None:
    """The signal to the demo's process; or, as a closed terminal does, SIGHUP to the whole
    foreground process group of ``make demo`` (make, the demo, Redis, the controller and
    the tables, which do not stop on a SIGHUP by themselves)."""
    demo_argv = [sys.executable, str(REPO / "scripts" / "demo.py"), "--rounds", "2000"]
    demo = subprocess.Popen(
        [*AS_FROM_A_TERMINAL, "make", "--no-print-directory", "demo", "DEMO_ARGS=--rounds 2000"]
        if make
        else demo_argv,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=make,
    )
    try:
        assert demo.stdout is not None
        folder: Path | None = None
        lines = []
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:  # until the tables play: Redis and controller up
            line = demo.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("demo folder: "):
                folder = Path(line.removeprefix("demo folder: ").strip())
            if line.startswith("=== Play:"):
                break
        assert folder is not None and (folder / "certs" / "ca.key").exists(), "".join(lines)
        time.sleep(1.0)  # the tables start
        started = processes_naming(str(folder))
        assert len(started) >= 3, started  # redis-server, the controller, the tables
        if make:
            os.killpg(demo.pid, signum)
        else:
            demo.send_signal(signum)
        output, _ = demo.communicate(timeout=60)
        assert demo.returncode == (-signum if make else 128 + signum), output  # make re-raises
        assert "everything it started is stopped" in output
        assert not folder.exists()
        assert list(tmp_path.iterdir()) == []
        assert processes_naming(str(folder)) == []
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=10)
