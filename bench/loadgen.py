"""Load generators: a closed loop (N workers) and an open loop (a fixed offered rate).

Both are bounded in count and in time and stop by themselves. The open loop measures each
operation's latency from its *intended* start time, so a slow server cannot hide its queueing
by delaying the sends (coordinated omission). Latencies are kept in seconds and summarised in
milliseconds.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

Operation = Callable[[int], Awaitable[None]]
"""One unit of load; the argument is the worker index (closed loop) or sequence number (open)."""


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ascending ``ordered`` values (0 if there are none)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class Summary:
    """Latency percentiles of ``count`` samples, in milliseconds."""

    count: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float

    @classmethod
    def of(cls, samples_s: Sequence[float]) -> Summary:
        """Summarise latencies given in seconds."""
        ordered = sorted(samples_s)
        return cls(
            count=len(ordered),
            p50_ms=percentile(ordered, 0.50) * 1e3,
            p99_ms=percentile(ordered, 0.99) * 1e3,
            p999_ms=percentile(ordered, 0.999) * 1e3,
            max_ms=(ordered[-1] * 1e3) if ordered else 0.0,
        )


@dataclass(slots=True)
class Recorder:
    """Latency samples (seconds) by kind of call, and the first error seen."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    first_error: str = ""

    def add(self, kind: str, seconds: float) -> None:
        """Record one latency of ``kind``."""
        self.samples.setdefault(kind, []).append(seconds)

    def summary(self, kind: str) -> Summary:
        """The percentiles of ``kind`` (all zero if none were recorded)."""
        return Summary.of(self.samples.get(kind, []))

    def note_error(self, error: BaseException) -> None:
        """Keep the first error's text for the report."""
        if not self.first_error:
            self.first_error = f"{type(error).__name__}: {error}"[:300]


@dataclass(frozen=True, slots=True)
class ClosedLoopResult:
    """Operations completed (and failed) by a closed loop in ``elapsed_s`` seconds."""

    completed: int
    errors: int
    elapsed_s: float

    @property
    def rate_per_s(self) -> float:
        """Completed operations per second."""
        return self.completed / self.elapsed_s if self.elapsed_s > 0 else 0.0


async def closed_loop(
    operation: Operation,
    recorder: Recorder,
    *,
    workers: int,
    max_count: int,
    max_seconds: float,
) -> ClosedLoopResult:
    """Run ``workers`` loops of ``operation`` until ``max_count`` have started or time is up.

    Each worker starts its next operation when the previous one ends, so ``workers`` operations
    are in flight. Calls in flight at the deadline finish (each is bounded by its own timeout).
    """
    started = completed = errors = 0
    begin = time.perf_counter()
    deadline = begin + max_seconds

    async def worker(index: int) -> None:
        nonlocal started, completed, errors
        while started < max_count and time.perf_counter() < deadline:
            started += 1
            try:
                await operation(index)
            except Exception as error:
                errors += 1
                recorder.note_error(error)
            else:
                completed += 1

    await asyncio.gather(*(worker(index) for index in range(workers)))
    return ClosedLoopResult(completed, errors, time.perf_counter() - begin)


@dataclass(frozen=True, slots=True)
class OpenLoopResult:
    """An open loop's outcome; rates per second, latency from each intended start time."""

    offered_per_s: float
    scheduled: int
    completed: int
    errors: int
    unfinished: int
    achieved_per_s: float
    latency: Summary
    max_send_lag_ms: float


async def open_loop(
    operation: Operation,
    recorder: Recorder,
    *,
    rate_per_s: float,
    duration_s: float,
    drain_s: float,
) -> OpenLoopResult:
    """Start ``operation`` at ``rate_per_s`` for ``duration_s``, whatever the replies do.

    Operation i is due at ``t0 + i / rate``; its latency runs from that time to its end, and
    is recorded as kind ``"intended"``. After the last start, calls still running get
    ``drain_s`` seconds to finish; the rest are cancelled and counted as unfinished.
    """
    scheduled = max(1, int(rate_per_s * duration_s))
    completed = errors = 0
    max_lag_s = 0.0
    last_end = 0.0
    begin = time.perf_counter() + 0.01

    async def one(sequence: int, intended: float) -> None:
        nonlocal completed, errors, last_end
        try:
            await operation(sequence)
        except Exception as error:
            errors += 1
            recorder.note_error(error)
            return
        last_end = time.perf_counter()
        recorder.add("intended", last_end - intended)
        completed += 1

    tasks: set[asyncio.Task[None]] = set()
    for sequence in range(scheduled):
        intended = begin + sequence / rate_per_s
        delay = intended - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        max_lag_s = max(max_lag_s, time.perf_counter() - intended)
        tasks.add(asyncio.create_task(one(sequence, intended)))
    _, pending = await asyncio.wait(tasks, timeout=drain_s)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    window_s = max(last_end, begin + scheduled / rate_per_s) - begin
    return OpenLoopResult(
        offered_per_s=rate_per_s,
        scheduled=scheduled,
        completed=completed,
        errors=errors,
        unfinished=len(pending),
        achieved_per_s=completed / window_s if window_s > 0 else 0.0,
        latency=recorder.summary("intended"),
        max_send_lag_ms=max_lag_s * 1e3,
    )
