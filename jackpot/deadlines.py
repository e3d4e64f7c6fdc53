"""One sweeping timer for many deadlines: :class:`DeadlineWatch`.

The interceptor gives each call :data:`controller.api.interceptor.FIRST_MESSAGE_S` to send its
request, and the store gives each script call its socket timeout for the reply
(:mod:`controller.store.script_calls`). A timer per wait costs more on the event loop than the
wait itself; a watch holds every waiting task in one dictionary and one timer sweeps them.

The waiting task follows this shape (a cancellation that is not the watch's passes on
unchanged, as with ``asyncio.timeout``)::

    task = watch.current()
    cancelling = task.cancelling()
    watch.watch(task)
    try:
        result = await what_it_waits_for
    except asyncio.CancelledError:
        if watch.expired(task) and task.uncancel() <= cancelling:
            raise TooLate() from None
        raise
    else:
        if watch.expired(task):  # the deadline passed as it came: it goes on
            task.uncancel()
    finally:
        watch.done(task)
"""

from __future__ import annotations

import asyncio
from typing import Any


class DeadlineWatch:
    """The tasks waiting for something (a call's request, a script's reply), each with its
    deadline on the event loop's clock (``limit_s`` after it started waiting). One timer,
    armed while any task waits, sweeps them every ``limit_s / 4`` (at most 1 s): a task past
    its deadline is marked expired and cancelled, so it waits ``limit_s`` and at most one
    sweep more. A timer per wait (``asyncio.timeout``) costs more than the rest of admitting
    a call; this costs a dictionary entry."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.sweep_s = min(1.0, limit_s / 4)
        self._waiting: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the timer's

    def current(self) -> asyncio.Task[Any]:
        """The running task (a call's). Looked up on the loop of the calls watched, as
        ``asyncio.current_task(loop)``: without a loop it asks for the running one, a system
        call each time (``getpid``). On another loop (a server started anew) the watched one
        runs no task, and the running loop is asked."""
        loop = self._loop
        task = asyncio.current_task(loop) if loop is not None else None
        if task is None:
            task = asyncio.current_task()
            assert task is not None, "a call runs in a task"
        return task

    def watch(self, task: asyncio.Task[Any]) -> None:
        """``task`` (running) waits from now on."""
        loop = task.get_loop()
        self._waiting[task] = loop.time() + self.limit_s
        if self._timer is None or self._loop is not loop:
            if self._loop is not loop:  # a server started anew: forget the old loop's calls
                self._waiting = {t: d for t, d in self._waiting.items() if t.get_loop() is loop}
                self._expired.clear()
            self._timer, self._loop = loop.call_later(self.sweep_s, self._sweep), loop

    def done(self, task: asyncio.Task[Any]) -> None:
        """``task`` no longer waits (what it waited for came, or it ended)."""
        self._waiting.pop(task, None)
        self._expired.discard(task)

    def expired(self, task: asyncio.Task[Any]) -> bool:
        """Whether the watch cancelled ``task`` for waiting too long."""
        return task in self._expired

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        late = [task for task, deadline in self._waiting.items() if deadline <= now]
        for task in late:
            del self._waiting[task]
            self._expired.add(task)
            task.cancel()
        self._timer = loop.call_later(self.sweep_s, self._sweep) if self._waiting else None
