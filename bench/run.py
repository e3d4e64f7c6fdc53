"""``python -m bench.run [--quick] [--workers N] [--clients P] [--json FILE]``: speed as ratios.

One run starts a redis-server (AOF on, ``appendfsync always``), the controller (one worker,
or ``--workers N``) and a bare grpc.aio echo server (:mod:`bench.echo`), each a process of its
own on 127.0.0.1, configures 64 Caribbean Stud tables (paytable B, 7 seats) on one meter, and
drives every phase with the same load generator: ``--clients`` processes
(:mod:`bench.generator`), whose CPU is reported. Every loop is bounded in count and time.

1. echo: the baseline, closed loop, requests and replies the mean size of a round's, in the
   rounds' shape: one channel per table certificate, one call in flight on each; then the
   same echo over one channel per generator process (HTTP/2 multiplexing the calls: cheaper
   per call on both ends, a shape no table agent has); and, when Debian's h2load
   (nghttp2-client) is installed, the echo driven by h2load in plaintext (a C client: what
   the Python generator leaves on the table);
2. Health/Check on the controller (its interceptor, no Redis), closed loop;
3. full rounds: Lockout + Settle, every seat wagering, one round at a time per table,
   closed loop: RPC/s as a ratio of the echo's, and the controller's CPU per round;
4. open loop: rounds offered at three fixed rates, latency p50/p99/p99.9 of a whole round
   from its intended start (no coordinated omission);
   in 3 and 4 also how long the controller and Redis waited for a core (the run queue) per
   second they ran: when it is well above 0 the cores, not these processes, set the pace;
   in 4 also the seconds in which Redis stalled (an fsync or a script of 2 ms or more, from
   its latency monitor), which a tail that is not the controller's shows;
5. idempotent replay: the same Lockout (and Settle) again, one call at a time;
6. memory: Redis ``used_memory``, journal length and AOF size per round; controller RSS.

Times are in milliseconds (ms) or microseconds (us), rates per second, sizes in bytes.
The default run takes about 3 minutes, ``--quick`` under a minute. Phase 3 alone, to compare
a change with the code it replaces in alternated runs: :mod:`bench.rounds_cpu`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import multiprocessing
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc import aio
from redis import Redis

from bench import generator
from bench.generator import Job, JobResult
from bench.loadgen import Recorder, Summary
from bench.processes import (
    STALL_MS,
    System,
    cpu_seconds,
    family_cpu_seconds,
    memory_bytes,
    waited_seconds,
)
from bench.workload import (
    JOURNAL_KEY,
    PAYTABLE,
    SEATS,
    WAGER_CENTS,
    Floor,
    Health,
    table_ids,
)

Results = dict[str, Any]
_ALL = ("p50", "p99", "p999", "max")


@dataclass(frozen=True, slots=True)
class Params:
    """Sizes and bounds of one run (seconds, counts, rates per second)."""

    mode: str
    tables: int = 64
    clients: int = 3
    in_flight: int = 64
    lead_s: float = 6.0  # from submitting a phase to its window: spawn, connect, warm up
    echo_s: float = 15.0
    echo_shared_s: float = 10.0
    check_s: float = 10.0
    rounds_s: float = 30.0
    max_calls: int = 1_000_000
    open_rates: tuple[float, ...] = (100.0, 200.0, 300.0)
    open_loop_s: float = 20.0
    drain_s: float = 10.0
    h2load_calls: int = 100_000
    replay_s: float = 10.0
    replay_max_rounds: int = 2_000
    seed: int = 639


QUICK = Params(
    "quick",
    echo_s=3.0,
    echo_shared_s=2.0,
    check_s=2.0,
    rounds_s=5.0,
    open_loop_s=4.0,
    drain_s=5.0,
    h2load_calls=20_000,
    replay_s=2.0,
    replay_max_rounds=300,
)
DEFAULT = Params("default")


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


class Bench:
    """The system, the generator's processes and what the phases need between them."""

    def __init__(self, system: System, params: Params, pool: ProcessPoolExecutor) -> None:
        self.system = system
        self.params = params
        self.pool = pool
        self.tables = table_ids(params.tables)
        pki = system.pki
        self.identities = {
            ("operator", "bench"): pki.client("operator", "bench"),
            ("auditor", "bench"): pki.client("auditor", "bench"),
            **{("table", t): pki.client("table", t) for t in self.tables},
        }
        self.last_rounds = dict.fromkeys(self.tables, 0)

    def usage(self) -> dict[str, float]:
        """CPU seconds so far of the controller (all its processes), Redis and the echo."""
        system = self.system
        return {
            "controller": family_cpu_seconds(system.controller_pid),
            "redis": cpu_seconds(system.redis_pid),
            "echo": cpu_seconds(system.echo_pid),
        }

    def waits(self) -> dict[str, float]:
        """Seconds the controller's and Redis's threads have waited for a CPU so far."""
        system = self.system
        return {
            "controller": waited_seconds(system.controller_pid),
            "redis": waited_seconds(system.redis_pid),
        }

    def phase(self, make: Callable[[int, float], Job], window_s: float) -> Results:
        """Run one job per client process (``make(index, start_at)``); the servers' CPU
        seconds over the window ``[start_at, start_at + window_s]``, and the results."""
        start_at = time.monotonic() + self.params.lead_s
        futures = [
            self.pool.submit(generator._run_job, make(i, start_at))
            for i in range(self.params.clients)
        ]
        time.sleep(max(0.0, start_at - time.monotonic()))
        before, waits_before = self.usage(), self.waits()
        time.sleep(max(0.0, start_at + window_s - time.monotonic()))
        after, waits_after = self.usage(), self.waits()
        results: list[JobResult] = [future.result() for future in futures]
        for result in results:
            self.last_rounds.update(result.last_rounds)
        samples: dict[str, list[float]] = {}
        for result in results:
            for kind, values in result.samples.items():
                samples.setdefault(kind, []).extend(values)
        errors = sum(r.errors for r in results)
        return {
            "completed": sum(r.completed for r in results),
            "errors": errors,
            "first_error": next((r.first_error for r in results if r.first_error), ""),
            "elapsed_s": max(r.elapsed_s for r in results),
            "window_s": window_s,
            "latency": {kind: asdict(Summary.of(values)) for kind, values in samples.items()},
            "cpu_s": {name: after[name] - before[name] for name in after},
            # runnable but not running (other processes held both cores), per CPU second
            "waited_per_cpu_s": {
                name: _ratio(waits_after[name] - waits_before[name], after[name] - before[name])
                for name in waits_after
            },
            "generator_cpu_s": sum(r.cpu_s for r in results),
            "generator_processes": len(results),
            "late_s": max(r.late_s for r in results),
            "unfinished": sum(r.unfinished for r in results),
            "max_send_lag_ms": max(r.max_send_lag_ms for r in results),
        }

    def tables_of(self, index: int) -> tuple[str, ...]:
        """The tables client process ``index`` plays (each table in one process only)."""
        return self.tables[index :: self.params.clients]

    def closed(
        self, kind: str, target: str, duration_s: float, payload: int = 0, per_table: bool = False
    ) -> Results:
        """A closed loop of ``kind`` calls, ``in_flight`` in all over the processes; or,
        ``per_table``, one call in flight on each table's channel (the rounds' shape)."""
        p = self.params
        shared = max(1, p.in_flight // p.clients)

        def make(index: int, start_at: float) -> Job:
            tables = self.tables_of(index) if per_table else ()
            return Job(
                kind,
                target,
                self.identities,
                start_at,
                duration_s,
                p.max_calls,
                in_flight=len(tables) or shared,
                payload_bytes=payload,
                tables=tables,
            )

        result = self.phase(make, duration_s)
        result["per_s"] = _ratio(result["completed"], result["elapsed_s"])
        result["in_flight"] = len(self.tables) if per_table else shared * p.clients
        result["channels"] = len(self.tables) if per_table else p.clients
        return _per_call(result, result["completed"])

    def rounds(self, rate_per_s: float = 0.0) -> Results:
        """Rounds at every table: a closed loop (one round at a time per table), or an open
        loop offering ``rate_per_s`` in all."""
        p = self.params
        duration = p.open_loop_s if rate_per_s else p.rounds_s

        def make(index: int, start_at: float) -> Job:
            tables = self.tables_of(index)
            return Job(
                "rounds",
                self.system.target,
                self.identities,
                start_at,
                duration,
                p.max_calls,
                in_flight=0 if rate_per_s else len(tables),
                rate_per_s=rate_per_s / p.clients,
                drain_s=p.drain_s,
                tables=tables,
                last_rounds={t: self.last_rounds[t] for t in tables},
                seed=p.seed + index + int(rate_per_s),
            )

        result = self.phase(make, duration)
        result["per_s"] = _ratio(result["completed"], result["elapsed_s"])
        result["rpc_per_s"] = 2 * result["per_s"]
        if rate_per_s:
            result["offered_per_s"] = rate_per_s
        return _per_call(result, result["completed"])


def _per_call(result: Results, calls: int) -> Results:
    """Add CPU per call (us) of each process and cores busy, over the phase's window."""
    window = result["window_s"]
    # calls completed in the window, estimated from the whole run's rate
    in_window = calls * min(1.0, window / max(result["elapsed_s"], 1e-9))
    cpu = dict(result["cpu_s"], generator=result["generator_cpu_s"])
    result["cpu_us_per_call"] = {k: v * 1e6 / max(in_window, 1) for k, v in cpu.items()}
    result["cores"] = {k: v / window for k, v in cpu.items()}
    return result


def _h2load(system: System, params: Params, payload: int) -> Results | None:
    """The echo driven by h2load in plaintext, when it is installed (else None)."""
    h2load = shutil.which("h2load")
    if h2load is None:
        print(
            "bench: h2load not installed (Debian: apt-get install nghttp2-client); "
            "its echo baseline is skipped",
            file=sys.stderr,
        )
        return None
    with tempfile.NamedTemporaryFile(suffix=".grpc") as body:
        body.write(b"\0" + payload.to_bytes(4, "big") + bytes(payload))  # gRPC framing
        body.flush()
        before = cpu_seconds(system.echo_pid)
        begin = time.perf_counter()
        completed = subprocess.run(
            [
                h2load,
                "-n",
                str(params.h2load_calls),
                "-c",
                "4",
                "-m",
                str(max(1, params.in_flight // 4)),
                "-t",
                "1",
                "-d",
                body.name,
                "-H",
                "content-type: application/grpc",
                "-H",
                "te: trailers",
                f"http://127.0.0.1:{system.echo_plain_port}/bench.Echo/Echo",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        wall = time.perf_counter() - begin
        echo_cpu = cpu_seconds(system.echo_pid) - before
    out = completed.stdout
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
    if completed.returncode != 0 or rate is None or done is None:
        return {"error": (completed.stderr or out)[-300:]}
    succeeded = int(done.group(2))
    return {
        "per_s": float(rate.group(1)),
        "succeeded": succeeded,
        "calls": params.h2load_calls,
        "echo_cpu_us_per_call": echo_cpu * 1e6 / max(succeeded, 1),
        "echo_cores": echo_cpu / wall,
    }


def _redis_state(redis: Redis) -> dict[str, int]:
    memory = redis.info("memory")
    persistence = redis.info("persistence")
    return {
        "used_memory": int(memory["used_memory"]),
        "journal_entries": int(redis.xlen(JOURNAL_KEY)),
        "keys": int(redis.dbsize()),
        "aof_bytes": int(persistence.get("aof_current_size", 0)),
        "aof_rewrites": int(persistence.get("aof_rewrites", 0)),
    }


_STALL_EVENTS = {"fsync": "aof-fsync-always", "script": "command"}
"""Redis latency-monitor events reported as stalls: an AOF fsync (``appendfsync always``
holds every reply behind it) and a slow command (a script: Redis runs one thing at a time)."""


def _stalls(redis: Redis) -> dict[str, dict[str, int]]:
    """Since the last ``LATENCY RESET``: per kind of stall, the seconds that had one of at
    least ``STALL_MS`` ms and the longest (ms). The monitor keeps one sample a second (its
    longest), so this counts seconds, not stalls."""
    found: dict[str, dict[str, int]] = {}
    for name, event in _STALL_EVENTS.items():
        history = redis.latency_history(event)
        found[name] = {
            "seconds": len(history),
            "worst_ms": max((int(ms) for _, ms in history), default=0),
        }
    return found


def _machine(redis: Redis) -> Results:
    server = redis.info("server")
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
        "redis_appendonly": redis.config_get("appendonly")["appendonly"],
        "redis_appendfsync": redis.config_get("appendfsync")["appendfsync"],
    }


async def _setup(system: System, params: Params) -> tuple[int, int]:
    """Configure the floor; play round 1 at t1; the mean request and reply sizes (bytes)."""
    try:
        floor = Floor(system.connect, table_ids(params.tables), params.seed)
        await floor.configure()
        game = floor.new_round(floor.table_ids[0])
        replies = [await floor.lockout(game.lockout), await floor.settle(game.settle)]
    finally:
        await system.close_channels()
    requests = (game.lockout.ByteSize() + game.settle.ByteSize()) // 2
    return requests, sum(reply.ByteSize() for reply in replies) // 2


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


async def _replay_phase(bench: Bench) -> Results:
    system, params = bench.system, bench.params
    try:
        health = Health(system.connect("auditor", "bench"))
        floor = Floor(system.connect, bench.tables, params.seed, bench.last_rounds)
        result = await _replay(floor, health, params)
        bench.last_rounds.update(floor.last_rounds)
    finally:
        await system.close_channels()
    return result


def measure(system: System, params: Params) -> Results:
    """Run every phase against ``system``; the results as plain data (see the module doc)."""
    began = time.perf_counter()
    redis = Redis.from_url(system.redis.url, decode_responses=True)
    states: list[dict[str, int]] = []
    locked: list[int] = []
    context = multiprocessing.get_context("spawn")
    with redis, ProcessPoolExecutor(params.clients, mp_context=context) as pool:
        bench = Bench(system, params, pool)

        def checkpoint(phase: Results | None = None) -> None:
            states.append(_redis_state(redis))
            locked.append(sum(bench.last_rounds.values()))
            if phase is not None:
                phase["aof_rewrites"] = states[-1]["aof_rewrites"] - states[-2]["aof_rewrites"]

        request_bytes, reply_bytes = asyncio.run(_setup(system, params))
        bench.last_rounds[bench.tables[0]] = 1
        system.start_echo(reply_bytes)
        machine = _machine(redis)
        pid = system.controller_pid
        rss = {"controller_rss_before": memory_bytes(pid)}
        echo = bench.closed(
            "echo", system.echo_target, params.echo_s, request_bytes, per_table=True
        )
        echo_shared = bench.closed("echo", system.echo_target, params.echo_shared_s, request_bytes)
        h2load = _h2load(system, params, request_bytes)
        check = bench.closed("check", system.target, params.check_s)
        checkpoint()
        rounds = bench.rounds()
        checkpoint(rounds)
        rounds["rpc_per_s_vs_echo"] = _ratio(rounds["rpc_per_s"], echo["per_s"])
        rounds["rpc_per_s_vs_echo_shared"] = _ratio(rounds["rpc_per_s"], echo_shared["per_s"])
        rounds["controller_ms_per_round"] = rounds["cpu_us_per_call"]["controller"] / 1000
        opened = []
        for rate in params.open_rates:
            redis.latency_reset()
            opened.append(bench.rounds(rate))
            opened[-1]["redis_stalls"] = _stalls(redis)
            checkpoint(opened[-1])
        replay = asyncio.run(_replay_phase(bench))
        checkpoint(replay)
        rss["controller_rss_after"] = memory_bytes(pid)
        rss["controller_rss_peak"] = memory_bytes(pid, "VmHWM")
    return {
        "machine": machine,
        "parameters": {
            **asdict(params),
            "workers": system.workers,
            "paytable": PAYTABLE,
            "wagers_per_round": len(SEATS),
            "wager_cents": WAGER_CENTS,
            "echo_request_bytes": request_bytes,
            "echo_reply_bytes": reply_bytes,
        },
        "echo": echo,
        "echo_shared": echo_shared,
        "h2load_echo": h2load,
        "check": check,
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


_WHO = ("controller", "redis", "echo", "generator")


def _waited(phase: Results) -> str:
    """How long the controller and Redis were runnable but waiting for a core, per second
    they ran: near 0 on an idle machine; the cores were short above it."""
    waited = phase["waited_per_cpu_s"]
    return f"{waited['controller']:.2f} / {waited['redis']:.2f} s"


def _shared_cpu(phase: Results) -> str:
    per_call = phase["cpu_us_per_call"]
    return f"{_n(per_call['echo'])} / {_n(per_call['generator'])}"


def report(results: Results) -> str:
    """The results as a readable table: label, value, ratio."""
    m, p = results["machine"], results["parameters"]
    echo, check, rounds = results["echo"], results["check"], results["rounds"]
    replay, memory = results["replay"], results["memory"]
    rows: list[tuple[str, str, str]] = []

    def section(title: str) -> None:
        rows.append(("", "", ""))
        rows.append((title, "", ""))

    def cpu(phase: Results, unit: str) -> None:
        who = [name for name in _WHO if phase["cores"].get(name, 0) >= 0.005]
        per_call = " / ".join(_n(phase["cpu_us_per_call"][name]) for name in who)
        cores = " / ".join(f"{phase['cores'][name]:.2f}" for name in who)
        rows.append((f"CPU per {unit}, us: {' / '.join(who)}", per_call, ""))
        rows.append((f"cores busy: {' / '.join(who)}", cores, ""))

    def loop(phase: Results, unit: str) -> None:
        rows.append(
            (
                unit,
                f"{_n(phase['completed'])} in {phase['elapsed_s']:.1f} s, {_errors(phase)}",
                f"generator late {phase['late_s']:.2f} s" if phase["late_s"] > 0.5 else "",
            )
        )

    clients = f"{p['clients']} generator processes"
    section(
        f"1. Baseline: bare grpc.aio echo (mutual TLS), {clients}, one channel per table "
        f"certificate, one call in flight on each ({echo['in_flight']}): the rounds' shape"
    )
    rows.append(("RPC/s", _n(echo["per_s"]), "1.00 (the baseline)"))
    loop(echo, "calls")
    rows.append(("p50 / p99", _lat(echo["latency"]["Call"], "p50", "p99"), ""))
    cpu(echo, "call")
    shared = results["echo_shared"]
    rows.append(
        (
            f"one channel per process ({shared['in_flight']} in flight on {shared['channels']}) "
            "RPC/s",
            _n(shared["per_s"]),
            f"{_ratio(shared['per_s'], echo['per_s']):.2f} x the baseline",
        )
    )
    rows.append(("  its CPU per call, us: echo / generator", _shared_cpu(shared), ""))
    h2 = results["h2load_echo"]
    if h2 is None:
        rows.append(("h2load (plaintext, a C client)", "not installed: skipped", ""))
    elif "error" in h2:
        rows.append(("h2load (plaintext, a C client)", f"failed: {h2['error']}", ""))
    else:
        rows.append(
            (
                "h2load (plaintext, a C client) RPC/s",
                _n(h2["per_s"]),
                f"{_ratio(h2['per_s'], shared['per_s']):.2f} x the Python generator's "
                "(one channel per process)",
            )
        )
        rows.append(
            (
                "h2load: echo CPU per call / cores",
                f"{_n(h2['echo_cpu_us_per_call'])} us / {h2['echo_cores']:.2f}",
                "",
            )
        )

    section(
        "2. Health/Check on the controller (interceptor, no Redis), closed loop, one channel "
        "per process"
    )
    rows.append(
        (
            "RPC/s",
            _n(check["per_s"]),
            f"{_ratio(check['per_s'], shared['per_s']):.2f} x the one-channel-per-process echo",
        )
    )
    rows.append(("p50 / p99", _lat(check["latency"]["Call"], "p50", "p99"), ""))
    cpu(check, "call")

    section(
        f"3. Full rounds: Lockout + Settle, {p['wagers_per_round']} seats wagering, "
        f"{p['tables']} tables, one round at a time each, {p['workers']} worker(s)"
    )
    rows.append(
        (
            "RPC/s",
            _n(rounds["rpc_per_s"]),
            f"{rounds['rpc_per_s_vs_echo']:.2f} x echo "
            f"({rounds['rpc_per_s_vs_echo_shared']:.2f} x the one-channel-per-process echo)",
        )
    )
    rows.append(("rounds/s (saturation)", _n(rounds["per_s"]), ""))
    loop(rounds, "rounds")
    rows.append(("controller CPU per round", f"{rounds['controller_ms_per_round']:.2f} ms", ""))
    for kind in ("Lockout", "Settle", "Round"):
        rows.append((f"{kind} p50 / p99", _lat(rounds["latency"][kind], "p50", "p99"), ""))
    cpu(rounds, "round")
    rows.append(("run-queue wait per CPU second: controller / redis", _waited(rounds), ""))

    section("4. Open loop: rounds offered at fixed rates (latency from the intended start)")
    for opened in results["open_loop"]:
        rate = _n(opened["offered_per_s"])
        rows.append(
            (
                f"{rate}/s: achieved, p50 / p99 / p99.9 / max",
                f"{_n(opened['per_s'])}/s, "
                + _lat(opened["latency"].get("intended", _ZERO), *_ALL),
                f"{opened['unfinished']} unfinished, {_errors(opened)}",
            )
        )
        rows.append(
            (
                f"{rate}/s: controller CPU per round, cores",
                f"{opened['cpu_us_per_call']['controller'] / 1000:.2f} ms, "
                f"{opened['cores']['controller']:.2f}",
                f"max send lag {opened['max_send_lag_ms']:.1f} ms",
            )
        )
        rows.append((f"{rate}/s: run-queue wait per CPU second", _waited(opened), ""))
        stalls = opened["redis_stalls"]
        rows.append(
            (
                f"{rate}/s: Redis stalls >= {STALL_MS} ms, seconds with one (worst)",
                ", ".join(
                    f"{name} {stall['seconds']} ({stall['worst_ms']} ms)"
                    for name, stall in stalls.items()
                ),
                "",
            )
        )

    section("5. Idempotent replay: the same request again, 1 call in flight")
    lat = replay["latency"]
    rows.append(("rounds", f"{_n(replay['rounds'])}, {_errors(replay)}", ""))
    for kind, ratio in (
        ("Lockout first", f"p50 {replay['lockout_first_vs_check_p50']:.2f} x Check p50"),
        ("Lockout replay", f"p50 {replay['lockout_replay_vs_first_p50']:.2f} x first"),
        ("Settle first", ""),
        ("Settle replay", f"p50 {replay['settle_replay_vs_first_p50']:.2f} x first"),
    ):
        rows.append((f"{kind} p50 / p99", _lat(lat[kind], "p50", "p99"), ratio))

    section(f"6. Memory after {_n(memory['rounds'])} rounds (phases 3-5)")
    rows.append(("Redis used_memory per round", f"{_n(memory['used_memory_per_round'])} B", ""))
    rows.append(("journal entries per round", f"{memory['journal_entries_per_round']:.2f}", ""))
    aof = memory["aof_bytes_per_round"]
    rows.append(
        ("AOF bytes per round (phase 5)", "n/a (rewritten)" if aof is None else f"{_n(aof)} B", "")
    )
    mib = 1024 * 1024
    rows.append(
        (
            "controller RSS before / after",
            f"{memory['controller_rss_before'] / mib:.1f} / "
            f"{memory['controller_rss_after'] / mib:.1f} MiB",
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
        f"parameters: {p['tables']} tables on one meter, Caribbean Stud paytable "
        f"{p['paytable']}, {p['wagers_per_round']} wagers x {p['wager_cents']} cents a round; "
        f"echo {p['echo_request_bytes']} B in, {p['echo_reply_bytes']} B out; mutual TLS, "
        f"one channel per table certificate, all on 127.0.0.1",
    ]
    for label, value, ratio in rows:
        if not value:
            lines.append(label)
        elif ratio:
            lines.append(f"  {label:<{width}}  {value:<{value_width}}  {ratio}")
        else:
            lines.append(f"  {label:<{width}}  {value}")
    return "\n".join(lines)


_ZERO = asdict(Summary.of([]))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.run``."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a run of under a minute")
    parser.add_argument(
        "--workers", type=int, default=1, help="controller processes (serve --workers)"
    )
    parser.add_argument("--clients", type=int, default=0, help="load generator processes")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    params = QUICK if args.quick else DEFAULT
    if args.clients:
        params = dataclasses.replace(params, clients=args.clients)
    print(f"bench: {params.mode} run on 127.0.0.1 ...", file=sys.stderr, flush=True)
    with System(args.workers) as system:
        results = measure(system, params)
    print(report(results))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
