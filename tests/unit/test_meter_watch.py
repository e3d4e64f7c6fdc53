"""The shared meter poller: one reader per link group, every stream woken by a change, and a
failure of any kind logged and outlived (a display never freezes for good)."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ResponseError

from controller.api.meter_watch import MeterWatcher, Values
from jackpot.errors import StoreUnavailable
from jackpot.results import MeterValue


class FlakyReader:
    """Meter values that go up by a cent a read, failing in between as scripted."""

    def __init__(self, failures: list[Exception | None]) -> None:
        self.failures = failures
        self.reads = 0
        self.value = 1_000_000_000_000

    async def __call__(self, link_group_id: str) -> Values:
        self.reads += 1
        failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            raise failure
        self.value += 1_000_000
        return (MeterValue("cs-main", self.value),)


async def test_one_poller_serves_every_stream_and_survives_any_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = FlakyReader([None, ResponseError("BUSY Redis is busy running a script"), None])
    reader.failures.insert(2, StoreUnavailable("Redis is unreachable"))
    watcher = MeterWatcher(reader)
    streams = [watcher.watch("floor", 0.01) for _ in range(3)]
    firsts = await asyncio.gather(*(anext(stream) for stream in streams))
    assert watcher.pollers == 1 and len({values[0].amount_microcents for values in firsts}) == 1
    later = await asyncio.wait_for(anext(streams[0]), timeout=5)
    assert later[0].amount_microcents > firsts[0][0].amount_microcents
    assert "BUSY Redis is busy" in caplog.text  # logged, and the poller went on
    for stream in streams:
        await stream.aclose()  # type: ignore[attr-defined]
    assert watcher.pollers == 0
    await watcher.close()


async def test_close_ends_the_streams_even_after_a_failure() -> None:
    watcher = MeterWatcher(FlakyReader([None] + [ValueError("bad value")] * 100))
    stream = watcher.watch("floor", 0.01)
    await anext(stream)
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    await watcher.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, timeout=5)
