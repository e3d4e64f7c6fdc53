"""The table agent against a real controller: retries, recovery from its outbox, scripts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from controller.runtime.server import ControllerServer, ServerConfig
from controller.testing import TestPKI, free_port
from jackpot import tls
from jackpot.cards import parse_cards
from jackpot.kinds import WagerKind
from table_agent.client import (
    MAX_RETRY_DELAY_S,
    ControllerClient,
    ControllerRefused,
    ControllerUnreachable,
)
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.script import ScriptedRound
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import RoundStateError, TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    RESET_CENTS,
    ROYAL_SPADES,
    STRAIGHT_FLUSH_HEARTS,
    Floor,
    connect,
    controller_config,
    table_client,
)


@pytest.fixture
async def admin_floor_port(redis_url: str, pki: TestPKI) -> AsyncIterator[int]:
    """The standard floor, created through a controller that is stopped again; a free port
    for a controller the test starts later."""
    server = ControllerServer(controller_config(redis_url, pki))
    await server.start()
    async with connect(f"127.0.0.1:{server.port}", pki) as (_, admin):
        await Floor(admin).create()
    await server.stop(grace_s=1)
    yield free_port()


async def test_scripted_round_pays_both_hits(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    client = table_client(controller.port, pki)
    lines: list[str] = []
    simulator = TableSimulator(TableAgent("t1", client), SimulationConfig(), say=lines.append)
    hands = {6: parse_cards(STRAIGHT_FLUSH_HEARTS.split()), 2: parse_cards(ROYAL_SPADES.split())}
    await simulator.play_round(ScriptedRound(hands))
    await client.close()
    assert [award.hand for _, award in simulator.tally.awards] == ["straight_flush", "royal_flush"]
    assert "seat 6 Progressive Payout Wager: straight flush wins 10% of meter" in lines[0]
    assert "awaits a supervisor's validation" in lines[1]
    assert (await floor.meter()).amount_cents == RESET_CENTS


async def test_recovery_resends_and_voids_a_round_a_crash_left_locked(
    controller: ControllerServer, floor: Floor, tmp_path: Path, pki: TestPKI
) -> None:
    # A crash right after the lockout was written to the outbox, before it was sent.
    outbox = Outbox(tmp_path, "t1")
    wagers = [PlacedWager(seat, WagerKind.PROGRESSIVE, 100).to_data() for seat in (1, 4)]
    outbox.put("100:lockout", "lockout", 100, {"wagers": wagers})
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    assert await agent.recover() == 2  # the lockout, then the void of its round
    assert (await floor.meter()).amount_cents == RESET_CENTS
    assert Outbox(tmp_path, "t1").pending() == []
    assert agent.new_round() == 101
    await client.close()


async def test_refusals_are_final_and_states_are_enforced(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client)
    round_id = agent.new_round()
    with pytest.raises(RoundStateError):
        await agent.settle(round_id, SettleReport({}))
    with pytest.raises(ControllerRefused) as refused:
        await agent.lockout(round_id, [PlacedWager(9, WagerKind.PROGRESSIVE, 100)])
    assert "seat 9 does not exist" in refused.value.message
    await client.close()


async def test_unreachable_controller_gives_up_after_the_retry_window(pki: TestPKI) -> None:
    client = table_client(1, pki, retry_for_s=0.3)
    agent = TableAgent("t1", client)
    with pytest.raises(ControllerUnreachable, match="controller unreachable"):
        await agent.lockout(agent.new_round(), [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    await client.close()


async def test_a_report_is_retried_with_the_same_key_until_the_controller_answers(
    redis_url: str, admin_floor_port: int, pki: TestPKI
) -> None:
    client = table_client(admin_floor_port, pki, retry_for_s=20)
    agent = TableAgent("t1", client)
    round_id = agent.new_round()
    # The controller is not listening yet: the agent keeps sending the same lockout.
    pending = asyncio.create_task(
        agent.lockout(
            round_id,
            [
                PlacedWager(1, WagerKind.PROGRESSIVE, 100),
                PlacedWager(2, WagerKind.PROGRESSIVE, 100),
            ],
        )
    )
    await asyncio.sleep(6)  # long enough for gRPC's default reconnect backoff to reach 5 s
    assert not pending.done()
    server = ControllerServer(
        controller_config(redis_url, pki, listen=f"127.0.0.1:{admin_floor_port}")
    )
    await server.start()
    try:
        answer = await asyncio.wait_for(pending, timeout=15)
        assert sorted(w.seat for w in answer.accepted) == [1, 2]
        assert answer.meter_cents == {"cs-main": RESET_CENTS + 30}
    finally:
        await client.close()
        await server.stop(grace_s=1)


async def test_the_agent_learns_its_registration_and_last_round_from_get_table(
    controller: ControllerServer, floor: Floor, pki: TestPKI
) -> None:
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client)
    await agent.lockout(agent.new_round(), [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    info = await client.get_table("t1")
    await client.close()
    assert (info.last_round_id, info.max_round_step) == (1, 1000)
    stranger = table_client(controller.port, pki, "nope")
    with pytest.raises(ControllerRefused) as refused:
        await stranger.get_table("nope")
    await stranger.close()
    assert refused.value.code is grpc.StatusCode.NOT_FOUND
    layout = info.layout
    assert (layout.game, layout.seats) == ("caribbean-stud", 7)
    offer = layout.offer(WagerKind.PROGRESSIVE)
    assert offer is not None and offer.fixed and offer.min_cents == 100
    assert [o.kind for o in layout.offers] == [WagerKind.PROGRESSIVE]


async def test_an_agent_far_ahead_of_the_controller_continues_from_the_controller(
    controller: ControllerServer, floor: Floor, tmp_path: Path, pki: TestPKI
) -> None:
    """An outbox from an older agent (round ids from its clock) or a Redis restored from a
    backup: the stale lockout is refused for jumping ahead, recovery goes on, and the agent
    continues after the controller's last round instead of being refused for good."""
    outbox = Outbox(tmp_path, "t1")
    wagers = [PlacedWager(1, WagerKind.PROGRESSIVE, 100).to_data()]
    outbox.put("1764561600000:lockout", "lockout", 1_764_561_600_000, {"wagers": wagers})
    client = table_client(controller.port, pki)
    agent = TableAgent("t1", client, Outbox(tmp_path, "t1"))
    assert await agent.recover() == 1
    info = await client.get_table("t1")
    agent.continue_after(info.last_round_id)
    round_id = agent.new_round()
    assert round_id == 1
    answer = await agent.lockout(round_id, [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    assert [wager.seat for wager in answer.accepted] == [1]
    await client.close()
    assert (await floor.meter()).wagers_total == 1


async def test_calls_go_to_every_controller_replica_in_turn(
    controller: ControllerServer, floor: Floor, server_config: ServerConfig, pki: TestPKI
) -> None:
    replica = ControllerServer(server_config)
    await replica.start()
    ports = (controller.port, replica.port)
    client = ControllerClient(
        ",".join(f"127.0.0.1:{port}" for port in ports), tls_files=pki.client("table", "t1")
    )
    try:
        for _ in range(6):
            await client.get_table("t1")
    finally:
        await client.close()
        await replica.stop(grace_s=1)
    for server in (controller, replica):
        served = server.metrics.registry.get_sample_value(
            "grpc_server_handled_total",
            {
                "grpc_type": "unary",
                "grpc_service": "jackpot.v1.TableService",
                "grpc_method": "GetTable",
                "grpc_code": "OK",
            },
        )
        assert served and served >= 2, server.port


def test_retries_and_reconnects_are_bounded_to_a_second() -> None:
    """What makes an agent resume within about two seconds of the controller's return (gRPC's
    defaults alone back off to 5 s and more): reports are retried at most a second apart and
    channels reconnect at most a second apart. (A test asserts no wall-clock time.)"""
    options = {name: int(value) for name, value in tls.CHANNEL_OPTIONS if "backoff" in name}
    assert options["grpc.max_reconnect_backoff_ms"] <= 1000
    assert options["grpc.initial_reconnect_backoff_ms"] <= options["grpc.max_reconnect_backoff_ms"]
    assert MAX_RETRY_DELAY_S <= 1.0
