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
from table_agent.console.refusals import refusal_words, was_voided
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
        """Carry out the command ``line``; False when the dealer quits. Nothing raises out
        of here: every refusal and every failure is shown to the dealer in plain words
        (:func:`~table_agent.console.refusals.refusal_words`), what to do next included."""
        session = self.session
        if line.strip():
            session.say(f"> {line.strip()}")
        try:
            send = session.handle(line)
        except EntryError as error:
            session.say(f"refused: {error}")
            return True
        except Exception as error:  # a bug of the console's: said, never raised to the screen
            log.exception("the command %r failed", line)
            name = line.split()[0].lower()  # handle() only fails on a command it read
            session.halt(refusal_words(Send(name, session.round_id), error))
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
        except Exception as error:  # the one place a failed report is worded for the dealer
            self._failed(send, error)
        finally:
            session.sending = ""
            self.refresh()
        return True

    async def _send(self, send: Send) -> None:
        session, agent = self.session, self.agent
        if send.phase == "lockout":
            session.locked_out(await agent.lockout(send.round_id, send.wagers))
        elif send.phase == "chip_count":
            session.chip_counted(await agent.report_chip_count(send.round_id, send.chips))
        elif send.phase == "settle" and send.report is not None:
            self.record.append(session.settled(await agent.settle(send.round_id, send.report)))
        elif send.phase == "void":
            session.voiding(send.reason)
            self.record.append(session.voided(await agent.void(send.round_id, send.reason)))
        elif send.phase == "correct" and send.report is not None:
            session.correction_requested(
                await agent.client.request_correction(
                    agent.table_id, send.round_id, send.report, send.reason
                )
            )
        elif send.phase == "irregularity" and send.kind is not None:
            result = await agent.report_irregularity(
                send.round_id, send.kind, after_initial_cards=send.after_initial_cards
            )
            finished = session.irregularity_applied(result)
            if finished is not None:
                self.record.append(finished)

    def _failed(self, send: Send, error: Exception) -> None:
        """``send`` did not go through: say why and what to do next, and leave the round
        where the controller has it."""
        session, agent = self.session, self.agent
        line = refusal_words(send, error)
        try:
            if send.phase == "correct":  # no report of the round: nothing to keep or resend
                log.error("the correction of round %s failed: %s", send.round_id, error)
                session.say(line)
            elif isinstance(error, ProgressiveOffline):
                if send.phase != "lockout":
                    agent.still_locked(send.round_id)
                session.offline(line)
            elif isinstance(error, ControllerRefused):
                log.error("the %s of round %s was refused: %s", send.phase, send.round_id, error)
                if send.phase == "lockout":
                    session.refused(send, line, next_round_id=agent.new_round())
                elif was_voided(error):  # the floor supervisor voided the held round
                    agent.voided_elsewhere(send.round_id)
                    session.voided_by_supervisor()
                else:
                    agent.still_locked(send.round_id)
                    session.refused(send, line)
            elif isinstance(error, ControllerUnreachable):
                log.error(
                    "the %s of round %s was not answered: %s", send.phase, send.round_id, error
                )
                session.halt(line)
            else:
                log.error("the %s of round %s failed", send.phase, send.round_id, exc_info=error)
                session.halt(line)
        except Exception as failure:  # never to the screen's event loop
            log.exception(
                "the %s of round %s: the refusal itself failed", send.phase, send.round_id
            )
            session.halt(refusal_words(send, failure))

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
