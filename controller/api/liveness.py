"""When each table's agent was last heard from, for the floor view.

A table's agent calls the controller all the time it runs, whether or not a round is played:
``GetTable`` probes (at least every 10 s, :data:`table_agent.link.MAX_PROBE_INTERVAL_S`),
its ``WatchMeters`` stream (the table sign), lockouts and settlements. The interceptor tells
:class:`TableLiveness` of every call it admits from a table's certificate (its own table:
the identity's name) and of every stream such a certificate holds open; once every
:data:`FLUSH_INTERVAL_S` the times are written to Redis (:data:`controller.store.keys.TABLE_SEEN`,
one ``HSET`` per replica per interval however many tables call), so that every replica's
floor view sees the calls every replica took. A table with a stream open counts as heard
from at each flush. Times are this replica's clock, milliseconds since the Unix epoch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator

from controller.store.redis_store import RedisStore
from jackpot.errors import JackpotError
from jackpot.stopping import cancel_and_wait

log = logging.getLogger("controller.api")

FLUSH_INTERVAL_S = 2.0
"""How often the times heard are written to Redis."""
MAX_TABLES = 10_000
"""Tables remembered between two flushes (a bound: only registered tables' certificates call)."""


class TableLiveness:
    """The last call of each table's agent, written to Redis every :data:`FLUSH_INTERVAL_S`."""

    def __init__(self, store: RedisStore, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self._store = store
        self._interval = flush_interval_s
        self._heard: dict[str, int] = {}
        self._streams: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None

    def heard(self, table_id: str) -> None:
        """A call from ``table_id``'s certificate, now."""
        if table_id in self._heard or len(self._heard) < MAX_TABLES:
            self._heard[table_id] = time.time_ns() // 1_000_000

    @contextlib.contextmanager
    def streaming(self, table_id: str) -> Iterator[None]:
        """While ``table_id``'s certificate holds a stream open, it is heard at every flush."""
        self.heard(table_id)
        self._streams[table_id] = self._streams.get(table_id, 0) + 1
        try:
            yield
        finally:
            left = self._streams.pop(table_id, 1) - 1
            if left > 0:
                self._streams[table_id] = left
            self.heard(table_id)

    async def flush(self) -> None:
        """Write what was heard since the last flush (kept for the next one on a failure)."""
        now_ms = time.time_ns() // 1_000_000
        for table_id in self._streams:
            self._heard[table_id] = now_ms
        if not self._heard:
            return
        heard, self._heard = self._heard, {}
        try:
            await self._store.tables.record_tables_heard(heard)
        except JackpotError as error:
            for table_id, at_ms in heard.items():
                self._heard[table_id] = max(at_ms, self._heard.get(table_id, 0))
            log.warning("could not record the tables heard from: %s", error)

    def start(self) -> None:
        """Flush every interval until :meth:`close`."""
        self._task = asyncio.create_task(self._run(), name="table-liveness")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            await self.flush()

    async def close(self) -> None:
        """Stop flushing (one last flush first)."""
        if self._task is not None:
            await cancel_and_wait(self._task)  # one cancel can be lost (jackpot.stopping)
            self._task = None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), 2.0)
