"""Bounds on what one caller can take: a call rate per identity, open streams per identity.

Both answer RESOURCE_EXHAUSTED beyond their bound (:class:`ResourceExhausted`), which agents
treat as "retry later": a hostile or broken caller slows itself down, never the others.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from jackpot.errors import ResourceExhausted


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
        """Take one call for ``key``, or raise :class:`ResourceExhausted` naming ``what``."""
        if self.rate_per_s <= 0:
            return
        now = self._clock()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate_per_s)
        bucket.updated = now
        if bucket.tokens < 1:
            raise ResourceExhausted(
                f"{what} made more than {self.rate_per_s:g} calls a second (burst "
                f"{self.burst}); slow down and retry"
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
    ``total`` in all."""

    def __init__(self, total: int, per_caller: int) -> None:
        self.total = total
        self.per_caller = per_caller
        self._open: dict[str, int] = {}
        self._count = 0

    @property
    def open(self) -> int:
        """Streams open now."""
        return self._count

    @contextlib.contextmanager
    def hold(self, caller: str) -> Iterator[None]:
        """Hold a slot for one stream of ``caller`` while the block runs."""
        if self._count >= self.total:
            raise ResourceExhausted(
                f"the controller serves {self.total} streams already; retry later"
            )
        mine = self._open.get(caller, 0)
        if mine >= self.per_caller:
            raise ResourceExhausted(
                f"{caller} has {mine} streams open, the most one caller may; close one"
            )
        self._open[caller] = mine + 1
        self._count += 1
        try:
            yield
        finally:
            self._count -= 1
            left = self._open[caller] - 1
            if left:
                self._open[caller] = left
            else:
                del self._open[caller]
