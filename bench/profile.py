"""``python -m bench.profile [--seconds S] [--py-spy FILE] [--json FILE]``: where a round's
CPU goes.

Starts the system of :mod:`bench.run` (redis-server with ``appendfsync always``, one controller,
mutual TLS), configures its floor and plays full rounds (Lockout + Settle, 7 seats wagering)
in a closed loop for ``--seconds``, then reports, per round:

- the controller's and Redis's CPU (process CPU time: robust under other load);
- each script's Redis time and calls, from Redis's SLOWLOG with every command logged
  (``slowlog-log-slower-than 0``): the time Redis spent executing it, not waiting for it;
- every other Redis command's calls and time per round (``INFO commandstats``), so a round
  trip added to the hot path shows;
- with ``--py-spy FILE``, a py-spy profile of the controller over the window (``--format``:
  ``raw`` collapsed stacks for :func:`summarize`, or ``speedscope``/``flamegraph``), and the
  share of the samples in the controller's own modules, gRPC, protobuf, redis-py and asyncio.

Times in microseconds (us) per round unless named otherwise. Bounded: one window of
``--seconds`` (at most 120) plus start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import multiprocessing
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from redis import Redis

from bench.processes import System
from bench.run import DEFAULT, Bench, Params, Results, _setup
from controller.store.scripts import SCRIPT_NAMES, script_source

_LOG_LEN = 1_000_000
"""SLOWLOG entries kept: more than the commands of a window (about 10 a round)."""

_GROUPS = (
    ("grpc", ("grpc/", "grpc\\", "cygrpc", "grpc_aio", "/grpc/_")),
    ("protobuf", ("google/protobuf",)),
    ("redis-py", ("redis/",)),
    ("asyncio", ("asyncio/", "uvloop")),
    ("controller", ("controller/",)),
    ("jackpot (core)", ("jackpot/",)),
)
"""Where a sample's innermost frame is, by path fragment (first match)."""


def _script_names() -> dict[str, str]:
    """Script SHA-1 (as EVALSHA names it) -> the script's name."""
    return {hashlib.sha1(script_source(name).encode()).hexdigest(): name for name in SCRIPT_NAMES}


def _slowlog(redis: Redis, names: dict[str, str]) -> dict[str, dict[str, float]]:
    """Per script (or command), calls and total us executing, from the whole SLOWLOG."""
    totals: dict[str, dict[str, float]] = {}
    for entry in redis.slowlog_get(_LOG_LEN):
        raw = entry["command"]
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        command = text.split(maxsplit=2)[:2]
        name = command[0].upper() if command else "?"
        if name in ("EVALSHA", "EVALSHA_RO") and len(command) > 1:
            name = names.get(command[1], command[1][:12])
        slot = totals.setdefault(name, {"calls": 0, "us": 0.0})
        slot["calls"] += 1
        slot["us"] += float(entry["duration"])
    return totals


def summarize(collapsed: Path) -> dict[str, float]:
    """The share (0..1) of py-spy's samples whose innermost frame lies in each group of
    :data:`_GROUPS` ("other": none), from a ``--format raw`` file."""
    shares: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        leaf = stack.rsplit(";", 1)[-1]
        group = next(
            (name for name, parts in _GROUPS if any(part in leaf for part in parts)), "other"
        )
        shares[group] += count
    return {name: shares[name] / total for name in sorted(shares)} if total else {}


def profile(params: Params, seconds: float, spy: Path | None, spy_format: str) -> Results:
    """Run the closed-loop rounds phase once under observation; the figures per round."""
    window = min(seconds, 120.0)
    params = dataclasses.replace(params, rounds_s=window)
    context = multiprocessing.get_context("spawn")
    with System() as system:
        redis = Redis.from_url(system.redis.url)
        with redis, ProcessPoolExecutor(params.clients, mp_context=context) as pool:
            bench = Bench(system, params, pool)
            _, reply_bytes = asyncio.run(_setup(system, params))
            bench.last_rounds[bench.tables[0]] = 1
            system.start_echo(reply_bytes)  # idle: Bench reads its CPU time
            # warm up: scripts loaded, tables cached, connections open
            bench.params = dataclasses.replace(params, rounds_s=2.0)
            bench.rounds()
            bench.params = params
            redis.config_set("slowlog-max-len", _LOG_LEN)
            redis.config_set("slowlog-log-slower-than", 0)
            redis.slowlog_reset()
            redis.config_resetstat()
            spying = None
            if spy is not None:
                py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
                spying = subprocess.Popen(
                    [
                        py_spy,
                        "record",
                        "--pid",
                        str(system.controller_pid),
                        "--duration",
                        str(int(window + params.lead_s)),
                        "--rate",
                        "250",
                        "--format",
                        spy_format,
                        "--output",
                        str(spy),
                        "--nonblocking",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            rounds = bench.rounds()
            redis.config_set("slowlog-log-slower-than", 10_000)
            stats = redis.info("commandstats")
            scripts = _slowlog(redis, _script_names())
            if spying is not None:
                spying.wait(timeout=window + params.lead_s + 60)
    completed = max(rounds["completed"], 1)
    per_round = {
        name: {"calls": slot["calls"] / completed, "us": slot["us"] / completed}
        for name, slot in sorted(scripts.items(), key=lambda item: -item[1]["us"])
    }
    result: Results = {
        "rounds": rounds["completed"],
        "rounds_per_s": rounds["per_s"],
        "controller_ms_per_round": rounds["cpu_us_per_call"]["controller"] / 1000,
        "redis_ms_per_round": rounds["cpu_us_per_call"]["redis"] / 1000,
        "redis_executing_us_per_round": per_round,
        "commandstats_calls_per_round": {
            name.removeprefix("cmdstat_"): stat["calls"] / completed for name, stat in stats.items()
        },
        "errors": rounds["errors"],
    }
    if spy is not None and spy_format == "raw" and spy.exists():
        result["py_spy_leaf_share"] = summarize(spy)
    return result


def report(result: Results) -> str:
    """The figures as text."""
    lines = [
        f"rounds: {result['rounds']:,} ({result['rounds_per_s']:.0f}/s), errors {result['errors']}",
        f"CPU per round: controller {result['controller_ms_per_round']:.3f} ms, Redis "
        f"{result['redis_ms_per_round']:.3f} ms",
        "Redis executing, per round (SLOWLOG):",
    ]
    for name, slot in result["redis_executing_us_per_round"].items():
        lines.append(f"  {name:<28} {slot['calls']:6.2f} calls {slot['us']:8.1f} us")
    lines.append("Redis commands per round (INFO commandstats):")
    for name, calls in sorted(result["commandstats_calls_per_round"].items()):
        lines.append(f"  {name:<28} {calls:6.2f}")
    if "py_spy_leaf_share" in result:
        lines.append("controller samples by innermost frame (py-spy):")
        for name, share in sorted(result["py_spy_leaf_share"].items(), key=lambda x: -x[1]):
            lines.append(f"  {name:<28} {share:6.1%}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.profile", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="the window (at most 120)")
    parser.add_argument("--clients", type=int, default=DEFAULT.clients)
    parser.add_argument("--py-spy", type=Path, metavar="FILE", help="record the controller")
    parser.add_argument(
        "--format", default="raw", choices=("raw", "speedscope", "flamegraph"), help="py-spy's"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    params = Params("profile", clients=args.clients)
    result = profile(params, args.seconds, args.py_spy, args.format)
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
