"""The faults, and the table of scenarios the chaos test runs.

A scenario is a name, a :class:`~tests.chaos.harness.Topology` and a fault: a function that
breaks something while the tables play and returns once it is healed (a restarted process
is serving again, a proxy healed). It may add its own checks to ``rig.checks``; the
harness then checks the money (see :mod:`tests.chaos.harness`).

To add one (Redis restarted empty, a Sentinel failover), write its fault here and add a
line to :data:`SCENARIOS`. A fault may assert what the operator must see on the way (a
controller refusing to serve, and why) before it heals what it broke; a scenario whose
outcome is not "the money is exactly as the tables were told" (Redis lost acknowledged
steps) gives its own ``check`` instead of :func:`tests.chaos.checks.verify`. A different
Redis (replicas and Sentinels) needs a :class:`~tests.chaos.harness.Topology` field and a
branch in ``Rig.__init__``/``Rig.start``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from table_agent.table import RESTART_VOID_REASON
from tests.chaos.checks import verify
from tests.chaos.harness import ROUNDS, Fault, Rig, Topology, pause_briefly
from tests.chaos.journal import Journal

BEYOND_DEADLINES_S = 6.5
"""Longer than the controller's Redis socket timeout (5 s) and the agents' call deadline
(5 s): every call in flight fails, and the tables retry."""
LOST_ANSWER_ROUNDS = 5
"""Times answers are lost: each time a table whose request in flight was a read (a
settlement reads its round first) loses no write, but all three tables, five times, do."""
KILL_ATTEMPTS = 50
"""Tries to catch an agent between a lockout and its settlement."""


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
)
