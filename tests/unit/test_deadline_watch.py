"""The first-message deadline: one sweeping timer cancels a call that waits too long, and only
it; nothing stays armed once no call waits."""

from __future__ import annotations

import asyncio

import pytest

from jackpot.deadlines import DeadlineWatch


async def test_a_call_waiting_past_its_deadline_is_cancelled_and_marked() -> None:
    watch = DeadlineWatch(0.2)
    request = asyncio.get_running_loop().create_future()  # never arrives

    async def waiting() -> None:
        task = asyncio.current_task()
        assert task is not None
        watch.watch(task)
        try:
            await request
        finally:
            assert watch.expired(task)
            watch.done(task)

    started = asyncio.get_running_loop().time()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.create_task(waiting())
    waited = asyncio.get_running_loop().time() - started
    assert 0.2 <= waited < 0.2 + watch.sweep_s + 0.5  # its deadline, at most one sweep more
    assert watch._timer is None  # nothing waits: disarmed


async def test_a_call_whose_request_comes_in_time_is_left_alone() -> None:
    watch = DeadlineWatch(0.2)
    loop = asyncio.get_running_loop()

    async def answered() -> str:
        task = asyncio.current_task()
        assert task is not None
        watch.watch(task)
        request = loop.create_future()
        loop.call_later(0.05, request.set_result, "request")
        try:
            return str(await request)
        finally:
            assert not watch.expired(task)
            watch.done(task)

    assert await asyncio.gather(*(answered() for _ in range(50))) == ["request"] * 50
    await asyncio.sleep(watch.sweep_s * 2)  # a sweep finds nothing and disarms
    assert watch._timer is None
    assert not watch._waiting


async def test_one_timer_serves_every_waiting_call() -> None:
    watch = DeadlineWatch(10.0)
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(asyncio.sleep(60)) for _ in range(100)]
    for task in tasks:
        watch.watch(task)
    assert watch._timer is not None and len(watch._waiting) == 100
    timer = watch._timer
    for task in tasks:
        assert watch._timer is timer  # armed once, not per call
        watch.done(task)
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def test_current_is_the_running_task_also_on_a_new_event_loop() -> None:
    watch = DeadlineWatch(10.0)

    async def call() -> bool:
        task = watch.current()
        watch.watch(task)  # the watch now looks the task up on this loop
        found = watch.current()
        watch.done(task)
        return task is asyncio.current_task() and found is task

    assert asyncio.run(call())
    assert asyncio.run(call())  # a server started anew: the old loop runs no task
