"""Never a silent reset: epochs, tables' journal positions, and a controller over lost state.

A Redis that comes back empty, older, or another installation's must never be served as if
nothing happened: the link group is stopped (UNAVAILABLE, tables keep their reports), its
health is NOT_SERVING with the reason, and only an operator's restore or resume (journaled)
brings it back.
"""

from __future__ import annotations

import random
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from redis.asyncio import Redis

from controller.runtime.rules_file import load_submission
from controller.runtime.server import LINK_GROUP_HEALTH, ControllerServer
from controller.security.position_key import read_position_key
from controller.store import keys
from controller.testing import TestPKI
from jackpot.cards import parse_cards
from jackpot.epochs import (
    REFUSE_TABLE,
    SERVE,
    STOP_GROUP,
    Epoch,
    JournalPosition,
    claimed_seq,
    judge,
    lineage_text,
    position_mac,
    verdict,
)
from jackpot.errors import InvalidArgument
from jackpot.kinds import WagerKind
from table_agent.client import ControllerRefused, ControllerUnreachable
from table_agent.outbox import Outbox
from table_agent.reports import SettleReport
from table_agent.simulator import SimulationConfig, TableSimulator
from table_agent.table import TableAgent
from table_agent.wagers import PlacedWager
from tests.helpers import (
    PAIR,
    ROYAL_SPADES,
    Channels,
    Floor,
    connect,
    controller_config,
    expect_refusal,
    journal,
    snapshot,
    table_client,
)

ROOT = Path(__file__).resolve().parents[2]
CARIBBEAN = ROOT / "deploy" / "rules" / "caribbean-stud.toml"


# ---------------------------------------------------------------- the judgement, Lua = Python


def test_the_verdict_accepts_what_redis_holds_and_names_what_it_lacks() -> None:
    epoch = Epoch("e2", (("e0", None), ("e1", 40)))
    assert verdict(JournalPosition(), epoch, 0, "t") is None  # a new table
    assert verdict(JournalPosition("e2", 7), epoch, 7, "t") is None
    assert "ends at #6" in (verdict(JournalPosition("e2", 7), epoch, 6, "t") or "")
    assert verdict(JournalPosition("e1", 40), epoch, 50, "t") is None
    assert "only up to #40" in (verdict(JournalPosition("e1", 41), epoch, 50, "t") or "")
    assert verdict(JournalPosition("e0", 10**9), epoch, 50, "t") is None  # accepted: '*'
    assert "replaced or created anew" in (verdict(JournalPosition("x", 1), epoch, 50, "t") or "")


def test_a_later_answer_replaces_a_position_only_forward() -> None:
    here = JournalPosition("a", 10)
    assert here.later(JournalPosition("a", 9)) == here
    assert here.later(JournalPosition("a", 11)) == JournalPosition("a", 11)
    assert here.later(JournalPosition("b", 1)) == JournalPosition("b", 1)  # a new epoch
    assert here.later(JournalPosition()) == here
    with pytest.raises(InvalidArgument, match="sequence number"):
        JournalPosition("a", -1)
    with pytest.raises(InvalidArgument, match="epoch id"):
        JournalPosition("a:b", 1)


