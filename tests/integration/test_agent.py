"""The table agent against a real controller: retries, recovery from its outbox, scripts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from grpc import aio

from controller.domain.cards import parse_cards
from controller.server import ControllerServer, ServerConfig
from controller.testing import free_port
from jackpot.v1 import jackpot_pb2_grpc as pb_grpc
from table_agent.client import ControllerClient, ControllerRefused, ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.script import ScriptedRound
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import RoundStateError, TableAgent
from table_agent.wagers import WagerKind
from tests.helpers import RESET_CENTS, ROYAL_SPADES, STRAIGHT_FLUSH_HEARTS, Floor


@pytest.fixture
async def admin_floor_port(redis_url: str) -> AsyncIterator[int]:
    """The standard floor, created through a controller that is stopped again; a free port
    for a controller the test starts later."""
    server = ControllerServer(
        ServerConfig(listen="127.0.0.1:0", redis_url=redis_url, metrics_port=None)
    )
    await server.start()
    async with aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        await Floor(pb_grpc.AdminServiceStub(channel)).create()
    await server.stop(grace_s=1)
    yield free_port()


async def test_scripted_round_pays_both_hits(controller: ControllerServer, floor: Floor) -> None:
    client = ControllerClient(f"127.0.0.1:{controller.port}")
    lines: list[str] = []
    simulator = TableSimulator(TableAgent("t1", client), SimulationConfig(), say=lines.append)
    hands = {6: parse_cards(STRAIGHT_FLUSH_HEARTS.split()), 2: parse_cards(ROYAL_SPADES.split())}
    await simulator.play_round(ScriptedRound(hands))
    await client.close()
    assert [award.hand for _, award in simulator.tally.awards] == ["straight_flush", "royal_flush"]
    assert "seat 6 Progressive Payout Wager: straight_flush wins 10% of meter" in lines[0]
    assert "awaits a supervisor's validation" in lines[1]
    assert (await floor.meter()).amount_cents == RESET_CENTS


async def test_recovery_resends_and_voids_a_round_a_crash_left_locked(
    controller: ControllerServer, floor: Floor, tmp_path: Path
) -> None:
    target = f"127.0.0.1:{controller.port}"
    # A crash right after the lockout was written to the outbox, before it was sent.
    outbox = Outbox(tmp_path, "t1")
    outbox.put("100:lockout", "lockout", 100, {"wagers": [[1, 100], [4, 100]]})
    client = ControllerClient(target)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    assert await agent.recover() == 2  # the lockout, then the void of its round
    assert (await floor.meter()).amount_cents == RESET_CENTS
    assert Outbox(tmp_path, "t1").pending() == []
    assert agent.new_round() > 100
    await client.close()


async def test_refusals_are_final_and_states_are_enforced(
    controller: ControllerServer, floor: Floor
) -> None:
    client = ControllerClient(f"127.0.0.1:{controller.port}")
    agent = TableAgent("t1", client)
    round_id = agent.new_round()
    with pytest.raises(RoundStateError):
        await agent.settle(round_id, SettleReport({}))
    with pytest.raises(ControllerRefused) as refused:
        await agent.lockout(round_id, [(9, 100)])
    assert "seat 9 does not exist" in refused.value.message
    await client.close()


async def test_unreachable_controller_gives_up_after_the_retry_window() -> None:
    client = ControllerClient("127.0.0.1:1", retry_for_s=0.3)
    agent = TableAgent("t1", client)
    with pytest.raises(ControllerUnreachable, match="controller unreachable"):
        await agent.lockout(agent.new_round(), [(1, 100)])
    await client.close()


async def test_a_report_is_retried_with_the_same_key_until_the_controller_answers(
    redis_url: str, admin_floor_port: int
) -> None:
    client = ControllerClient(f"127.0.0.1:{admin_floor_port}", retry_for_s=20)
    agent = TableAgent("t1", client)
    round_id = agent.new_round()
    # The controller is not listening yet: the agent keeps sending the same lockout.
    pending = asyncio.create_task(agent.lockout(round_id, [(1, 100), (2, 100)]))
    await asyncio.sleep(0.5)
    assert not pending.done()
    server = ControllerServer(
        ServerConfig(listen=f"127.0.0.1:{admin_floor_port}", redis_url=redis_url, metrics_port=None)
    )
    await server.start()
    try:
        answer = await asyncio.wait_for(pending, timeout=15)
        assert sorted(answer.accepted_seats) == [1, 2]
        assert answer.meter_cents == {"cs-main": RESET_CENTS + 30}
    finally:
        await client.close()
        await server.stop(grace_s=1)


async def test_the_agent_learns_a_shorthand_registration_from_list_tables(
    controller: ControllerServer, floor: Floor
) -> None:
    client = ControllerClient(f"127.0.0.1:{controller.port}")
    layout = await client.list_table("t1")
    assert await client.list_table("nope") is None
    await client.close()
    assert layout is not None
    assert (layout.game, layout.seats) == ("caribbean-stud", 7)
    offer = layout.offer(WagerKind.PROGRESSIVE)
    assert offer is not None and offer.fixed and offer.min_cents == 100
    assert [o.kind for o in layout.offers] == [WagerKind.PROGRESSIVE]
