"""The bottom of the redis-py range pyproject.toml declares: a real round
(tests/integration/test_redis_py_range.py) in a new process whose PYTHONPATH puts the lowest
declared redis-py first (installed apart by scripts/bootstrap.sh, in the venv's
``redis-low``), against its own redis-server. That redis-py lacks what the store's direct
script calls need, so the round must take redis-py's public path, and still move every cent
exactly. The top of the range is the venv's own redis-py (constraints.txt), on which the same
round runs in the normal suite, by the direct path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOW = Path(sys.prefix) / "redis-low"
EXPECTED_PATH = "public"
"""redis-py 5.0.8's pool wants a command name to give a connection, and its hiredis parser
has no push type: the store's script calls must find that at start and take the public path."""


def lowest_declared() -> str:
    """The X of ``redis[hiredis]>=X,<9`` in pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'"redis\[hiredis\]>=([0-9.]+),<9"', text)
    assert found, "pyproject.toml declares redis[hiredis]>=LOWEST,<9"
    return found.group(1)


def test_the_range_is_what_is_tested() -> None:
    lowest = lowest_declared()
    assert lowest == "5.0.8", "EXPECTED_PATH is what redis-py 5.0.8 gives: check it again"
    pinned = (ROOT / "constraints.txt").read_text()
    top = re.search(r"^redis==([0-9]+)\.", pinned, re.MULTILINE)
    assert top and int(top.group(1)) < 9, "the top tested is below the declared <9"


def test_a_round_on_the_lowest_declared_redis_py() -> None:
    lowest = lowest_declared()
    assert (LOW / f"redis-{lowest}.dist-info").is_dir(), (
        f"redis-py {lowest} is not in {LOW}: run make bootstrap"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(LOW), str(ROOT)]),
        "EXPECT_REDIS_PY": lowest,
        "EXPECT_SCRIPT_PATH": EXPECTED_PATH,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            "tests/integration/test_redis_py_range.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout, done.stdout[-2000:]
