"""``python -m bench.run [--quick] [--json FILE]``: the controller's speed and memory, as ratios.

One run starts a redis-server (AOF on, appendfsync always) and the controller as a separate
process on 127.0.0.1, configures 64 Caribbean Stud tables (paytable B) on one meter through
AdminService, then measures, every loop bounded in count and time:

1. baseline: ``grpc.health.v1.Health/Check`` (same server, same interceptor), closed loop;
2. rounds: Lockout + Settle at every table, one round at a time each, closed loop;
   RPC/s as a ratio of the baseline's calls/s;
3. open loop: rounds at a fixed fraction of (2)'s saturation rate, latency of a whole round
   from its intended start;
4. idempotent replay: the same Lockout (and Settle) sent again, one call at a time;
5. memory: Redis ``used_memory``, journal length and AOF size per round; controller RSS.

Times are in milliseconds (ms) or microseconds (us), rates per second, sizes in bytes.
The default run takes about 2 minutes, ``--quick`` about 20 seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc import aio
from redis.asyncio import Redis

from bench.loadgen import ClosedLoopResult, Operation, Recorder, closed_loop, open_loop
from bench.processes import System, cpu_seconds, memory_bytes
from bench.workload import JOURNAL_KEY, PAYTABLE, SEATS, WAGER_CENTS, Floor, Health

Results = dict[str, Any]
_ALL = ("p50", "p99", "p999", "max")
_PROCESSES = ("controller", "redis", "client")
_WHO = "controller / redis / load gen"


@dataclass(frozen=True, slots=True)
class Params:
    """Sizes and bounds of one run (seconds, counts)."""

    mode: str
    tables: int = 64
    in_flight: int = 64
    warmup_s: float = 1.0
    baseline_s: float = 15.0
    baseline_max_calls: int = 300_000
    rounds_s: float = 30.0
    rounds_max: int = 100_000
    open_loop_fraction: float = 0.5
    open_loop_s: float = 30.0
    drain_s: float = 10.0
    replay_s: float = 10.0
    replay_max_rounds: int = 2_000
    seed: int = 639


QUICK = Params(
    "quick",
    warmup_s=0.5,
    baseline_s=3.0,
    baseline_max_calls=60_000,
    rounds_s=5.0,
    rounds_max=20_000,
    open_loop_s=4.0,
    drain_s=5.0,
    replay_s=2.0,
    replay_max_rounds=300,
)
DEFAULT = Params("default")


@dataclass(frozen=True, slots=True)
class Usage:
    """CPU seconds used so far by the controller, redis-server and this load generator."""

    wall_s: float
    controller_s: float
    redis_s: float
    client_s: float

    @classmethod
    def now(cls, system: System) -> Usage:
        """Read the three processes' CPU time."""
        return cls(
            time.perf_counter(),
            cpu_seconds(system.controller_pid),
            cpu_seconds(system.redis_pid),
            time.process_time(),
        )

    def per_call(self, start: Usage, calls: int) -> dict[str, float]:
        """CPU microseconds per call of each process since ``start``, and cores busy."""
        wall = max(self.wall_s - start.wall_s, 1e-9)
        used = {
            "controller": self.controller_s - start.controller_s,
            "redis": self.redis_s - start.redis_s,
            "client": self.client_s - start.client_s,
        }
        result = {f"{name}_us_per_call": s * 1e6 / max(calls, 1) for name, s in used.items()}
        result |= {f"{name}_cores": s / wall for name, s in used.items()}
        return result


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def _loop(result: ClosedLoopResult) -> Results:
    return {
        "completed": result.completed,
        "errors": result.errors,
        "elapsed_s": result.elapsed_s,
        "per_s": result.rate_per_s,
    }


async def _redis_state(redis: Redis) -> dict[str, int]:
    memory = await redis.info("memory")
    persistence = await redis.info("persistence")
    return {
        "used_memory": int(memory["used_memory"]),
        "journal_entries": int(await redis.xlen(JOURNAL_KEY)),
        "keys": int(await redis.dbsize()),
        "aof_bytes": int(persistence.get("aof_current_size", 0)),
        "aof_rewrites": int(persistence.get("aof_rewrites", 0)),
    }


