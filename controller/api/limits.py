"""Bounds on what one caller can take: a call rate per identity, calls in progress and open
streams per identity, and how many log lines its refusals may write.

The bounds answer RESOURCE_EXHAUSTED beyond their bound (:class:`ResourceExhausted`), which agents
treat as "retry later": a hostile or broken caller slows itself down, never the others.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from jackpot.errors import RateLimited, SlotsExhausted


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per key: ``rate_per_s`` calls a second on average, bursts up to
    ``burst``. ``rate_per_s`` 0 disables the limit. Keys are bounded by who may call (one
    per table certificate); idle buckets are forgotten once full again."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate_per_s = rate_per_s
        self.burst = max(1, burst)
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def acquire(self, key: str, what: str) -> None:
        """Take one call for ``key``, or raise :class:`RateLimited` naming ``what`` (with
        the time until the next call is admitted)."""
        if self.rate_per_s <= 0:
            return
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate_per_s)
        bucket.updated = now
        if bucket.tokens < 1:
            raise RateLimited(
                f"{what} made more than {self.rate_per_s:g} calls a second (burst "
                f"{self.burst}); slow down and retry",
                retry_after_s=(1 - bucket.tokens) / self.rate_per_s,
            )
        bucket.tokens -= 1
        if len(self._buckets) > 10_000:  # forget the buckets that have refilled since
            refill = self.rate_per_s
            full = [
                k
                for k, b in self._buckets.items()
                if b.tokens + (now - b.updated) * refill >= self.burst
            ]
            for stale in full:
                del self._buckets[stale]


class StreamSlots:
    """Open streams (meters, health, reflection), at most ``per_caller`` for one caller and
    ``total`` in all (``what`` names them in refusals: ``calls in progress`` for the slots
    every call holds)."""

    def __init__(self, total: int, per_caller: int, what: str = "streams open") -> None:
        self.total = total
        self.per_caller = per_caller
        self.what = what
        self._open: dict[str, int] = {}
        self._count = 0

    @property
    def open(self) -> int:
        """Streams open now."""
        return self._count

    @contextlib.contextmanager
    def hold(self, caller: str) -> Iterator[None]:
        """Hold a slot for one stream of ``caller`` while the block runs."""
        self.take(caller)
        try:
            yield
        finally:
            self.give(caller)

    def take(self, caller: str) -> None:
        """Take a slot for ``caller`` (RESOURCE_EXHAUSTED when none is left); :meth:`give`
        it back when its call ends (:meth:`hold` does both around a block)."""
        if self._count >= self.total:
            raise SlotsExhausted(
                f"the controller has {self.total} {self.what} already; retry later"
            )
        mine = self._open.get(caller, 0)
        if mine >= self.per_caller:
            raise SlotsExhausted(
                f"{caller} has {mine} {self.what}, the most one caller may; retry when one ends"
            )
        self._open[caller] = mine + 1
        self._count += 1

    def give(self, caller: str) -> None:
        """Give back a slot :meth:`take` took for ``caller``."""
        self._count -= 1
        left = self._open[caller] - 1
        if left:
            self._open[caller] = left
        else:
            del self._open[caller]


class LogSampler:
    """Which refusals to log: the first of each key, then one every ``interval_s`` with the
    number left unlogged since (a flood of refusals writes a few lines, not one each).
    Keys are bounded (``limit``; the oldest forgotten beyond it)."""

    def __init__(
        self,
        interval_s: float = 10.0,
        limit: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.limit = limit
        self._clock = clock
        self._last: dict[str, tuple[float, int]] = {}

    def sample(self, key: str) -> int | None:
        """None if this refusal of ``key`` is not logged; else the number not logged since
        the last line."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval_s:
            self._last[key] = (last[0], last[1] + 1)
            return None
        if last is None and len(self._last) >= self.limit:
            del self._last[next(iter(self._last))]
        self._last[key] = (now, 0)
        return last[1] if last is not None else 0
