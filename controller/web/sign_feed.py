"""The sign's event stream, fed by the shared meter watcher (the one behind WatchMeters).

A sign joins the link group's poller of :class:`~controller.api.meter_watch.MeterWatcher`
like any WatchMeters stream, so a hundred signs cost Redis what one does. Each stream sends
a snapshot at every change and at least every second, with the age of the values: when the
poller cannot read Redis, the age grows and the page shows PROGRESSIVE OFFLINE. The last
winners are read once a second per link group at most (:class:`RecentWinners`), whatever
the number of signs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from controller.api.meter_watch import MeterWatcher, Values
from controller.store.redis_store import RedisStore
from jackpot.errors import StoreUnavailable
from jackpot.stopping import cancel_and_wait
from jackpot.web import sign

log = logging.getLogger("controller.web")

POLL_INTERVAL_S = 0.25
"""How often the sign's link group is read (as a WatchMeters stream's default): a hit shows
within a second."""
WINNERS_TTL_S = 1.0
"""How long one read of the last winners serves every sign of the link group."""


class RecentWinners:
    """The last winners of each link group (not rejected or voided; a pending one marked:
    the sign says "awaiting verification"), newest first, cached briefly."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._cached: dict[str, tuple[float, tuple[sign.Winner, ...]]] = {}
        self._lock = asyncio.Lock()

    async def get(self, link_group_id: str) -> tuple[sign.Winner, ...]:
        """The winners; on a failed read, the last ones read (the values' age tells the
        sign whether Redis answers)."""
        async with self._lock:
            read_at, winners = self._cached.get(link_group_id, (0.0, ()))
            if time.monotonic() - read_at < WINNERS_TTL_S:
                return winners
            try:
                jackpots = await self._store.jackpots.list_jackpots(link_group_id)
            except StoreUnavailable:
                return winners
            latest = sorted(
                (j for j in jackpots if j.status not in ("rejected", "voided")),
                key=lambda j: j.journal_seq,
                reverse=True,
            )[: sign.MAX_WINNERS]
            winners = tuple(
                sign.Winner(
                    j.table_id, j.seat, j.hand, j.amount_cents, j.hit_at_ms, j.jackpot_id, j.status
                )
                for j in latest
            )
            if len(self._cached) > 1000:  # link groups are few; never grow without bound
                self._cached.clear()
            self._cached[link_group_id] = (time.monotonic(), winners)
            return winners


async def sign_events(
    watcher: MeterWatcher,
    winners: RecentWinners,
    link_group_id: str,
    display: Mapping[str, Any] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The encoded events of one sign of ``link_group_id`` until the client leaves."""
    yield sign.retry()
    latest: Values = ()
    changed = asyncio.Event()

    async def follow() -> None:
        nonlocal latest
        async for values in watcher.watch(link_group_id, POLL_INTERVAL_S):
            latest = values
            changed.set()

    task = asyncio.create_task(follow(), name=f"sign-{link_group_id}")
    try:
        while not task.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), sign.HEARTBEAT_S)
            changed.clear()
            age = watcher.age_s(link_group_id)
            yield sign.snapshot(
                link_group_id,
                [(meter.meter_id, meter.amount_cents) for meter in latest],
                await winners.get(link_group_id),
                age_ms=sign.STALE_AFTER_MS + 1 if age is None else int(age * 1000),
                now_ms=time.time_ns() // 1_000_000,
                display=display,
            )
    finally:
        await cancel_and_wait(task)  # one cancel can be lost (jackpot.stopping)