async def _machine(redis: Redis) -> Results:
    server = await redis.info("server")
    appendonly = (await redis.config_get("appendonly"))["appendonly"]
    appendfsync = (await redis.config_get("appendfsync"))["appendfsync"]
    model = ""
    with Path("/proc/cpuinfo").open() as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": model,
        "load_average_1m": os.getloadavg()[0],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "grpcio": grpc.__version__,
        "redis_server": str(server["redis_version"]),
        "redis_appendonly": appendonly,
        "redis_appendfsync": appendfsync,
    }


async def _baseline(health: Health, system: System, params: Params) -> Results:
    def checks(into: Recorder) -> Operation:
        async def check(_: int) -> None:
            await health.timed(into)

        return check

    warmup, recorder = Recorder(), Recorder()
    await closed_loop(
        checks(warmup),
        warmup,
        workers=params.in_flight,
        max_count=100_000,
        max_seconds=params.warmup_s,
    )
    start = Usage.now(system)
    result = await closed_loop(
        checks(recorder),
        recorder,
        workers=params.in_flight,
        max_count=params.baseline_max_calls,
        max_seconds=params.baseline_s,
    )
    return {
        **_loop(result),
        "latency": asdict(recorder.summary("Check")),
        "cpu": Usage.now(system).per_call(start, result.completed),
        "first_error": recorder.first_error,
    }


async def _rounds(floor: Floor, system: System, params: Params, baseline: Results) -> Results:
    recorder = Recorder()
    tables = floor.table_ids

    async def warm(index: int) -> None:
        await floor.play(tables[index % len(tables)], Recorder())

    async def play(index: int) -> None:
        await floor.play(tables[index % len(tables)], recorder)

    await closed_loop(
        warm, Recorder(), workers=len(tables), max_count=2 * len(tables), max_seconds=30
    )
    start = Usage.now(system)
    result = await closed_loop(
        play,
        recorder,
        workers=len(tables),
        max_count=params.rounds_max,
        max_seconds=params.rounds_s,
    )
    rpcs = 2 * result.completed
    rpc_per_s = _ratio(rpcs, result.elapsed_s)
    base_p50 = baseline["latency"]["p50_ms"]
    kinds = {kind: recorder.summary(kind) for kind in ("Lockout", "Settle", "Round")}
    cpu = Usage.now(system).per_call(start, rpcs)
    return {
        **_loop(result),
        "rpc_per_s": rpc_per_s,
        "rpc_per_s_vs_baseline": _ratio(rpc_per_s, baseline["per_s"]),
        "latency": {kind: asdict(summary) for kind, summary in kinds.items()},
        "p50_vs_baseline_p50": {
            kind: _ratio(kinds[kind].p50_ms, base_p50) for kind in ("Lockout", "Settle")
        },
        "cpu": cpu,
        "controller_cpu_per_rpc_vs_baseline": _ratio(
            cpu["controller_us_per_call"], baseline["cpu"]["controller_us_per_call"]
        ),
        "first_error": recorder.first_error,
    }


async def _open_loop(floor: Floor, params: Params, saturation_per_s: float) -> Results:
    recorder = Recorder()
    tables = floor.table_ids
    rate = max(params.open_loop_fraction * saturation_per_s, 1.0)

    async def play(sequence: int) -> None:
        await floor.play(tables[sequence % len(tables)], Recorder())

    result = await open_loop(
        play, recorder, rate_per_s=rate, duration_s=params.open_loop_s, drain_s=params.drain_s
    )
    return {
        **asdict(result),
        "fraction_of_saturation": params.open_loop_fraction,
        "achieved_vs_offered": _ratio(result.achieved_per_s, result.offered_per_s),
        "first_error": recorder.first_error,
    }


