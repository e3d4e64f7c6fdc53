"""The dealer's desk: the console's session wired to the table's agent and the meter stream.

:meth:`Desk.submit` carries out one typed command: the session reads it (a local entry, or
a refusal that changes nothing); a report it asks for goes through the table's
:class:`~table_agent.table.TableAgent` - written to the outbox before it is sent, so a crash
loses nothing and a restart re-sends it - and the controller's answer goes back to the
session. A finished round is written to the round record
(:class:`~table_agent.console.record.RoundRecord`).

:meth:`Desk.watch_meters` keeps the session's meters live from TableService.WatchMeters,
connecting again a second after the stream breaks (the meters are marked stale meanwhile).
Nothing here draws; ``refresh`` asks the screen to draw again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from grpc import aio

from table_agent.client import ControllerRefused, ControllerUnreachable
from table_agent.console.entry import EntryError
from table_agent.console.record import RoundRecord
from table_agent.console.session import DealerSession, Send
from table_agent.link import ProgressiveOffline
from table_agent.table import TableAgent

log = logging.getLogger("table_agent.console")

METER_RECONNECT_S = 1.0
"""How long the desk waits before it asks for the meter stream again after it broke."""


class Desk:
    """One table's console: its ``agent`` (client, outbox, link), its ``session`` and its
    round ``record``."""

    def __init__(
        self,
        agent: TableAgent,
        session: DealerSession,
        record: RoundRecord,
        refresh: Callable[[], None] = lambda: None,
    ) -> None:
        self.agent = agent
        self.session = session
        self.record = record
        self.refresh = refresh
        self.meters_live = False
        """Whether the meter stream is connected (the meters shown are live)."""

    @property
    def offline(self) -> bool:
        """Whether the table is PROGRESSIVE OFFLINE now."""
        return self.agent.link.check()

    async def submit(self, line: str) -> bool:
        """Carry out the command ``line``; False when the dealer quits."""
        session = self.session
        if line.strip():
            session.say(f"> {line.strip()}")
        try:
            send = session.handle(line)
        except EntryError as error:
            session.say(f"refused: {error}")
            return True
        if send is None:
            return True
        if send.phase == "quit":
            return False
        if send.phase == "open":
            session.opened(self.agent.new_round())
            if self.offline:
                session.say("PROGRESSIVE OFFLINE: no side wagers until the controller answers")
            return True
        session.sending = send.phase
        self.refresh()
        try:
            await self._send(send)
        finally:
            session.sending = ""
            self.refresh()
        return True

    async def _send(self, send: Send) -> None:
        session, agent = self.session, self.agent
        try:
            if send.phase == "lockout":
                session.locked_out(await agent.lockout(send.round_id, send.wagers))
            elif send.phase == "chip_count":
                session.chip_counted(await agent.report_chip_count(send.round_id, send.chips))
            elif send.phase == "settle" and send.report is not None:
                self.record.append(session.settled(await agent.settle(send.round_id, send.report)))
            elif send.phase == "void":
                session.voiding(send.reason)
                self.record.append(session.voided(await agent.void(send.round_id, send.reason)))
        except ProgressiveOffline as error:
            session.offline(str(error))
        except ControllerRefused as refusal:
            log.error("the %s of round %s was refused: %s", send.phase, send.round_id, refusal)
            if send.phase == "lockout":
                session.refused(send, refusal.message, next_round_id=agent.new_round())
            else:
                if send.phase in ("settle", "void"):
                    agent.still_locked(send.round_id)
                session.refused(send, refusal.message)
        except ControllerUnreachable as error:
            log.error("the %s of round %s was not answered: %s", send.phase, send.round_id, error)
            session.unreachable(send, str(error))

    async def watch_meters(self) -> None:
        """Until cancelled: the table's meters from the controller's stream, into the
        session; after a break, ask again every :data:`METER_RECONNECT_S`."""
        while True:
            try:
                async for meters in self.agent.client.watch_meters(self.agent.table_id):
                    self.meters_live = True
                    self.session.meters.update(meters)
                    self.refresh()
            except aio.AioRpcError as error:
                log.info("meter stream: %s (%s)", error.code().name, error.details())
            self.meters_live = False
            self.refresh()
            await asyncio.sleep(METER_RECONNECT_S)
