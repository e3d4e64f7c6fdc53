"""The link to the controller, and PROGRESSIVE OFFLINE when the controller has stopped answering.

The link is as good as the controller's last answer: every call that the controller answered
(a report acknowledged, the table's registration, a probe, a meter snapshot; or a report
refused for its content, which the controller had to read to refuse) restarts the clock, and
nothing else does - a connection that stays open, a transient failure (UNAVAILABLE, a deadline)
or a refusal of who is calling (PERMISSION_DENIED, UNAUTHENTICATED) is not an answer. When the
controller has not answered for ``offline_after_s`` seconds (``--offline-after``, default 30),
the table is in PROGRESSIVE OFFLINE; the first answer ends it. An agent that is idle between
rounds asks the controller (TableService.GetTable) once its link has been quiet for a third of
that time (at most 10 s), and while it gets no answer asks again at least every second, so the
table is open again within about two seconds of the controller's return.

What PROGRESSIVE OFFLINE means at the table (the casino floor's usual rule for a progressive
system that lost its controller): the sign says PROGRESSIVE OFFLINE and the table takes **no
side wagers at all** - not the progressive wagers, and not the wagers that feed no meter
either (a Caribbean Stud Bonus, an Insurance), because the controller evaluates every hand and
computes every award: without it no side wager can be settled, and the players would wait for
their money for as long as the outage lasts. The base game goes on as usual; the agent does
not see it. A new round's lockout is refused with :class:`ProgressiveOffline` (nothing is
written, nothing is sent; the round stays open, so the dealer takes the wagers back down and
may lock it out again once the table is open). Rounds already locked out keep being reported:
their lockout, settlement or void stays in the outbox and is sent again, with the same
idempotency key, until the controller answers or ``--retry-for`` passes; they are never
refused for being offline. Entering and leaving PROGRESSIVE OFFLINE are each logged once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger("table_agent.link")

OFFLINE_AFTER_S = 30.0
"""The default time without an answer before a table is in PROGRESSIVE OFFLINE."""
MIN_OFFLINE_AFTER_S = 1.0
"""Shorter would flap: a report's retries and a reconnection each wait up to a second."""
MAX_OFFLINE_AFTER_S = 3600.0
MAX_PROBE_INTERVAL_S = 10.0
MAX_PROBE_DELAY_S = 1.0
"""While the controller does not answer, probes back off from 50 ms to at most this."""


class ProgressiveOffline(Exception):
    """A new round's wagers refused because the controller has not answered for a while.

    The message is for the dealer: what is refused, until when, and since when.
    """

    def __init__(self, table_id: str, silent_s: float) -> None:
        super().__init__(
            f"PROGRESSIVE OFFLINE: no progressive wagers until the controller answers again "
            f"(last answer {silent_s:.0f} s ago)"
        )
        self.table_id = table_id
        self.silent_s = silent_s


def check_offline_after(seconds: float) -> float:
    """``seconds`` if it is a usable ``--offline-after``; raise ValueError saying why not."""
    if not math.isfinite(seconds) or not MIN_OFFLINE_AFTER_S <= seconds <= MAX_OFFLINE_AFTER_S:
        raise ValueError(
            f"--offline-after must be {MIN_OFFLINE_AFTER_S:.0f} to {MAX_OFFLINE_AFTER_S:.0f} "
            f"seconds, not {seconds}"
        )
    return seconds


class Link:
    """The time since the controller last answered this table, and whether that makes the
    table PROGRESSIVE OFFLINE (see the module). The clock starts when the link is made: a
    controller that never answers puts the table offline ``offline_after_s`` after start.

    :meth:`answered` and :meth:`check` run on the agent's event loop; :attr:`offline`,
    :meth:`silent_s` and :attr:`offline_periods` may be read from any thread (metrics).
    """

    def __init__(
        self,
        offline_after_s: float = OFFLINE_AFTER_S,
        *,
        table_id: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.offline_after_s = check_offline_after(offline_after_s)
        self.table_id = table_id
        self._clock = clock
        self._last_answer = clock()
        self.offline = False
        """Whether the table is in PROGRESSIVE OFFLINE, as last logged by :meth:`check`."""
        self.offline_periods = 0
        """How many times the table entered PROGRESSIVE OFFLINE."""

    @property
    def probe_after_s(self) -> float:
        """How long the link may be quiet before the agent asks the controller."""
        return min(self.offline_after_s / 3, MAX_PROBE_INTERVAL_S)

    def silent_s(self) -> float:
        """Seconds since the controller last answered (or since the link was made)."""
        return max(0.0, self._clock() - self._last_answer)

    def answered(self) -> None:
        """The controller answered a call: the link is good now (and the table open again)."""
        silent_s = self.silent_s()
        self._last_answer = self._clock()
        if self.offline:
            self.offline = False
            log.warning(
                "table %s: PROGRESSIVE ONLINE again: the controller answered after %.0f s; "
                "side wagers are taken again",
                self.table_id,
                silent_s,
            )

    def check(self) -> bool:
        """Whether the table is in PROGRESSIVE OFFLINE now; logs once when it enters it."""
        silent_s = self.silent_s()
        if not self.offline and silent_s > self.offline_after_s:
            self.offline = True
            self.offline_periods += 1
            log.error(
                "table %s: PROGRESSIVE OFFLINE: the controller has not answered for %.0f s "
                "(--offline-after %g); no side wagers until it answers again, the outbox "
                "keeps sending what was locked out",
                self.table_id,
                silent_s,
                self.offline_after_s,
            )
        return self.offline

    def refuse_if_offline(self) -> None:
        """Raise :class:`ProgressiveOffline` while the table is offline."""
        if self.check():
            raise ProgressiveOffline(self.table_id, self.silent_s())

    async def wait_online(self, give_up_after_s: float, poll_s: float = 0.1) -> bool:
        """Return once the table is open (True if it had to wait); raise TimeoutError once
        the controller has not answered for ``give_up_after_s``. Someone must be calling the
        controller meanwhile (:meth:`keep`)."""
        waited = False
        while self.check():
            waited = True
            if self.silent_s() > give_up_after_s:
                raise TimeoutError(f"the controller has not answered for {give_up_after_s:.0f} s")
            await asyncio.sleep(poll_s)
        return waited

    async def keep(self, probe: Callable[[], Coroutine[Any, Any, bool]]) -> None:
        """Until cancelled: :meth:`check` the link a few times a second, and ``probe`` the
        controller (one call at a time; True: it answered) whenever the link has been quiet
        for :attr:`probe_after_s`; while probes go unanswered, again after 50 ms, doubling to
        at most a second, with jitter."""
        tick_s = min(0.25, self.offline_after_s / 4)
        delay_s = 0.05
        next_probe = 0.0
        probing: asyncio.Task[bool] | None = None
        try:
            while True:
                self.check()
                if probing is not None and probing.done():
                    answered = not probing.cancelled() and probing.exception() is None
                    answered = answered and probing.result()
                    probing = None
                    delay_s = 0.05 if answered else min(delay_s * 2, MAX_PROBE_DELAY_S)
                    next_probe = self._clock() + delay_s * random.uniform(0.5, 1.0)
                quiet = self.silent_s() >= self.probe_after_s
                if probing is None and quiet and self._clock() >= next_probe:
                    probing = asyncio.create_task(probe())
                await asyncio.sleep(tick_s)
        finally:
            if probing is not None:
                probing.cancel()
                await asyncio.gather(probing, return_exceptions=True)