async def _replay(floor: Floor, health: Health, params: Params) -> Results:
    recorder = Recorder()
    tables = floor.table_ids
    deadline = time.perf_counter() + params.replay_s
    rounds = errors = 0
    while rounds + errors < params.replay_max_rounds and time.perf_counter() < deadline:
        try:
            await health.timed(recorder, "Check")
            await floor.play_with_replays(tables[(rounds + errors) % len(tables)], recorder)
            rounds += 1
        except (aio.AioRpcError, RuntimeError) as error:
            errors += 1
            recorder.note_error(error)
    kinds = ("Check", "Lockout first", "Lockout replay", "Settle first", "Settle replay")
    summaries = {kind: recorder.summary(kind) for kind in kinds}
    p50 = {kind: summary.p50_ms for kind, summary in summaries.items()}
    return {
        "rounds": rounds,
        "errors": errors,
        "latency": {kind: asdict(summary) for kind, summary in summaries.items()},
        "lockout_replay_vs_first_p50": _ratio(p50["Lockout replay"], p50["Lockout first"]),
        "settle_replay_vs_first_p50": _ratio(p50["Settle replay"], p50["Settle first"]),
        "lockout_first_vs_check_p50": _ratio(p50["Lockout first"], p50["Check"]),
        "first_error": recorder.first_error,
    }


def _memory(states: Sequence[dict[str, int]], locked: Sequence[int], rss: Results) -> Results:
    """Redis growth per round over phases 2-4 (AOF: over phase 4 only, unless it was rewritten).

    ``states`` and ``locked`` are Redis readings and rounds-locked counts before phase 2 and
    after phases 2, 3 and 4; ``rss`` the controller's memory readings (bytes).
    """
    first, last = states[0], states[-1]
    played = locked[-1] - locked[0]
    memory: Results = {
        "rounds": played,
        "redis_before": first,
        "redis_after": last,
        **{
            f"{name}_per_round": _ratio(last[name] - first[name], played)
            for name in ("used_memory", "journal_entries", "keys")
        },
        "aof_rewrites": last["aof_rewrites"] - first["aof_rewrites"],
        "aof_bytes_per_round": None,
        **rss,
        "controller_rss_after_vs_before": _ratio(
            rss["controller_rss_after"], rss["controller_rss_before"]
        ),
    }
    if states[-1]["aof_rewrites"] == states[-2]["aof_rewrites"]:
        memory["aof_bytes_per_round"] = _ratio(
            states[-1]["aof_bytes"] - states[-2]["aof_bytes"], locked[-1] - locked[-2]
        )
    return memory


async def measure(system: System, params: Params) -> Results:
    """Run every phase against ``system``; the results as plain data (see the module doc)."""
    began = time.perf_counter()
    redis = Redis.from_url(system.redis.url, decode_responses=True)
    states: list[dict[str, int]] = []
    locked: list[int] = []

    async def checkpoint(phase: Results | None = None) -> None:
        states.append(await _redis_state(redis))
        locked.append(floor.rounds_locked)
        if phase is not None:
            phase["aof_rewrites"] = states[-1]["aof_rewrites"] - states[-2]["aof_rewrites"]

    try:
        health = Health(system.connect("auditor", "bench"))
        floor = Floor(system.connect, params.tables, params.seed)
        await floor.configure()
        machine = await _machine(redis)
        pid = system.controller_pid
        rss = {"controller_rss_before": memory_bytes(pid)}
        baseline = await _baseline(health, system, params)
        rss["controller_rss_after_baseline"] = memory_bytes(pid)
        await checkpoint()
        rounds = await _rounds(floor, system, params, baseline)
        await checkpoint(rounds)
        opened = await _open_loop(floor, params, rounds["per_s"])
        await checkpoint(opened)
        replay = await _replay(floor, health, params)
        await checkpoint(replay)
        rss["controller_rss_after"] = memory_bytes(pid)
        rss["controller_rss_peak"] = memory_bytes(pid, "VmHWM")
    finally:
        await system.close_channels()
        await redis.aclose()
    return {
        "machine": machine,
        "parameters": {
            **asdict(params),
            "paytable": PAYTABLE,
            "wagers_per_round": len(SEATS),
            "wager_cents": WAGER_CENTS,
        },
        "baseline": baseline,
        "rounds": rounds,
        "open_loop": opened,
        "replay": replay,
        "memory": _memory(states, locked, rss),
        "elapsed_s": time.perf_counter() - began,
    }


