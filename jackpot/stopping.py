"""Stopping a background task for sure: :func:`cancel_and_wait`.

On Python 3.11 one cancellation is not enough. ``asyncio.wait_for`` returns its inner call's
result and drops the cancellation when both happen in one turn of the event loop, and
redis-py sends every command through ``asyncio.wait_for`` (its socket timeout). A flusher or
a poller cancelled at that moment keeps looping, and whoever awaits it waits forever (a
controller that never stops). So the cancellation is repeated until the task has ended, and
the wait is bounded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger("jackpot")

RECANCEL_S = 0.05
"""How long a cancelled task may run on before it is cancelled again."""


async def cancel_and_wait(task: asyncio.Task[Any], timeout_s: float = 5.0) -> bool:
    """Cancel ``task`` and wait until it has ended, cancelling again every
    :data:`RECANCEL_S` while it has not, for at most ``timeout_s``. Whether it ended; a task
    that outlives the bound is logged at WARNING and left running. Its result or exception
    is consumed (a task being stopped has nothing more to say)."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + timeout_s
    while not task.done():
        task.cancel()
        left_s = give_up_at - loop.time()
        if left_s <= 0:
            log.warning("task %s did not stop within %.1f s of its cancellation", task, timeout_s)
            return False
        await asyncio.wait({task}, timeout=min(RECANCEL_S, left_s))
    if not task.cancelled():
        task.exception()  # retrieved: never "exception was never retrieved"
    return True
