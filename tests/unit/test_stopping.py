"""jackpot.stopping.cancel_and_wait: a task that drops a cancellation is cancelled again
until it ends; the wait is bounded; what the task raised is consumed."""

from __future__ import annotations

import asyncio
import logging

import pytest

from jackpot.stopping import cancel_and_wait


async def _drops(times: list[int], dropped: list[int]) -> None:
    """Loops on through ``times[0]`` cancellations (as 3.11's wait_for can drop one)."""
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            if len(dropped) >= times[0]:
                raise
            dropped.append(1)


async def test_a_task_that_drops_cancellations_is_cancelled_until_it_ends() -> None:
    dropped: list[int] = []
    task = asyncio.create_task(_drops([3], dropped))
    await asyncio.sleep(0)
    assert await cancel_and_wait(task, timeout_s=10)
    assert task.cancelled() and len(dropped) == 3


async def test_the_wait_is_bounded_and_said(caplog: pytest.LogCaptureFixture) -> None:
    dropped: list[int] = []
    times = [10**9]
    task = asyncio.create_task(_drops(times, dropped))
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, "jackpot"):
        assert not await cancel_and_wait(task, timeout_s=0.2)
    assert not task.done() and dropped
    assert "did not stop within 0.2 s" in caplog.text
    times[0] = 0  # now it takes the next one
    assert await cancel_and_wait(task)


async def test_what_the_task_raised_is_consumed() -> None:
    async def fails() -> None:
        raise ValueError("already failed")

    task = asyncio.create_task(fails())
    await asyncio.sleep(0)
    assert await cancel_and_wait(task)
    assert isinstance(task.exception(), ValueError)
