"""The multi-process load generator: the same client processes drive the echo and the controller.

One phase is a :class:`Job` per client process (spawned, so no gRPC state crosses a fork).
All the processes of a phase start their measured window at the same ``start_at`` (Linux's
monotonic clock is system-wide) after warming up, run a closed loop (``in_flight`` calls each)
or an open loop (an offered rate each), and report their latency samples (seconds), counts
and their own CPU seconds over the window. Every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from grpc import aio

from bench.echo import METHOD
from bench.loadgen import Recorder, closed_loop, open_loop
from bench.workload import CALL_TIMEOUT_S, Floor, Health
from jackpot import tls
from jackpot.tls import ClientTLS

WARMUP_CALLS = 200
"""Calls (echo, check) or rounds per table each process makes before its window."""


@dataclass(frozen=True, slots=True)
class Job:
    """What one client process does in one phase.

    ``kind``: ``echo`` (the baseline server; with ``tables``, over one channel per table
    certificate as the rounds are), ``check`` (the controller's health Check) or
    ``rounds`` (Lockout + Settle at ``tables``, continuing from ``last_rounds``).
    ``in_flight`` > 0: a closed loop; else an open loop at ``rate_per_s``.
    """

    kind: str
    target: str
    identities: Mapping[tuple[str, str], ClientTLS]
    start_at: float
    duration_s: float
    max_count: int
    in_flight: int = 0
    rate_per_s: float = 0.0
    drain_s: float = 10.0
    tables: tuple[str, ...] = ()
    last_rounds: Mapping[str, int] = field(default_factory=dict)
    payload_bytes: int = 0
    seed: int = 0


@dataclass(frozen=True, slots=True)
class JobResult:
    """One process's window: completed and failed operations, latencies (seconds, by kind),
    its CPU seconds, how late it started (seconds), and the tables' last round ids."""

    completed: int
    errors: int
    elapsed_s: float
    samples: dict[str, list[float]]
    first_error: str
    cpu_s: float
    late_s: float
    last_rounds: dict[str, int]
    unfinished: int = 0
    max_send_lag_ms: float = 0.0


def run(pool: ProcessPoolExecutor, jobs: Sequence[Job]) -> list[JobResult]:
    """Run ``jobs`` at once, one per process of ``pool``; their results in order."""
    futures = [pool.submit(_run_job, job) for job in jobs]
    return [future.result() for future in futures]


def _run_job(job: Job) -> JobResult:
    return asyncio.run(_job(job))


async def _job(job: Job) -> JobResult:
    channels: list[aio.Channel] = []

    def connect(role: str, name: str) -> aio.Channel:
        channel = tls.aio_channel(job.target, job.identities[(role, name)])
        channels.append(channel)
        return channel

    try:
        operation, floor = _operation(job, connect)
        warm = Recorder()
        if floor is not None:
            await closed_loop(
                lambda i: floor.play(job.tables[i], warm),
                warm,
                workers=len(job.tables),
                max_count=len(job.tables),
                max_seconds=30,
            )
        else:
            await closed_loop(
                lambda i: operation(i, warm),
                warm,
                workers=max(job.in_flight, 8),
                max_count=WARMUP_CALLS,
                max_seconds=10,
            )
        late_s = time.monotonic() - job.start_at
        if late_s < 0:
            await asyncio.sleep(-late_s)
        recorder = Recorder()
        cpu = time.process_time()
        result: dict[str, Any]
        if job.in_flight:
            closed = await closed_loop(
                lambda i: operation(i, recorder),
                recorder,
                workers=job.in_flight,
                max_count=job.max_count,
                max_seconds=job.duration_s,
            )
            result = {
                "completed": closed.completed,
                "errors": closed.errors,
                "elapsed_s": closed.elapsed_s,
            }
        else:
            opened = await open_loop(
                lambda i: operation(i, recorder),
                recorder,
                rate_per_s=job.rate_per_s,
                duration_s=job.duration_s,
                drain_s=job.drain_s,
            )
            result = {
                "completed": opened.completed,
                "errors": opened.errors,
                "elapsed_s": opened.scheduled / job.rate_per_s,
                "unfinished": opened.unfinished,
                "max_send_lag_ms": opened.max_send_lag_ms,
            }
        cpu = time.process_time() - cpu
        if not warm.first_error or recorder.first_error:
            first_error = recorder.first_error
        else:
            first_error = f"(warm-up) {warm.first_error}"
        return JobResult(
            **result,
            samples=recorder.samples,
            first_error=first_error,
            cpu_s=cpu,
            late_s=max(late_s, 0.0),
            last_rounds=floor.last_rounds if floor is not None else {},
        )
    finally:
        for channel in channels:
            await channel.close(None)


def _operation(job: Job, connect: Any) -> tuple[Any, Floor | None]:
    """The job's operation ``(index, recorder) -> awaitable`` and its floor (rounds only).
    A closed loop's index is the worker (one table each); an open loop's the sequence."""
    if job.kind == "rounds":
        floor = Floor(connect, job.tables, job.seed, job.last_rounds)
        tables = job.tables

        async def play(index: int, into: Recorder) -> None:
            await floor.play(tables[index % len(tables)], into)

        return play, floor
    if job.kind == "check":
        health = Health(connect("auditor", "bench"))

        async def check(index: int, into: Recorder) -> None:
            await health.timed(into, "Call")

        return check, None
    if job.kind == "echo":
        # With tables: the rounds' shape, one channel per table certificate, worker i on
        # table i's; else one channel the workers share (HTTP/2 multiplexes their calls).
        names = job.tables or ("bench",)
        role = "table" if job.tables else "auditor"
        calls = [connect(role, name).unary_unary(METHOD) for name in names]
        payload = bytes(job.payload_bytes)

        async def echo(index: int, into: Recorder) -> None:
            begin = time.perf_counter()
            await calls[index % len(calls)](payload, timeout=CALL_TIMEOUT_S)
            into.add("Call", time.perf_counter() - begin)

        return echo, None
    raise ValueError(f"unknown job kind {job.kind!r}")