def _n(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def _lat(summary: Results, *fields: str) -> str:
    return " / ".join(_n(summary[f"{field}_ms"], 2) for field in fields) + " ms"


def _errors(section: Results) -> str:
    count = int(section.get("errors", 0))
    return f"{count} errors: {section['first_error']}" if count else "0 errors"


def report(results: Results) -> str:
    """The results as a readable table: label, value, ratio."""
    m, p = results["machine"], results["parameters"]
    base, rounds, opened = results["baseline"], results["rounds"], results["open_loop"]
    replay, memory = results["replay"], results["memory"]
    rows: list[tuple[str, str, str]] = []

    def section(title: str) -> None:
        rows.append(("", "", ""))
        rows.append((title, "", ""))

    def rewrites(phase: Results) -> None:
        if phase["aof_rewrites"]:
            rows.append(
                ("AOF rewrites in the phase", f"{phase['aof_rewrites']} (fork: outliers)", "")
            )

    def cpu(cpu: Results, unit: str, ratio: str = "") -> None:
        per_call = " / ".join(_n(cpu[f"{name}_us_per_call"]) for name in _PROCESSES)
        cores = " / ".join(f"{cpu[f'{name}_cores']:.2f}" for name in _PROCESSES)
        rows.append((f"CPU per {unit}: {_WHO}", f"{per_call} us", ratio))
        rows.append((f"cores busy: {_WHO}", cores, ""))

    section(f"1. Baseline: Health/Check, {p['in_flight']} in flight, closed loop")
    rows.append(("calls/s", _n(base["per_s"]), "1.00 (the baseline)"))
    rows.append(
        ("calls", f"{_n(base['completed'])} in {base['elapsed_s']:.1f} s, {_errors(base)}", "")
    )
    rows.append(("p50 / p99", _lat(base["latency"], "p50", "p99"), ""))
    cpu(base["cpu"], "call")

    section(f"2. Rounds: Lockout + Settle, {p['tables']} tables, one round at a time each")
    rows.append(
        ("RPC/s", _n(rounds["rpc_per_s"]), f"{rounds['rpc_per_s_vs_baseline']:.2f} x baseline")
    )
    rows.append(("rounds/s (saturation)", _n(rounds["per_s"]), ""))
    rows.append(
        (
            "rounds",
            f"{_n(rounds['completed'])} in {rounds['elapsed_s']:.1f} s, {_errors(rounds)}",
            "",
        )
    )
    for kind in ("Lockout", "Settle"):
        rows.append(
            (
                f"{kind} p50 / p99",
                _lat(rounds["latency"][kind], "p50", "p99"),
                f"p50 {rounds['p50_vs_baseline_p50'][kind]:.2f} x baseline p50",
            )
        )
    rows.append(("round p50 / p99", _lat(rounds["latency"]["Round"], "p50", "p99"), ""))
    cpu(
        rounds["cpu"],
        "RPC",
        f"controller {rounds['controller_cpu_per_rpc_vs_baseline']:.2f} x baseline",
    )
    rewrites(rounds)

    section(
        f"3. Open loop: rounds offered at {opened['fraction_of_saturation']:.0%} of saturation "
        "(latency from the intended start)"
    )
    rows.append(
        (
            "rounds/s offered / achieved",
            f"{_n(opened['offered_per_s'])} / {_n(opened['achieved_per_s'])}",
            f"{opened['achieved_vs_offered']:.2f} achieved / offered",
        )
    )
    rows.append(
        (
            "rounds",
            f"{_n(opened['completed'])} of {_n(opened['scheduled'])}, "
            f"{opened['unfinished']} unfinished, {_errors(opened)}",
            "",
        )
    )
    rows.append(("round p50 / p99 / p99.9 / max", _lat(opened["latency"], *_ALL), ""))
    rows.append(("max send lag", f"{opened['max_send_lag_ms']:.2f} ms", ""))
    rewrites(opened)

    section("4. Idempotent replay: the same request again, 1 call in flight")
    lat = replay["latency"]
    rows.append(("rounds", f"{_n(replay['rounds'])}, {_errors(replay)}", ""))
    rows.append(("Check p50 / p99", _lat(lat["Check"], "p50", "p99"), ""))
    rows.append(
        (
            "Lockout first p50 / p99",
            _lat(lat["Lockout first"], "p50", "p99"),
            f"p50 {replay['lockout_first_vs_check_p50']:.2f} x Check p50",
        )
    )
    rows.append(
        (
            "Lockout replay p50 / p99",
            _lat(lat["Lockout replay"], "p50", "p99"),
            f"p50 {replay['lockout_replay_vs_first_p50']:.2f} x first",
        )
    )
    rows.append(("Settle first p50 / p99", _lat(lat["Settle first"], "p50", "p99"), ""))
    rows.append(
        (
            "Settle replay p50 / p99",
            _lat(lat["Settle replay"], "p50", "p99"),
            f"p50 {replay['settle_replay_vs_first_p50']:.2f} x first",
        )
    )
    rewrites(replay)

    section(f"5. Memory after {_n(memory['rounds'])} rounds (phases 2-4)")
    rows.append(("Redis used_memory per round", f"{_n(memory['used_memory_per_round'])} B", ""))
    rows.append(("journal entries per round", f"{memory['journal_entries_per_round']:.2f}", ""))
    rows.append(("Redis keys per round", f"{memory['keys_per_round']:.2f}", ""))
    aof = memory["aof_bytes_per_round"]
    rows.append(
        (
            "AOF bytes per round (phase 4)",
            "n/a (the AOF was rewritten)" if aof is None else f"{_n(aof)} B",
            "",
        )
    )
    rows.append(("AOF rewrites (phases 2-4)", str(memory["aof_rewrites"]), ""))
    mib = 1024 * 1024
    rows.append(
        (
            "controller RSS before / after",
            f"{memory['controller_rss_before'] / mib:.1f} / "
            f"{memory['controller_rss_after'] / mib:.1f} MiB "
            f"(peak {memory['controller_rss_peak'] / mib:.1f})",
            f"{memory['controller_rss_after_vs_before']:.2f} x before",
        )
    )

    width = max(len(label) for label, value, _ in rows if value)
    value_width = max(len(value) for _, value, ratio in rows if ratio)
    lines = [
        f"Jackpot controller benchmark ({p['mode']}, {results['elapsed_s']:.0f} s)",
        f"machine: nproc {m['nproc']} ({m['cpus_usable']} usable), {m['cpu_model']}, "
        f"load {m['load_average_1m']:.2f}",
        f"  {m['platform']}, Python {m['python']}, grpcio {m['grpcio']}, redis-server "
        f"{m['redis_server']} (appendonly {m['redis_appendonly']}, appendfsync "
        f"{m['redis_appendfsync']})",
        f"parameters: {p['tables']} tables t1..t{p['tables']} on one meter, Caribbean Stud "
        f"paytable {p['paytable']}, {p['wagers_per_round']} wagers x {p['wager_cents']} cents "
        f"a round; mutual TLS, one channel per table certificate, all on 127.0.0.1",
    ]
    for label, value, ratio in rows:
        if not value:
            lines.append(label)
        elif ratio:
            lines.append(f"  {label:<{width}}  {value:<{value_width}}  {ratio}")
        else:
            lines.append(f"  {label:<{width}}  {value}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.run``."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a run of about 20 s")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    params = QUICK if args.quick else DEFAULT
    print(f"bench: {params.mode} run on 127.0.0.1 ...", file=sys.stderr, flush=True)
    with System() as system:
        results = asyncio.run(measure(system, params))
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
