"""The floor view's liveness of tables: every call and every open stream of a table's
certificate is heard, written once per flush, never lost to a failed write."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from controller.api.liveness import TableLiveness
from controller.store.redis_store import RedisStore
from jackpot.errors import StoreUnavailable


class _Store:
    """The store's tables aggregate, as far as the liveness uses it (``store.tables``)."""

    def __init__(self) -> None:
        self.written: list[dict[str, int]] = []
        self.fail = False
        self.tables = self

    async def record_tables_heard(self, heard: dict[str, int]) -> None:
        if self.fail:
            raise StoreUnavailable("redis is down")
        self.written.append(dict(heard))


def _liveness() -> tuple[TableLiveness, _Store]:
    store = _Store()
    return TableLiveness(cast(RedisStore, cast(Any, store))), store


async def test_calls_are_written_once_per_flush() -> None:
    liveness, store = _liveness()
    await liveness.flush()
    assert store.written == []  # nothing heard: nothing written
    liveness.heard("cs-1")
    liveness.heard("cs-1")
    liveness.heard("cs-2")
    await liveness.flush()
    assert [sorted(w) for w in store.written] == [["cs-1", "cs-2"]]
    await liveness.flush()
    assert len(store.written) == 1  # silent since: nothing more


async def test_an_open_stream_is_heard_at_every_flush() -> None:
    liveness, store = _liveness()
    with liveness.streaming("cs-1"):
        await liveness.flush()
        await liveness.flush()
    await liveness.flush()  # heard as it closed
    await liveness.flush()  # then silent
    assert [sorted(w) for w in store.written] == [["cs-1"]] * 3


async def test_a_failed_write_is_kept_for_the_next_flush() -> None:
    liveness, store = _liveness()
    liveness.heard("cs-1")
    store.fail = True
    await liveness.flush()
    store.fail = False
    await liveness.flush()
    assert [sorted(w) for w in store.written] == [["cs-1"]]


class _SwallowingStore(_Store):
    """A write that drops the first cancellation it meets, as Python 3.11's
    ``asyncio.wait_for`` does inside redis-py when its inner call ends in the same turn."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()
        self.swallowed = 0

    async def record_tables_heard(self, heard: dict[str, int]) -> None:
        self.writing.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1  # dropped, as wait_for drops it
        self.written.append(dict(heard))


async def test_close_stops_the_flusher_when_a_write_drops_the_cancellation() -> None:
    store = _SwallowingStore()
    liveness = TableLiveness(cast(RedisStore, cast(Any, store)), flush_interval_s=0.01)
    liveness.heard("cs-1")
    liveness.start()
    await asyncio.wait_for(store.writing.wait(), 10)
    closing = asyncio.create_task(liveness.close())
    done, _ = await asyncio.wait({closing}, timeout=10)
    assert done, "close() waits for a flusher that one cancellation did not stop"
    assert store.swallowed == 1
