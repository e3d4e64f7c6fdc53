"""The faults, and the table of scenarios the chaos test runs.

A scenario is a name, a :class:`~tests.chaos.harness.Topology` and a fault: a function that
breaks something while the tables play and returns once it is healed (a restarted process
is serving again, a proxy healed). It may add its own checks to ``rig.checks``; the
harness then checks the money (see :mod:`tests.chaos.harness`).

To add one, write its fault here and add a line to :data:`SCENARIOS`. A fault may assert
what the operator must see on the way (a controller refusing to serve, and why) before it
heals what it broke; a scenario whose outcome is not "the money is exactly as the tables were
told" gives its own ``check`` instead of :func:`tests.chaos.checks.verify` (Redis restarted
empty: :func:`verify_what_the_restore_kept`). A different Redis (replicas and Sentinels)
needs a :class:`~tests.chaos.harness.Topology` field and a branch in
``Rig.__init__``/``Rig.start``; the Sentinel failover under load has its own test,
test_sentinel_failover.py, with checks of the same kind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from table_agent.outbox import SUMS
from table_agent.table import RESTART_VOID_REASON
from tests.chaos.agents import AgentProcess
from tests.chaos.checks import check_audit, check_kept_playing, check_processes, verify
from tests.chaos.harness import LINK_GROUP, ROUNDS, TABLES, Fault, Rig, Topology, pause_briefly
from tests.chaos.journal import Journal, money

BEYOND_DEADLINES_S = 6.5
"""Longer than the controller's Redis socket timeout (5 s) and the agents' call deadline
(5 s): every call in flight fails, and the tables retry."""
LOST_ANSWER_ROUNDS = 5
"""Times answers are lost: each time a table whose request in flight was a read (a
settlement reads its round first) loses no write, but all three tables, five times, do."""
KILL_ATTEMPTS = 50
"""Tries to catch an agent between a lockout and its settlement."""
RESUME_WAIT_S = 20.0
"""How long, after a resume, every table has to be answered or to stop on a lost round."""


def kill_one_of_two_controllers(rig: Rig) -> None:
    """kill -9 one replica; the agents, which list both, go on with the other."""
    rig.kill_controller(0)
    rig.down.add(0)


def kill_the_only_controller(rig: Rig) -> None:
    """kill -9 the only controller with requests in flight, and start it again on the same
    port a second later. Redis's replies are held for a moment first (the proxy), so the
    kill always finds requests in flight, some of them already applied: the tables retry
    them at the new process."""
    assert rig.proxy is not None
    rig.proxy.partition(upstream=False)
    time.sleep(0.5)
    rig.kill_controller(0)
    rig.proxy.heal()
    time.sleep(1)  # the tables find nobody to talk to, and retry
    rig.controllers[0].start()


def kill_an_agent_mid_round(rig: Rig) -> None:
    """kill -9 table cs-1's agent with a round locked out and not settled, then start it
    again with the same outbox: it re-sends what was not acknowledged and voids that round.

    The agent is paused (SIGSTOP) and its outbox read to know where it is: with a round
    unfinished it is killed, otherwise resumed and tried again a moment later."""
    agent = rig.agents["cs-1"]
    for _ in range(KILL_ATTEMPTS):
        agent.pause()
        unfinished = agent.outbox.unfinished_rounds()
        if unfinished:
            agent.kill()
            break
        agent.signal(signal.SIGCONT)
        pause_briefly()
    else:
        raise AssertionError(f"never caught table cs-1 mid-round in {KILL_ATTEMPTS} tries")
    agent.start(rounds=ROUNDS // 2)
    left_locked = unfinished[-1]

    def voided_at_restart(journal: Journal) -> list[str]:
        voided = journal.rounds_voided("cs-1", RESTART_VOID_REASON)
        if voided != [left_locked]:
            return [
                f"table cs-1: round {left_locked} was left locked by the kill; the rounds "
                f"voided for a restart are {voided}"
            ]
        return []

    rig.checks.append(voided_at_restart)


def kill_redis_and_restart_it_from_its_aof(rig: Rig) -> None:
    """kill -9 redis-server; a second later start it again on the same port and directory:
    it loads its append-only file (``appendfsync always``: everything acknowledged)."""
    assert rig.redis.process is not None
    rig.redis.process.kill()
    rig.redis.process.wait()
    time.sleep(1)
    rig.redis.start()


def stop_redis_beyond_the_deadlines(rig: Rig) -> None:
    """SIGSTOP redis-server for longer than every deadline, then SIGCONT: it answers,
    late, what it was sent - also requests whose callers gave up."""
    pid = rig.redis_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(BEYOND_DEADLINES_S)
    finally:
        os.kill(pid, signal.SIGCONT)


def slow_link_to_redis(rig: Rig) -> None:
    """Every chunk between the controller and Redis half a second late, each way, for
    three seconds: calls are slow, not failed."""
    assert rig.proxy is not None
    rig.proxy.delay(0.5)
    time.sleep(3)
    rig.proxy.heal()


def reset_links_to_redis(rig: Rig) -> None:
    """Every connection between the controller and Redis reset (RST), five times, 0.4 s
    apart: requests are cut before, during and after their script ran."""
    assert rig.proxy is not None
    for _ in range(5):
        time.sleep(0.4)
        rig.proxy.reset()


def lose_answers_from_redis(rig: Rig) -> None:
    """Five times: Redis's replies held while requests reach it and run, then every
    connection reset, so their answers are lost; the tables retry, and the controller must
    answer each retry from what the first run stored, applying nothing twice."""
    assert rig.proxy is not None
    for _ in range(LOST_ANSWER_ROUNDS):
        rig.proxy.partition(upstream=False)
        time.sleep(0.6)
        rig.proxy.reset()
        rig.proxy.heal()
        time.sleep(0.3)

    def some_retry_was_a_replay(journal: Journal) -> list[str]:
        if rig.replays() == 0:
            return ["no retry was answered from a stored reply: no answer was lost"]
        return []

    rig.checks.append(some_retry_was_a_replay)


def partition_from_redis(rig: Rig) -> None:
    """Nothing flows between the controller and Redis for longer than every deadline, and
    connections stay open; then the network heals and delivers what it held."""
    assert rig.proxy is not None
    rig.proxy.partition()
    try:
        time.sleep(BEYOND_DEADLINES_S)
    finally:
        rig.proxy.heal()


def _jackpotctl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.ctl.main", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _redis_keys(rig: Rig) -> int:
    client = redis.Redis.from_url(rig.redis.url)
    try:
        return int(client.dbsize())
    finally:
        client.close()


def _epoch(rig: Rig) -> tuple[str, int]:
    client = redis.Redis.from_url(rig.redis.url, decode_responses=True)
    try:
        epoch = client.hget(f"jp:{{lg:{LINK_GROUP}}}:epoch", "id") or ""
        return str(epoch), int(client.get(f"jp:{{lg:{LINK_GROUP}}}:seq") or 0)
    finally:
        client.close()


def restart_redis_empty(rig: Rig) -> None:
    """Redis loses its data: after a journal export, kill -9 redis-server, delete its
    append-only file, start it empty on the same port. The controller must refuse to serve
    and say why - running, and after a restart (without --first-install) - and create
    nothing; then an operator restores the export (jackpotctl restore) and, the tables
    acknowledged after the export having stopped the link group, resumes it (jackpotctl
    link-groups resume). Steps acknowledged between the export and the loss are lost: the
    scenario's check accounts for exactly those."""
    export = rig.directory / "export"
    url = rig.redis.url
    exported = _jackpotctl("journal", "export", "--redis", url, "--dir", str(export))
    assert exported.returncode == 0, exported.stderr
    snapshot = json.loads((export / LINK_GROUP / "snapshot.json").read_text())
    rig.facts["epoch"], rig.facts["exported_seq"] = snapshot["epoch"]["id"], int(snapshot["seq"])
    # Some table is acknowledged beyond the export before the loss.
    rig.wait_for(
        "a table acknowledged after the export",
        lambda: any(
            ack.seq > rig.facts["exported_seq"]
            for agent in rig.agents.values()
            for ack in agent.acknowledged().acks.values()
        ),
    )
    assert rig.redis.process is not None
    rig.redis.process.kill()
    rig.redis.process.wait()
    for lost in rig.redis.data_dir.glob("appendonly*"):
        shutil.rmtree(lost) if lost.is_dir() else lost.unlink()
    (rig.redis.data_dir / "dump.rdb").unlink(missing_ok=True)
    rig.redis.start()
    controller = rig.controllers[0]
    rig.wait_for(
        "the controller to refuse to serve", lambda: _healthz(controller.metrics_port) == 503
    )
    rig.wait_for("the controller to say why", lambda: "NOT SERVED" in controller.log_tail(20_000))
    assert "Redis lost the installation record" in controller.log_tail(20_000)
    # An ordinary restart (no --first-install) creates nothing either, and says why.
    rig.kill_controller(0)
    controller.first_install = False
    controller.start(serving=False)
    rig.wait_for(
        "the restarted controller to say why",
        lambda: "no installation record" in controller.log_tail(20_000),
    )
    assert _redis_keys(rig) == 0, "a controller created state on an emptied Redis"
    assert _healthz(controller.metrics_port) == 503
    # The operator restores the export (its journal was never trimmed: any checkpoint key
    # verifies it, and a restore requires one); the controller serves it within its refresh.
    public_key = rig.directory / "checkpoint.pub"
    public_key.write_bytes(
        Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    restored = _jackpotctl(
        "restore",
        "--redis",
        url,
        "--from",
        str(export),
        "--link-group",
        LINK_GROUP,
        "--reason",
        "chaos: Redis restarted empty",
        "--checkpoint-key",
        str(public_key),
    )
    assert restored.returncode == 0, restored.stderr
    # Served within its refresh - or already stopped again by a table ahead of the restore,
    # which can follow within milliseconds, before a poll sees the 200 (a stop is only
    # recorded on a served link group).
    rig.wait_for(
        "the restored link group to be served",
        lambda: _healthz(controller.metrics_port) == 200 or _stopped(rig),
    )
    # A table acknowledged after the export stops it at its next call; the operator, having
    # reconciled those steps, resumes it.
    rig.wait_for("a table ahead of the restore to stop the link group", lambda: _stopped(rig))
    resumed = _jackpotctl(
        "--controller",
        controller.target,
        *controller.client_args("operator", "chaos-operator"),
        "link-groups",
        "resume",
        LINK_GROUP,
        "--reason",
        "chaos: steps after the export reconciled",
    )
    assert resumed.returncode == 0, resumed.stderr
    _restart_tables_that_lost_a_round(rig)


def _restart_tables_that_lost_a_round(rig: Rig) -> None:
    """A table whose round in progress was lost with Redis has its next report of that round
    refused ("never locked out": the restored Redis does not have it); the simulated agent
    stops there, as a dealer would, and is started again. Waits (bounded) until every table
    has either been answered in the new epoch or stopped so."""
    deadline = time.monotonic() + RESUME_WAIT_S
    lost_epoch = rig.facts["epoch"]
    while True:
        stopped = [a for a in rig.agents.values() if a.exit_code]
        answered = [
            a
            for a in rig.agents.values()
            if any(ack.epoch not in ("", lost_epoch) for ack in a.acknowledged().acks.values())
        ]
        if len(stopped) + len(answered) >= len(rig.agents) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for agent in stopped:
        assert all("never locked out" in text for text in agent.refusals()), agent.refusals()
        agent.start(ROUNDS // 2)


def _stopped(rig: Rig) -> bool:
    client = redis.Redis.from_url(rig.redis.url, decode_responses=True)
    try:
        return bool(client.hget(f"jp:{{lg:{LINK_GROUP}}}:epoch", "stopped"))
    finally:
        client.close()


def _kept(
    agent: AgentProcess, lost_epoch: str, exported_seq: int
) -> tuple[dict[str, int], set[int]]:
    """What a table's acknowledgements moved that the restored Redis must hold (everything
    but the lost epoch's steps after the export), and the rounds of those lost steps."""
    kept = dict.fromkeys(SUMS, 0)
    lost_rounds: set[int] = set()
    for ack in agent.every_ack():
        if ack.epoch == lost_epoch and ack.seq > exported_seq:
            lost_rounds.add(ack.round_id)
            continue
        for name in SUMS:
            kept[name] += ack.sums.get(name, 0)
    for group in agent.acknowledged().recovered:  # delivered at a restart, after the resume
        for name in SUMS:
            kept[name] += group.sums[name]
    return kept, lost_rounds


def verify_what_the_restore_kept(rig: Rig, marks: dict[str, int]) -> None:
    """After a Redis restarted empty and restored from an export at journal #S: each table's
    acknowledgements at or before #S of the lost epoch, and every one of a later epoch, equal
    its journal entries in Redis to the microcent; the acknowledgements after #S of the lost
    epoch (lost with Redis, to be reconciled by hand) are all that is missing, and the only
    refusals are of those rounds; the audit is OK, the tables played on, and the restore, the
    stop and the resume are journaled."""
    journal = Journal(rig.redis.url, LINK_GROUP, TABLES)
    problems = [*check_audit(rig), *check_kept_playing(rig, journal, marks), *check_processes(rig)]
    lost = 0
    for table_id, agent in rig.agents.items():
        kept, lost_rounds = _kept(agent, rig.facts["epoch"], rig.facts["exported_seq"])
        lost += len(lost_rounds)
        recorded = journal.totals(table_id)
        problems += [
            f"table {table_id}: kept acknowledgements tally {name} "
            f"{money(name, kept[name])}, its journal {money(name, recorded[name])}"
            for name in SUMS
            if kept[name] != recorded[name]
        ]
        problems += [
            f"table {table_id}: refused, not a lost round: {refusal}"
            for refusal in agent.refusals()
            if int(refusal.partition(":")[0]) not in lost_rounds
        ]
    if lost == 0:
        problems.append("no acknowledgement was lost: the scenario did not test a loss")
    problems += [
        f"no {kind} entry in the journal"
        for kind in ("restored", "link_group_stopped", "link_group_resumed")
        if not journal.of_type(kind)
    ]
    assert not problems, "\n".join(problems) + f"\n(processes' logs in {rig.directory})"


@dataclass(frozen=True)
class Scenario:
    """One line of the table: a fault on a topology, and what must hold afterwards (given
    the rig and each table's last acknowledged round when the fault was healed)."""

    name: str
    fault: Fault
    topology: Topology = field(default_factory=Topology)
    check: Callable[[Rig, dict[str, int]], None] = verify


SCENARIOS = (
    Scenario("kill -9 one of two controllers", kill_one_of_two_controllers, Topology(2)),
    Scenario(
        "kill -9 the only controller, restart it", kill_the_only_controller, Topology(proxy=True)
    ),
    Scenario("kill -9 an agent mid-round, restart it", kill_an_agent_mid_round),
    Scenario(
        "kill -9 redis-server, restart it from its AOF", kill_redis_and_restart_it_from_its_aof
    ),
    Scenario("SIGSTOP redis-server beyond the deadlines", stop_redis_beyond_the_deadlines),
    Scenario("slow link to Redis", slow_link_to_redis, Topology(proxy=True)),
    Scenario("connections to Redis reset", reset_links_to_redis, Topology(proxy=True)),
    Scenario("answers from Redis lost", lose_answers_from_redis, Topology(proxy=True)),
    Scenario("partition from Redis, healed", partition_from_redis, Topology(proxy=True)),
    Scenario(
        "redis-server restarted empty, restored, resumed",
        restart_redis_empty,
        check=verify_what_the_restore_kept,
    ),
)