async def test_the_lua_judges_every_position_as_the_reference_does(redis_client: Redis) -> None:
    """check_position.lua against jackpot.epochs.judge, on random records, positions
    verified or not, and a first unverified claim of this table, another or none."""
    from controller.store.scripts import script_source

    script = redis_client.register_script(script_source("check_position"))
    rng = random.Random(8)
    ids = ["e0", "e1", "e2", "e3"]
    outcomes: set[str] = set()
    for case in range(400):
        current = rng.choice(ids)
        ancestors = tuple(
            (a, rng.choice([None, rng.randrange(0, 60)]))
            for a in rng.sample([i for i in ids if i != current], rng.randrange(0, 3))
        )
        seq = rng.randrange(0, 60)
        known = JournalPosition(
            rng.choice(["", *ids]), rng.randrange(0, 70), verified=rng.random() < 0.5
        )
        first = rng.choice(["", f"{current} table t", f"{current} table u", "e9 table u"])
        epoch_key, journal_key, seq_key = (f"case:{case}:{name}" for name in "ejs")
        await redis_client.hset(
            epoch_key,
            mapping={
                "id": current,
                "lineage": lineage_text(ancestors),
                "stopped": "",
                "unverified_claim": first,
            },
        )
        await redis_client.set(seq_key, seq)
        action, expected = judge(known, Epoch(current, ancestors), seq, "table t", first)
        outcomes.add(action)
        try:
            await script(
                keys=[epoch_key, journal_key, seq_key], args=["table t", *known_args(known)]
            )
        except Exception as error:
            assert expected is not None and expected in str(error), (case, known, error)
            stopped = await redis_client.hget(epoch_key, "stopped")
            claim = await redis_client.hget(epoch_key, "unverified_claim")
            if action == STOP_GROUP:
                assert stopped == expected
                assert await redis_client.xlen(journal_key) == 1  # the stop is journaled
            else:
                assert action == REFUSE_TABLE and stopped == "", (case, known, error)
                assert "only this table is refused" in str(error)
                if first.startswith(current):  # this epoch's claim was made: nothing written
                    assert await redis_client.xlen(journal_key) == 0
                    assert claim == first
                else:  # the first claim of the epoch: remembered and journaled
                    assert claim == f"{current} table t"
                    rows = await redis_client.xrange(journal_key) or []
                    entries = [fields or {} for _, fields in rows]
                    assert [e["type"] for e in entries] == ["unverified_claim"], case
                    assert entries[0]["by"] == "table t" and expected in entries[0]["reason"]
                    assert str(await redis_client.get(seq_key)) == str(seq + 1)
        else:
            assert action == SERVE, (case, known, expected)
    assert outcomes == {SERVE, REFUSE_TABLE, STOP_GROUP}


def signed(pki: TestPKI, table_id: str, epoch: str, seq: int) -> JournalPosition:
    """A position with the mac the test controller (its --position-key) answers with."""
    key = read_position_key(pki.position_key())
    return JournalPosition(epoch, seq, position_mac(key, table_id, epoch, seq))


def known_args(known: JournalPosition) -> list[str | int]:
    return [known.epoch, claimed_seq(known)]


# ---------------------------------------------------------------- tables and the controller


async def play(
    controller: ControllerServer, pki: TestPKI, outbox: Outbox, rounds: int
) -> TableAgent:
    """``rounds`` simulated rounds at table t1 with a durable outbox."""
    client = table_client(controller.port, pki, retry_for_s=1.0)
    agent = TableAgent("t1", client, outbox)
    info = await client.get_table("t1")
    agent.continue_after(info.last_round_id)
    await TableSimulator(agent, SimulationConfig(void_percent=0)).run(rounds)
    return agent


async def health_of(controller: ControllerServer, pki: TestPKI, service: str) -> int:
    channels = Channels(f"127.0.0.1:{controller.port}", pki)
    try:
        stub = health_pb2_grpc.HealthStub(channels("auditor", "lab"))
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service))
        return int(reply.status)
    finally:
        await channels.close()


