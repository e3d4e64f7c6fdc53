"""One shared poller per link group for every WatchMeters stream.

A stream does not hold a Redis connection: the first stream of a link group starts one
poller task that reads the group's meter values (two round trips) every interval — the
shortest any of its streams asked for — and wakes the streams when they change; the last
stream to leave stops it. So a thousand displays cost Redis what one does, and the
connection pool stays free for the rounds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from jackpot.errors import StoreUnavailable
from jackpot.results import MeterValue
from jackpot.stopping import cancel_and_wait

log = logging.getLogger("controller.meter_watch")

Values = tuple[MeterValue, ...]
Reader = Callable[[str], Awaitable[Values]]


class _Feed:
    """The latest values of one link group and who is waiting for the next."""

    def __init__(self) -> None:
        self.values: Values = ()
        self.version = 0  # 0: nothing read yet
        self.read_at = 0.0  # time.monotonic() of the last successful read (0: none yet)
        self.changed = asyncio.Event()
        self.intervals: list[float] = []
        self.task: asyncio.Task[None] | None = None

    def publish(self, values: Values) -> None:
        if self.version and values == self.values:
            return
        self.values = values
        self.version += 1
        self.changed.set()
        self.changed = asyncio.Event()


class MeterWatcher:
    """Meter streams for displays and agents (how many may be open is the interceptor's
    :class:`~controller.api.limits.StreamSlots`)."""

    def __init__(self, read: Reader) -> None:
        self._read = read
        self._feeds: dict[str, _Feed] = {}
        self._closed = False

    async def _poll(self, link_group_id: str, feed: _Feed) -> None:
        """Read until cancelled; a failure (Redis gone, busy, a refusal, bad data) is logged
        once and the next interval tries again, so a display never freezes for good."""
        failing = False
        while feed.intervals:  # until the last stream has left
            try:
                feed.publish(await self._read(link_group_id))
                feed.read_at = time.monotonic()
                if failing:
                    log.info("meter streams of link group %s: Redis answers again", link_group_id)
                failing = False
            except Exception as error:  # keep polling: the displays depend on it
                if not failing:
                    log.warning(
                        "meter streams of link group %s cannot read the meters: %s",
                        link_group_id,
                        error
                        if isinstance(error, StoreUnavailable)
                        else f"{type(error).__name__}: {error}",
                    )
                failing = True
            await asyncio.sleep(min(feed.intervals, default=0))

    def _join(self, link_group_id: str, interval_s: float) -> _Feed:
        feed = self._feeds.get(link_group_id)
        if feed is None:
            feed = self._feeds[link_group_id] = _Feed()
        feed.intervals.append(interval_s)
        if feed.task is None:
            feed.task = asyncio.create_task(
                self._poll(link_group_id, feed), name=f"meters-{link_group_id}"
            )
        return feed

    def _leave(self, link_group_id: str, feed: _Feed, interval_s: float) -> None:
        feed.intervals.remove(interval_s)
        if not feed.intervals and feed.task is not None:
            feed.task.cancel()
            self._feeds.pop(link_group_id, None)

    async def watch(self, link_group_id: str, interval_s: float) -> AsyncIterator[Values]:
        """The group's meter values now, then at every change, at most one per
        ``interval_s``, until :meth:`close`."""
        feed = self._join(link_group_id, interval_s)
        try:
            seen = 0
            while not self._closed:
                if feed.version != seen:
                    seen = feed.version
                    yield feed.values
                    await asyncio.sleep(interval_s)
                    continue
                await feed.changed.wait()
        finally:
            self._leave(link_group_id, feed, interval_s)

    def age_s(self, link_group_id: str) -> float | None:
        """Seconds since the group's meters were last read successfully; None while no
        stream watches the group or before its first read. A sign shows OFFLINE when this
        grows (Redis unreachable or stalled): the values it shows are no longer current."""
        feed = self._feeds.get(link_group_id)
        if feed is None or not feed.read_at:
            return None
        return time.monotonic() - feed.read_at

    @property
    def pollers(self) -> int:
        """Link groups polled now (one task each)."""
        return len(self._feeds)

    async def close(self) -> None:
        """End every stream and stop every poller."""
        self._closed = True
        feeds = list(self._feeds.values())
        for feed in feeds:
            feed.changed.set()
            if feed.task is not None:
                await cancel_and_wait(feed.task)  # one cancel can be lost (jackpot.stopping)
