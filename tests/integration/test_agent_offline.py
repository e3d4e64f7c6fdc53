"""PROGRESSIVE OFFLINE against a real controller (in-process, stopped and started again on its
port): what counts as an answer, the refusal of a round while offline, and the table opening
again at the controller's first answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import pytest

from controller.runtime.server import ControllerServer
from controller.testing import TestPKI, free_port
from jackpot.cards import parse_cards
from jackpot.kinds import WagerKind
from table_agent.client import ControllerRefused
from table_agent.link import Link, ProgressiveOffline
from table_agent.outbox import Outbox
from table_agent.script import ScriptedRound
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    connect,
    controller_config,
    table_client,
)

POLL_S = 0.05
BOUND = 400  # polls: 20 s at most, for anything that takes a second or two


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_answers_and_refusals_of_content_keep_the_link_other_failures_do_not(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    clock = Clock()
    client = table_client(controller.port, pki, link=Link(2, table_id="t1", clock=clock))
    stranger = table_client(controller.port, pki, "t2", link=Link(2, clock=clock))
    nowhere = table_client(free_port(), pki, link=Link(2, clock=clock))
    agent = TableAgent("t1", client)
    try:
        clock.now = 10
        assert await client.probe("t1") and client.link.silent_s() == 0
        clock.now = 20
        with pytest.raises(ControllerRefused):  # INVALID_ARGUMENT: the controller read it
            await agent._lockout(agent.new_round(), [PlacedWager(9, WagerKind.PROGRESSIVE, 100)])
        assert client.link.silent_s() == 0
        clock.now = 30
        assert not await stranger.probe("t1")  # PERMISSION_DENIED: no answer for this table
        assert stranger.link.silent_s() == 30 and stranger.link.check()
        assert not await nowhere.probe("t1")  # nobody listens
        assert nowhere.link.check()
        meters = client.watch_meters("t1")
        clock.now = 40
        assert await anext(meters) == {"cs-main": 1_000_000}
        assert client.link.silent_s() == 0  # a meter snapshot is an answer too
        await meters.aclose()
    finally:
        for each in (client, stranger, nowhere):
            await each.close()


@pytest.fixture
async def port(redis_url: str, pki: TestPKI) -> AsyncIterator[int]:
    """The standard floor, created through a controller that is stopped again; a free port
    for the controllers the test starts."""
    server = ControllerServer(controller_config(redis_url, pki))
    await server.start()
    async with connect(f"127.0.0.1:{server.port}", pki) as (_, admin):
        await Floor(admin).create()
    await server.stop(grace_s=1)
    yield free_port()


async def _until(condition: str, check: Callable[[], bool]) -> None:
    for _ in range(BOUND):
        if check():
            return
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"not {condition} within {BOUND * POLL_S:.0f} s")


async def test_offline_table_refuses_a_round_then_opens_at_the_controllers_return(
    redis_url: str, port: int, pki: TestPKI, tmp_path: Path
) -> None:
    config = controller_config(redis_url, pki, listen=f"127.0.0.1:{port}")
    server = ControllerServer(config)
    await server.start()
    client = table_client(port, pki, link=Link(2, table_id="t1"), retry_for_s=60)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    simulator = TableSimulator(agent, SimulationConfig(wager_percent=100), say=lambda _: None)
    keeper = asyncio.create_task(agent.keep_link())
    try:
        await simulator.run(3)
        await server.stop(grace_s=1)
        await _until("offline", lambda: agent.link.offline)
        written = Outbox(tmp_path, "t1").path.read_text()
        hands = {
            6: parse_cards(STRAIGHT_FLUSH_HEARTS.split()),
            2: parse_cards(ROYAL_SPADES.split()),
        }
        with pytest.raises(ProgressiveOffline) as refused:
            await simulator.play_round(ScriptedRound(hands))
        assert str(refused.value).startswith(
            "PROGRESSIVE OFFLINE: no progressive wagers until the controller answers again "
            "(last answer "
        )
        waiting = asyncio.create_task(simulator.run(2))  # waits: no round while offline
        await asyncio.sleep(0.5)
        assert not waiting.done() and simulator.tally.rounds == 3
        assert Outbox(tmp_path, "t1").path.read_text() == written  # nothing new was written
        server = ControllerServer(config)
        await server.start()
        await asyncio.wait_for(waiting, timeout=20)  # the first probe's answer reopens
        await simulator.play_round(ScriptedRound(hands))
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
        await client.close()
    try:
        async with connect(f"127.0.0.1:{port}", pki) as (_, admin):
            meter = await Floor(admin).meter()
    finally:
        await server.stop(grace_s=1)
    assert simulator.tally.rounds == 6 and agent.link.offline_periods == 1
    assert meter.wagers_total == simulator.tally.meters["cs-main"].wagers
    hits = [award for _, award in simulator.tally.awards if award.award_kind == "percent_of_meter"]
    assert meter.hits_total == len(hits) >= 2 and agent.outbox_depth == 0
    acknowledged = [n for (_, outcome), n in agent.reports.items() if outcome == "acknowledged"]
    assert sum(acknowledged) == 12 and Outbox(tmp_path, "t1").pending() == []


async def test_a_probe_of_an_unregistered_table_is_an_answer(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    client = table_client(controller.port, pki, "nope")
    try:
        with pytest.raises(ControllerRefused) as refused:
            await client.get_table("nope")
        assert refused.value.code is grpc.StatusCode.NOT_FOUND
        assert await client.probe("nope")
    finally:
        await client.close()