async def test_a_table_ahead_of_redis_stops_its_link_group_until_an_operator_resumes_it(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path, "t1")
    agent = await play(controller, pki, outbox, 3)
    position = outbox.last_position()
    assert position.epoch and position.seq == int(
        str(await redis_client.get(keys.LinkGroupKeys("floor").seq))
    )
    # Redis "restored from an older copy": the table was acknowledged more than Redis holds
    # (answered by this controller: the position carries its mac).
    agent.client.known = signed(pki, "t1", position.epoch, position.seq + 5)
    with pytest.raises(ControllerUnreachable, match="Redis lost acknowledged steps"):
        await TableSimulator(agent, SimulationConfig()).run(1)
    entries = await journal(redis_client)
    assert entries[-1][1]["type"] == "link_group_stopped"
    # Every table of the group is refused now, whatever it knows.
    other = table_client(controller.port, pki, retry_for_s=0.5)
    with pytest.raises(ControllerUnreachable, match="link group"):
        await other.get_table("t1")
    await controller.check_state()
    assert controller.guard.problems["floor"].startswith("table t1 was acknowledged")
    assert (
        await health_of(controller, pki, LINK_GROUP_HEALTH + "floor")
        == health_pb2.HealthCheckResponse.NOT_SERVING
    )
    async with connect(f"127.0.0.1:{controller.port}", pki) as (_, admin):
        from jackpot.v1 import jackpot_pb2 as pb

        stopped = position.epoch  # the epoch of the stopped group, as the operator sees it
        await expect_refusal(
            admin.ResumeLinkGroup(pb.ResumeLinkGroupRequest(link_group_id="floor", epoch=stopped)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "reason is required",
        )
        await expect_refusal(
            admin.ResumeLinkGroup(pb.ResumeLinkGroupRequest(link_group_id="floor", reason="x")),
            grpc.StatusCode.INVALID_ARGUMENT,
            "epoch is required",
        )
        await expect_refusal(  # not the epoch reviewed: never resumed blind
            admin.ResumeLinkGroup(
                pb.ResumeLinkGroupRequest(link_group_id="floor", reason="x", epoch="other")
            ),
            grpc.StatusCode.FAILED_PRECONDITION,
            "not the epoch",
        )
        request = pb.ResumeLinkGroupRequest(
            link_group_id="floor", reason="steps after #N paid by hand", epoch=stopped
        )
        group = await admin.ResumeLinkGroup(request)
        assert group.stopped == "" and group.journal.epoch != position.epoch
        again = await admin.ResumeLinkGroup(request)  # a retry: the same answer, nothing changed
        assert again.journal == group.journal
        await expect_refusal(
            admin.ResumeLinkGroup(
                pb.ResumeLinkGroupRequest(link_group_id="floor", reason="again", epoch=stopped)
            ),
            grpc.StatusCode.FAILED_PRECONDITION,
            "not stopped",
        )
    resumed = (await journal(redis_client))[-1][1]
    assert resumed["type"] == "link_group_resumed"
    assert resumed["by"] == "jackpot://operator/ops"
    assert len(resumed["by_cert"]) == 64  # the certificate's SHA-256
    # The table adopts the new epoch with its next answer and plays on.
    agent.client = table_client(controller.port, pki)
    agent.client.known = JournalPosition(position.epoch, position.seq + 5)
    await TableSimulator(agent, SimulationConfig()).run(2)
    assert agent.client.known.epoch == group.journal.epoch
    assert await health_of(controller, pki, "") == health_pb2.HealthCheckResponse.SERVING


async def test_redis_emptied_under_a_running_controller_is_not_served(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis, tmp_path: Path
) -> None:
    outbox = Outbox(tmp_path, "t1")
    await play(controller, pki, outbox, 2)
    await controller.guard.check()
    await redis_client.flushall()
    await controller.check_state()  # what the refresh loop does every 2 s
    assert "Redis lost the installation record" in controller.guard.problems["floor"]
    assert controller.guard.nothing_to_serve()
    assert await health_of(controller, pki, "") == health_pb2.HealthCheckResponse.NOT_SERVING
    sample = controller.metrics.registry.get_sample_value(
        "jackpot_link_group_serving", {"link_group": "floor"}
    )
    assert sample == 0
    client = table_client(controller.port, pki, retry_for_s=0.5)
    with pytest.raises(ControllerUnreachable, match="link group floor is not served"):
        await client.get_table("t1")
    # An operator cannot create it again by hand either: this controller saw it.
    async with connect(f"127.0.0.1:{controller.port}", pki) as (_, admin):
        await expect_refusal(
            Floor(admin).create(), grpc.StatusCode.UNAVAILABLE, "is never created again"
        )


async def test_a_restart_over_an_empty_redis_creates_nothing_and_says_why(
    redis_url: str, redis_client: Redis, pki: TestPKI, tmp_path: Path
) -> None:
    rules = (load_submission(CARIBBEAN),)
    first = ControllerServer(controller_config(redis_url, pki, rules=rules, first_install=True))
    await first.start()
    outbox = Outbox(tmp_path, "cs-1")
    client = table_client(first.port, pki, "cs-1")
    agent = TableAgent("cs-1", client, outbox)
    await TableSimulator(agent, SimulationConfig(void_percent=0)).run(3)
    await first.stop(grace_s=1)
    await redis_client.flushall()  # the volume is lost

    again = ControllerServer(controller_config(redis_url, pki, rules=rules))
    await again.start()
    try:
        assert await redis_client.dbsize() == 0, "nothing may be created on an emptied Redis"
        assert "no installation record" in again.guard.problems["floor"]
        assert await health_of(again, pki, "") == health_pb2.HealthCheckResponse.NOT_SERVING
        client = table_client(again.port, pki, "cs-1", retry_for_s=0.5)
        with pytest.raises(ControllerUnreachable, match="start once with --first-install"):
            await client.get_table("cs-1")
    finally:
        await again.stop(grace_s=1)

    # The operator's mistake: --first-install over the lost Redis. The tables know better.
    wrong = ControllerServer(controller_config(redis_url, pki, rules=rules, first_install=True))
    await wrong.start()
    try:
        agent.client = table_client(wrong.port, pki, "cs-1", retry_for_s=0.5)
        agent.client.known = outbox.last_position()
        with pytest.raises(ControllerUnreachable, match="replaced or created anew"):
            await agent.client.get_table("cs-1")
        entries = await journal(redis_client)
        assert entries[-1][1]["type"] == "link_group_stopped"
    finally:
        await wrong.stop(grace_s=1)


async def test_a_lost_meter_is_never_created_again(
    controller: ControllerServer, floor: Floor, redis_client: Redis
) -> None:
    await redis_client.delete(keys.LinkGroupKeys("floor").meter("cs-main"))
    await expect_refusal(
        floor.create(), grpc.StatusCode.UNAVAILABLE, "a meter is never created again"
    )


async def test_a_link_group_without_its_epoch_record_is_never_given_one(
    redis_url: str, redis_client: Redis, pki: TestPKI
) -> None:
    """Every link group gets its epoch record when it is created: a Redis holding a link
    group without it (and without the installation record) is incomplete. A start neither
    serves it nor writes anything into it, and says why."""
    first = ControllerServer(controller_config(redis_url, pki))
    await first.start()
    async with connect(f"127.0.0.1:{first.port}", pki) as (_, admin):
        await Floor(admin).create()
    await first.stop(grace_s=1)
    await redis_client.delete(keys.LinkGroupKeys("floor").epoch, keys.INSTALLATION)
    before = await snapshot(redis_client)

    server = ControllerServer(controller_config(redis_url, pki))
    await server.start()
    try:
        assert (
            "holds no installation record: its state is incomplete"
            in (server.guard.problems["floor"])
        )
        assert await health_of(server, pki, "") == health_pb2.HealthCheckResponse.NOT_SERVING
    finally:
        await server.stop(grace_s=1)
    await redis_client.hset(keys.INSTALLATION, "id", "restored-by-hand")
    server = ControllerServer(controller_config(redis_url, pki))
    await server.start()
    try:
        assert "incomplete (no epoch record)" in server.guard.problems["floor"]
    finally:
        await server.stop(grace_s=1)
    await redis_client.delete(keys.INSTALLATION)
    assert await snapshot(redis_client) == before


async def test_a_round_lost_with_redis_is_never_refused_as_never_locked_out(
    controller: ControllerServer, floor: Floor, pki: TestPKI, redis_client: Redis
) -> None:
    """Between Redis losing its data and the next refresh, a settlement of a round whose
    lockout was acknowledged must not be refused as 'never locked out' (a final refusal the
    table would drop): it is UNAVAILABLE, and the table keeps it. So is a table a replica
    never served, on a Redis without any state."""
    client = table_client(controller.port, pki, retry_for_s=0.5)
    agent = TableAgent("t1", client)
    agent.continue_after((await client.get_table("t1")).last_round_id)
    round_id = agent.new_round()
    await agent.lockout(round_id, [PlacedWager(1, WagerKind.PROGRESSIVE, 100)])
    await redis_client.flushall()  # before the controller's refresh notices
    report = SettleReport({1: parse_cards(ROYAL_SPADES.split())}, dealer=parse_cards(PAIR.split()))
    # Said by the script (no epoch record), or by the state check if it looked first.
    with pytest.raises(ControllerUnreachable, match="its state is missing"):
        await agent.settle(round_id, report)
    fresh = ControllerServer(controller_config(controller.config.redis_url, pki))
    await fresh.start()
    try:
        stranger = table_client(fresh.port, pki, retry_for_s=0.5)
        with pytest.raises(ControllerRefused, match="not registered"):  # it knows nothing
            await stranger.get_table("t1")
        stranger.known = agent.client.known  # the table was acknowledged: lost, not unknown
        with pytest.raises(ControllerUnreachable, match="state is missing"):
            await stranger.get_table("t1")
    finally:
        await fresh.stop(grace_s=1)
