"""``python -m bench.against [REF] [--pairs N]``: this checkout's hot path against commit REF,
in alternated runs of :mod:`bench.rounds_cpu`.

REF (default ``HEAD~1``) is checked out into a temporary git worktree, removed afterwards.
Each pair runs ``python -m bench.rounds_cpu`` once from each checkout (the same interpreter and
virtual environment, ``PYTHONPATH`` and the working directory set to the checkout, so each
run imports its own checkout's code), alternating the order (REF first, then this checkout
first, ...): the first run of a pair tends to measure more CPU than the second on a loaded
machine. Printed: each pair's ratio (this checkout / REF) of the controller's and of Redis's
CPU per round, then the medians, and one JSON line at the end.

The verdict is the balanced median: each two consecutive pairs (one REF first, one this
checkout first) give the geometric mean of their ratios, in which the first run's extra cost
cancels (REF first measures r/b, this first r*b: the mean is r), and the median of those is
taken. A balanced median at or below 1.00 says this checkout is no slower. The plain median
of the pair ratios is printed too: with few pairs it falls on one side of the order's bias.

With ``--together`` the two runs of a pair run at the same time, each with its own
redis-server, controller and load, so that a disturbance of the machine (another job, the
host taking the cores) weighs on both alike; the ratio is then taken as is (the plain median
is the verdict). On this project's 2-core machine, four pairs of the same commit run
together gave controller ratios of 0.99-1.04; one commit against another gave pair ratios
of 0.85-1.43 one after the other (6 pairs) and 1.02-1.16 together (8 pairs). Bounded: 1 to
20 pairs, each run at most 60 s.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.run import QUICK

MAX_PAIRS = 20
RUN_TIMEOUT_S = 60.0
KEYS = ("controller_ms_per_round", "redis_ms_per_round")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _start(checkout: Path, seconds: float, clients: int) -> subprocess.Popen[str]:
    """Start one ``bench.rounds_cpu`` run from ``checkout`` (its own code: ``PYTHONPATH``
    and the working directory are the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [
        sys.executable,
        "-m",
        "bench.rounds_cpu",
        "--seconds",
        str(seconds),
        "--clients",
        str(clients),
    ]
    return subprocess.Popen(
        command,
        cwd=checkout,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _answer(checkout: Path, run: subprocess.Popen[str]) -> dict[str, float]:
    """The JSON answer of a run :func:`_start` started, once it ends (killed after
    ``RUN_TIMEOUT_S``)."""
    try:
        stdout, stderr = run.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        raise RuntimeError(
            f"bench.rounds_cpu in {checkout.name} ran over {RUN_TIMEOUT_S:g} s"
        ) from None
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if run.returncode != 0 or not lines:
        raise RuntimeError(
            f"bench.rounds_cpu in {checkout.name} exited {run.returncode}: {stderr.strip()[-2000:]}"
        )
    answer: dict[str, float] = json.loads(lines[-1])
    return answer


def run_once(checkout: Path, seconds: float, clients: int) -> dict[str, float]:
    """One ``bench.rounds_cpu`` run from ``checkout``; its JSON answer."""
    return _answer(checkout, _start(checkout, seconds, clients))


def run_together(
    checkouts: Sequence[tuple[str, Path]], seconds: float, clients: int
) -> dict[str, dict[str, float]]:
    """One ``bench.rounds_cpu`` run from each checkout, all at the same time, so that
    whatever else the machine does meanwhile weighs on each alike; their answers by name."""
    runs = [(name, checkout, _start(checkout, seconds, clients)) for name, checkout in checkouts]
    try:
        return {name: _answer(checkout, run) for name, checkout, run in runs}
    finally:
        for _, _, run in runs:
            if run.poll() is None:
                run.kill()
                run.communicate()


def balanced_ratios(ratios: Sequence[float]) -> list[float]:
    """The geometric mean of each two consecutive pair ratios (REF first, then this checkout
    first: the first run's extra cost cancels); a last odd pair stands alone."""
    means = [math.sqrt(a * b) for a, b in zip(ratios[::2], ratios[1::2], strict=False)]
    if len(ratios) % 2:
        means.append(ratios[-1])
    return means


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.against``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.against", description=__doc__.split("\n")[0]
    )
    parser.add_argument("ref", nargs="?", default="HEAD~1", help="the commit to compare with")
    parser.add_argument("--pairs", type=int, default=8, help=f"pairs of runs, 1 to {MAX_PAIRS}")
    parser.add_argument("--seconds", type=float, default=6.0, help="measured window of a run")
    parser.add_argument("--clients", type=int, default=QUICK.clients, help="generator processes")
    parser.add_argument(
        "--together",
        action="store_true",
        help="run each pair's two runs at the same time rather than one after the other",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.pairs <= MAX_PAIRS:
        parser.error(f"--pairs must be 1 to {MAX_PAIRS}")
    if not 1.0 <= args.seconds <= 15.0 or not 1 <= args.clients <= 16:
        parser.error("--seconds must be 1 to 15 and --clients 1 to 16")
    here = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel"))
    commit = _git(here, "rev-parse", "--verify", f"{args.ref}^{{commit}}")
    head = _git(here, "rev-parse", "HEAD")
    dirty = bool(_git(here, "status", "--porcelain", "--untracked-files=no"))
    parent = Path(tempfile.mkdtemp(prefix="jackpot-bench-against-"))
    base = parent / commit[:12]
    _git(here, "worktree", "add", "--detach", str(base), commit)
    ratios: dict[str, list[float]] = {key: [] for key in KEYS}
    try:
        print(
            f"bench.against: {head[:12]}{' (with uncommitted changes)' if dirty else ''} "
            f"/ {commit[:12]}, {args.pairs} pairs",
            flush=True,
        )
        for pair in range(args.pairs):
            order = [("ref", base), ("this", here)]
            if pair % 2:
                order.reverse()
            if args.together:
                results = run_together(order, args.seconds, args.clients)
            else:
                results = {
                    name: run_once(checkout, args.seconds, args.clients) for name, checkout in order
                }
            how = "together" if args.together else f"{order[0][0]} first"
            line = [f"pair {pair + 1:2d} ({how}):"]
            for key in KEYS:
                ratio = results["this"][key] / results["ref"][key]
                ratios[key].append(ratio)
                line.append(
                    f"{key.split('_')[0]} {results['this'][key]:.3f}/{results['ref'][key]:.3f} ms"
                    f" = {ratio:.3f}"
                )
            print(" ".join(line), flush=True)
    finally:
        subprocess.run(
            ["git", "-C", str(here), "worktree", "remove", "--force", str(base)],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(parent, ignore_errors=True)
    medians = {key: statistics.median(values) for key, values in ratios.items()}
    balanced = {key: statistics.median(balanced_ratios(values)) for key, values in ratios.items()}
    print(
        f"median ratio (this / ref): controller {medians[KEYS[0]]:.3f}, "
        f"redis {medians[KEYS[1]]:.3f}",
        flush=True,
    )
    print(
        f"balanced median (order's bias cancelled): controller {balanced[KEYS[0]]:.3f}, "
        f"redis {balanced[KEYS[1]]:.3f}",
        flush=True,
    )
    print(
        json.dumps(
            {
                "ref": commit,
                "head": head,
                "dirty": dirty,
                "pairs": args.pairs,
                "together": args.together,
                "controller_ratio_median": medians[KEYS[0]],
                "redis_ratio_median": medians[KEYS[1]],
                "controller_ratio_balanced": balanced[KEYS[0]],
                "redis_ratio_balanced": balanced[KEYS[1]],
                "controller_ratios": ratios[KEYS[0]],
                "redis_ratios": ratios[KEYS[1]],
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
